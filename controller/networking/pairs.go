// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// ErrNodePortMissing is returned when a control-plane node has no Neutron port yet.
var ErrNodePortMissing = errors.New("control-plane node without Neutron port")

// Pairs is the desired state of the VIP pairs in one s.neutron.
type Pairs struct {
	NetworkID string
	VIP       string
	// OtherVIPs are the VIPs of the other IP families: each node port gets a pair for
	// every VIP (the node port holds an address of each family).
	OtherVIPs []string
	// VIPPortID is never touched.
	VIPPortID string
	Nodes     []Node
	// Managed are the ports the extension put the pair on (status.nodePorts): only they
	// lose it when they are no control-plane node's port any more.
	Managed []string
	// Retain are ports that keep the VIP pair they have, e.g. of a node that left the
	// control plane while its agent may still hold the VIP.
	Retain []string
}

func (p *Pairs) vips() []string {
	return append([]string{p.VIP}, p.OtherVIPs...)
}

// Node is a control-plane node: its name and the addresses its port holds (a dual-stack
// node's port holds one of each family).
type Node struct {
	Name     string
	IP       string
	OtherIPs []string
}

// portIn finds the node's port by any of its addresses.
func (n Node) portIn(byIP map[string]ports.Port) (ports.Port, bool) {
	for _, ip := range append([]string{n.IP}, n.OtherIPs...) {
		if p, ok := byIP[ip]; ok {
			return p, true
		}
	}
	return ports.Port{}, false
}

// ReconcilePairs adds the VIP pair to the ports of the control-plane nodes and removes it from
// the managed ports that are no node's port any more and not retained. Ports the extension
// never managed keep a VIP pair someone put there, and a pair with another MAC is never the
// extension's (openstack.HasPair). It reads the node ports in one list filtered by their
// addresses, and a managed port outside it by ID, so that a steady verification reads only
// the node ports. It returns the node ports that carry the pair (a port whose update failed
// is not among them); a node without a port yields ErrNodePortMissing after the others are
// done. A node port with port security disabled needs no pair (Neutron refuses one with
// AddressPairAndPortSecurityRequired): it is logged and reported with
// PortSecurityDisabled, and the exposure goes on.
func (s *Service) ReconcilePairs(ctx context.Context, want Pairs) ([]v1alpha1.NodePort, error) {
	ips := make([]string, 0, len(want.Nodes))
	for _, n := range want.Nodes {
		ips = append(ips, n.IP)
		ips = append(ips, n.OtherIPs...)
	}
	var list []ports.Port
	if len(ips) > 0 {
		// Without addresses the filter would list every port of the network.
		var err error
		if list, err = s.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: want.NetworkID, FixedIPs: ips}); err != nil {
			return nil, err
		}
	}
	byIP := map[string]ports.Port{}
	for _, p := range list {
		for _, ip := range p.FixedIPs {
			byIP[ip.IPAddress] = p
		}
	}
	var (
		nodePorts []v1alpha1.NodePort
		missing   []string
		keep      = map[string]bool{want.VIPPortID: true}
		noSec     = map[string]bool{}
		failed    = map[string]bool{}
		mu        sync.Mutex
		errs      []error
		wg        sync.WaitGroup
	)
	for _, id := range want.Retain {
		keep[id] = true
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for _, n := range want.Nodes {
		port, ok := n.portIn(byIP)
		if !ok {
			missing = append(missing, fmt.Sprintf("%s (%s)", n.Name, n.IP))
			continue
		}
		keep[port.ID] = true
		nodePorts = append(nodePorts, v1alpha1.NodePort{NodeName: n.Name, PortID: port.ID})
	}
	stale, err := s.staleManagedPorts(ctx, want, keep)
	if err != nil {
		return nil, err
	}
	// Each port is updated on its own copy; the updates of different ports do not conflict.
	for _, n := range want.Nodes {
		port, ok := n.portIn(byIP)
		if !ok {
			continue
		}
		wg.Go(func() {
			var (
				updated bool
				err     error
			)
			for _, vip := range want.vips() {
				var u bool
				if u, err = s.neutron.EnsurePair(ctx, &port, vip); err != nil {
					break
				}
				updated = updated || u
			}
			if openstack.IsPortSecurityDisabled(err) {
				s.log.Info("The node port has port security disabled: it passes the VIP without an allowed address pair and is left alone", "node", n.Name, "port", port.ID)
				mu.Lock()
				noSec[port.ID] = true
				mu.Unlock()
				return
			}
			if err != nil {
				fail(err)
				mu.Lock()
				failed[port.ID] = true
				mu.Unlock()
				return
			}
			if updated {
				s.log.Info("Added the VIP to the allowed address pairs of a node port", "node", n.Name, "port", port.ID)
			}
		})
	}
	for _, p := range stale {
		wg.Go(func() {
			for _, vip := range want.vips() {
				if _, err := s.neutron.RemovePairFromPort(ctx, &p, vip); err != nil {
					fail(err)
					return
				}
			}
			s.log.Info("Removed the VIP from the allowed address pairs of a port that is no control-plane node's", "port", p.ID)
		})
	}
	wg.Wait()
	nodePorts = slices.DeleteFunc(nodePorts, func(np v1alpha1.NodePort) bool { return failed[np.PortID] })
	for i := range nodePorts {
		nodePorts[i].PortSecurityDisabled = noSec[nodePorts[i].PortID]
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%w: no port in network %s for %v yet; will retry", ErrNodePortMissing, want.NetworkID, missing))
	}
	return nodePorts, errors.Join(errs...)
}

// staleManagedPorts reads the managed ports that are not kept and still carry the VIP pair;
// a port that is gone needs nothing.
func (s *Service) staleManagedPorts(ctx context.Context, want Pairs, keep map[string]bool) ([]ports.Port, error) {
	var stale []ports.Port
	for _, id := range want.Managed {
		if keep[id] {
			continue
		}
		p, err := s.neutron.GetPort(ctx, id)
		if openstack.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(want.vips(), func(vip string) bool { return openstack.HasPair(p, vip) }) {
			stale = append(stale, *p)
		}
	}
	return stale, nil
}
