// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package peers follows the cluster's kube-apiservers at run time through the `kubernetes`
// EndpointSlice in `default`. Every kube-apiserver writes its own advertise address and
// secure port there and the others remove it when it stops renewing (the lease endpoint
// reconciler), so the list holds the current control plane: nodes that joined after
// gardenadm init, and not nodes that left. The agent reads it while its own
// kube-apiserver is up and uses the last list it saw once that one died.
package peers

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

const (
	// Namespace and Name name the EndpointSlice of the `kubernetes` Service, which the
	// kube-apiservers maintain themselves.
	Namespace = metav1.NamespaceDefault
	Name      = "kubernetes"
	// portName is the name of the kube-apiservers' port in that EndpointSlice.
	portName = "https"
)

// Source is the current list of the other kube-apiservers' URLs.
type Source struct {
	lw     cache.ListerWatcher
	static []string
	local  func() ([]netip.Addr, error)
	log    logr.Logger

	mu   sync.Mutex
	urls []string
}

// Options configure a Source.
type Options struct {
	// Static URLs are always part of the list (--peer-apiserver-urls).
	Static []string
	// Local returns this host's addresses: the entry of the node's own kube-apiserver is
	// left out (it is the one that died when the list is needed). Nil reads the host's
	// interfaces.
	Local func() ([]netip.Addr, error)
	// Log receives a line per change of the list.
	Log logr.Logger
}

// New returns a Source that reads the EndpointSlice through cfg (the local kube-apiserver).
func New(cfg *rest.Config, opts Options) (*Source, error) {
	scheme := runtime.NewScheme()
	if err := discoveryv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &discoveryv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the EndpointSlice client: %w", err)
	}
	// By name: the agent's Role allows this one EndpointSlice, which RBAC matches on a list
	// or watch only through the metadata.name field selector.
	lw := cache.NewListWatchFromClient(client, "endpointslices", Namespace, fields.OneTermEqualSelector("metadata.name", Name))
	return newSource(lw, opts), nil
}

func newSource(lw cache.ListerWatcher, opts Options) *Source {
	local := opts.Local
	if local == nil {
		local = hostAddresses
	}
	static := slices.Clone(opts.Static)
	slices.Sort(static)
	return &Source{lw: lw, static: slices.Compact(static), local: local, log: opts.Log, urls: slices.Clone(static)}
}

// URLs returns the other kube-apiservers' URLs: the static ones and those of the last
// EndpointSlice seen, without this host's, sorted.
func (s *Source) URLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.urls)
}

// Run follows the EndpointSlice until ctx is done. While the local kube-apiserver is
// unreachable the informer retries and the last list stays.
func (s *Source) Run(ctx context.Context) {
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: s.lw,
		ObjectType:    &discoveryv1.EndpointSlice{},
		// A resync would only repeat the last list; the watch carries every change.
		ResyncPeriod: 0,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.update(obj) },
			UpdateFunc: func(_, obj any) { s.update(obj) },
			// A deleted slice is re-created by the kube-apiservers within their
			// reconcile interval; until then the last list is the best one there is.
		},
	})
	informer.RunWithContext(ctx)
}

func (s *Source) update(obj any) {
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	local, err := s.local()
	if err != nil {
		s.log.Error(err, "Reading this host's addresses; keeping the kube-apiservers' list as it was")
		return
	}
	urls := append(slices.Clone(s.static), fromSlice(slice, local)...)
	slices.Sort(urls)
	urls = slices.Compact(urls)
	s.mu.Lock()
	changed := !slices.Equal(urls, s.urls)
	s.urls = urls
	s.mu.Unlock()
	if changed {
		s.log.Info("The other kube-apiservers changed", "urls", urls)
	}
}

// fromSlice returns the URLs of the ready endpoints of the slice, but those at one of the
// local addresses.
func fromSlice(slice *discoveryv1.EndpointSlice, local []netip.Addr) []string {
	var port int32
	for _, p := range slice.Ports {
		if p.Port != nil && (p.Name == nil || *p.Name == portName) {
			port = *p.Port
			break
		}
	}
	if port <= 0 || port > 65535 {
		return nil
	}
	var out []string
	for _, ep := range slice.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		for _, a := range ep.Addresses {
			addr, err := netip.ParseAddr(a)
			if err != nil || slices.Contains(local, addr.Unmap()) {
				continue
			}
			out = append(out, "https://"+netip.AddrPortFrom(addr, uint16(port)).String())
		}
	}
	return out
}

// hostAddresses are the addresses of this host's interfaces (the agent runs in the host
// network).
func hostAddresses() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing the interface addresses: %w", err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out, nil
}
