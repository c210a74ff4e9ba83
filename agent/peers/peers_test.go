// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package peers

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func slice(port int32, ready map[string]*bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port)}}}
	for addr, r := range ready {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: r}})
	}
	return s
}

// The list follows the EndpointSlice: a node that joins appears, one that leaves goes, the
// node's own kube-apiserver and not-ready endpoints are never in it, the static URLs always.
func TestSourceFollowsTheSlice(t *testing.T) {
	own := netip.MustParseAddr("198.18.0.11")
	s := newSource(nil, Options{
		Static: []string{"https://198.18.9.9:443"},
		Local:  func() ([]netip.Addr, error) { return []netip.Addr{own}, nil },
		Log:    logr.Discard(),
	})
	if got, want := s.URLs(), []string{"https://198.18.9.9:443"}; !slices.Equal(got, want) {
		t.Fatalf("before the slice: %q, want %q", got, want)
	}

	// Init: the first node only (this one).
	s.update(slice(443, map[string]*bool{"198.18.0.11": nil}))
	if got, want := s.URLs(), []string{"https://198.18.9.9:443"}; !slices.Equal(got, want) {
		t.Errorf("first node only: %q, want %q", got, want)
	}
	// Two nodes join; one of them is not ready yet.
	s.update(slice(443, map[string]*bool{"198.18.0.11": nil, "198.18.0.12": ptr.To(true), "198.18.0.13": ptr.To(false)}))
	if got, want := s.URLs(), []string{"https://198.18.0.12:443", "https://198.18.9.9:443"}; !slices.Equal(got, want) {
		t.Errorf("after the joins: %q, want %q", got, want)
	}
	// The second node leaves, the third is ready.
	s.update(slice(443, map[string]*bool{"198.18.0.11": nil, "198.18.0.13": nil}))
	if got, want := s.URLs(), []string{"https://198.18.0.13:443", "https://198.18.9.9:443"}; !slices.Equal(got, want) {
		t.Errorf("after the leave: %q, want %q", got, want)
	}
}

func TestFromSlice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slice *discoveryv1.EndpointSlice
		want  []string
	}{
		{"IPv6", slice(6443, map[string]*bool{"fd00::2": nil}), []string{"https://[fd00::2]:6443"}},
		{"no port", &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"198.18.0.12"}}}}, nil},
		{"not an address", slice(443, map[string]*bool{"node-b": nil}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromSlice(tc.slice, nil); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
