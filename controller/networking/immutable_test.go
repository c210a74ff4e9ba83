// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking/networkingtest"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

func TestRecordedPortMustStillHoldTheVIP(t *testing.T) {
	status := &v1alpha1.ExposureStatus{NetworkID: "net", VIPAddress: "198.18.0.10", PortID: "p"}
	holds := []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.10"}}
	for _, tc := range []struct {
		name string
		port ports.Port
		want string // "" when kept
	}{
		{"unbound, holding the VIP", ports.Port{ID: "p", NetworkID: "net", FixedIPs: holds}, ""},
		{"bound to a server", ports.Port{ID: "p", NetworkID: "net", FixedIPs: holds, DeviceOwner: "compute:nova", DeviceID: "vm"}, "was bound to compute:nova vm"},
		{"re-addressed", ports.Port{ID: "p", NetworkID: "net", FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.11"}}}, "no longer holds the VIP 198.18.0.10"},
		{"in another network", ports.Port{ID: "p", NetworkID: "net-2", FixedIPs: holds}, "no longer holds the VIP 198.18.0.10 in network net"},
	} {
		err := checkRecordedPort(&tc.port, status)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !hasCode(err, gardencorev1beta1.ErrorInfraDependencies)):
			t.Errorf("%s: %v, want an infrastructure dependency saying %q", tc.name, err, tc.want)
		}
	}
}

// TestFloatingPoolByNameCannotChange: the pool named in floatingPoolName is resolved in
// Neutron (the fake resolves every name to "ext") and must be the floating IP's.
func TestFloatingPoolByNameCannotChange(t *testing.T) {
	svc := service(networkingtest.NewNeutron(), nil)
	status := &v1alpha1.ExposureStatus{VIPAddress: "198.18.0.10"}
	fip := &floatingips.FloatingIP{ID: "f", FloatingIP: "198.19.0.5", FloatingNetworkID: "ext"}
	if err := svc.checkFloatingPool(context.Background(), Spec{FloatingPoolName: "public"}, fip, status); err != nil {
		t.Errorf("the same pool: %v", err)
	}
	fip.FloatingNetworkID = "ext-old"
	err := svc.checkFloatingPool(context.Background(), Spec{FloatingPoolName: "public"}, fip, status)
	if err == nil || !strings.HasPrefix(err.Error(), "floatingPoolName is \"public (ext)\"") || !strings.Contains(err.Error(), "floating IP 198.19.0.5") {
		t.Errorf("another pool: %v, want a refusal naming floatingPoolName and the floating IP", err)
	}
}

// TestOwnerLookupFailureStopsTheClaim: when the live exposures cannot be listed, a port of
// another owner is neither taken over nor left: the claim fails and nothing is decided.
func TestOwnerLookupFailureStopsTheClaim(t *testing.T) {
	failing := NewService(networkingtest.NewNeutron(), Options{ExposureOwning: func(context.Context, string) (string, error) {
		return "", errors.New("the kube-apiserver is away")
	}})
	fd := &FrontDoor{Spec: Spec{NetworkID: "net", SubnetID: "sub"}, Mark: Mark{Identity: "c1", Owner: "uid-self", Shoot: "shoot-a"}}
	named := []ports.Port{vipPort("p", Mark{Identity: "c1", Owner: "uid-gone"}, time.Time{}, openstack.ShootTag("shoot-a"))}
	if err := failing.claimFrontDoor(context.Background(), fd, "uid-self", named, &v1alpha1.ExposureStatus{}); err == nil || fd.Mark.Owner != "uid-self" {
		t.Errorf("claim with a failing lookup: %v, owner %q", err, fd.Mark.Owner)
	}
}

// TestKeepRecordedFamilies: a family added to the spec after the VIP was recorded is
// dropped (the published door stays as it is); a recorded one stays, also when its subnet
// is gone from the spec, so that CheckImmutable refuses that move; before a VIP is
// recorded, every family is built.
func TestKeepRecordedFamilies(t *testing.T) {
	v6 := SubnetVIP{SubnetID: "sub-v6"}
	for _, tc := range []struct {
		name        string
		status      v1alpha1.ExposureStatus
		spec        []SubnetVIP
		want        []SubnetVIP
		dropped     []string
		refusedNext bool
	}{
		{"IPv6 added to a recorded IPv4 door", v1alpha1.ExposureStatus{VIPAddress: "198.18.0.10"}, []SubnetVIP{v6}, nil, []string{"sub-v6"}, false},
		{"IPv6 recorded and still configured", v1alpha1.ExposureStatus{VIPAddress: "198.18.0.10", OtherVIPs: []v1alpha1.FamilyVIP{{SubnetID: "sub-v6", Address: "fd00::10"}}}, []SubnetVIP{v6}, []SubnetVIP{v6}, nil, false},
		{"IPv6 recorded and gone from the spec", v1alpha1.ExposureStatus{VIPAddress: "198.18.0.10", OtherVIPs: []v1alpha1.FamilyVIP{{SubnetID: "sub-v6", Address: "fd00::10"}}}, nil, nil, nil, true},
		{"nothing recorded yet", v1alpha1.ExposureStatus{}, []SubnetVIP{v6}, []SubnetVIP{v6}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{NetworkID: "net", SubnetID: "sub", OtherSubnets: slices.Clone(tc.spec)}
			status := tc.status
			status.NetworkID, status.SubnetID = "net", "sub"
			dropped := KeepRecordedFamilies(&spec, &status)
			if !slices.Equal(dropped, tc.dropped) || !slices.Equal(spec.OtherSubnets, tc.want) {
				t.Errorf("dropped %v leaving %v, want %v leaving %v", dropped, spec.OtherSubnets, tc.dropped, tc.want)
			}
			err := CheckImmutable(&spec, &status)
			if (err != nil) != tc.refusedNext {
				t.Errorf("CheckImmutable after it: %v, want refused %v", err, tc.refusedNext)
			}
			// The subnets come from the shoot and its Infrastructure: the sentence names them,
			// not subnetIDs, a field the controller refuses.
			if err != nil && (strings.Contains(err.Error(), "subnetIDs") || !strings.Contains(err.Error(), "restore the shoot's networking.ipFamilies")) {
				t.Errorf("CheckImmutable after it: %q, want it to name the shoot's ipFamilies, not subnetIDs", err)
			}
		})
	}
}
