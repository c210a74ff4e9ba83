// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// errNodePortMissing is returned when a control-plane node has no Neutron port yet.
var errNodePortMissing = errors.New("control-plane node without Neutron port")

// pairSync is the desired state of the VIP pairs in one network.
type pairSync struct {
	networkID string
	vip       string
	// vipPortID is never touched.
	vipPortID string
	nodes     []controlPlaneNode
	// retain are ports that keep the VIP pair they have, e.g. of a node that left the
	// control plane while its agent may still hold the VIP.
	retain []string
}

// syncPairs lists the ports of the network once, adds the VIP pair to the ports of the
// control-plane nodes and removes it from every other port of the network (never from the
// VIP port; other pairs stay). The VIP is the fixed IP of the VIP port, so a VIP pair on
// another port of the network can only come from this extension. It returns the node
// ports; a node without a port yields errNodePortMissing after the others are done.
// A node port with port security disabled needs no pair (Neutron refuses one with
// AddressPairAndPortSecurityRequired): it is logged and reported with
// PortSecurityDisabled, and the exposure goes on.
func syncPairs(ctx context.Context, log logr.Logger, network *openstack.Network, s pairSync) ([]v1alpha1.NodePort, error) {
	list, err := network.ListPorts(ctx, openstack.PortFilter{NetworkID: s.networkID})
	if err != nil {
		return nil, err
	}
	byIP := map[string]*ports.Port{}
	for i := range list {
		for _, ip := range list[i].FixedIPs {
			byIP[ip.IPAddress] = &list[i]
		}
	}
	var (
		nodePorts []v1alpha1.NodePort
		missing   []string
		keep      = map[string]bool{s.vipPortID: true}
		noSec     = map[string]bool{}
		mu        sync.Mutex
		errs      []error
		wg        sync.WaitGroup
	)
	for _, id := range s.retain {
		keep[id] = true
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for _, n := range s.nodes {
		port := byIP[n.IP]
		if port == nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", n.Name, n.IP))
			continue
		}
		keep[port.ID] = true
		nodePorts = append(nodePorts, v1alpha1.NodePort{NodeName: n.Name, PortID: port.ID})
		// Each port is updated on its own; the updates of different ports do not conflict.
		wg.Go(func() {
			updated, err := network.EnsurePair(ctx, port, s.vip)
			if openstack.IsPortSecurityDisabled(err) {
				log.Info("The node port has port security disabled: it passes the VIP without an allowed address pair and is left alone", "node", n.Name, "port", port.ID)
				mu.Lock()
				noSec[port.ID] = true
				mu.Unlock()
				return
			}
			if err != nil {
				fail(err)
				return
			}
			if updated {
				log.Info("Added the VIP to the allowed address pairs of a node port", "node", n.Name, "port", port.ID)
			}
		})
	}
	for i := range list {
		p := &list[i]
		if keep[p.ID] || !openstack.HasPair(p, s.vip) {
			continue
		}
		wg.Go(func() {
			if _, err := network.RemovePairFromPort(ctx, p, s.vip); err != nil {
				fail(err)
				return
			}
			log.Info("Removed the VIP from the allowed address pairs of a port that is no control-plane node's", "port", p.ID)
		})
	}
	wg.Wait()
	for i := range nodePorts {
		nodePorts[i].PortSecurityDisabled = noSec[nodePorts[i].PortID]
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%w: no port in network %s for %v yet; will retry", errNodePortMissing, s.networkID, missing))
	}
	return nodePorts, errors.Join(errs...)
}
