// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// NIC gives the node namespaces their LAN interface in place of the harness's veth on its
// own bridge, e.g. a Neutron port plugged the way Nova plugs a VM (test/dataplane). The
// client namespace stays on the harness's bridge, where it reaches no node.
type NIC interface {
	// Plug creates the interface Interface in namespace ns for node index i (0-based),
	// with its address (the prefix length of Options.Subnet) and up, and returns the
	// address and the hardware address. The harness calls it once per node, in order.
	Plug(ctx context.Context, i int, ns string) (PluggedNIC, error)
	// Unplug releases what Plug took outside the namespace (bindings, host devices). The
	// harness calls it on Close for every node Plug was called for, before it removes the
	// namespaces, also when Plug failed.
	Unplug(ctx context.Context, i int, ns string) error
}

// PluggedNIC is what NIC.Plug made.
type PluggedNIC struct {
	Addr netip.Addr
	MAC  net.HardwareAddr
}

// plugNodes asks the NIC provider for every node's interface and records the addresses in
// eps (the nodes first, in order).
func (h *Harness) plugNodes(ctx context.Context, eps []endpoint) error {
	for i := range h.opts.Nodes {
		h.mu.Lock()
		h.plugged = i + 1
		h.mu.Unlock()
		nic, err := h.opts.NIC.Plug(ctx, i, eps[i].nsName)
		if err != nil {
			return fmt.Errorf("plugging %s: %w", eps[i].name, err)
		}
		if !h.opts.Subnet.Contains(nic.Addr) {
			return fmt.Errorf("plugging %s: address %s is outside the subnet %s", eps[i].name, nic.Addr, h.opts.Subnet)
		}
		eps[i].addr, eps[i].mac = nic.Addr, nic.MAC
	}
	return nil
}

// unplugNodes undoes plugNodes for the nodes that were plugged (or tried).
func (h *Harness) unplugNodes(ctx context.Context) error {
	h.mu.Lock()
	n, done := h.plugged, slices.Clone(h.unplugged)
	h.mu.Unlock()
	var errs []error
	for i := range n {
		if slices.Contains(done, i) {
			continue
		}
		if err := h.opts.NIC.Unplug(ctx, i, fmt.Sprintf("%s-node%d", h.id, i+1)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ClientIn returns a Client in the existing namespace ns, which the harness neither
// created nor removes: e.g. the external client of test/dataplane, whose only way to the
// nodes is a floating IP. Its LAN interface must be Interface; its prober's default
// target is the VIP, at the kube-apiservers' port. The returned function releases the namespace's handles.
func (h *Harness) ClientIn(ns string) (*Client, func(), error) {
	n, err := openNamespace(ns)
	if err != nil {
		return nil, nil, err
	}
	c := &Client{h: h, ns: n}
	if l, err := n.nl.LinkByName(Interface); err == nil {
		c.mac = l.Attrs().HardwareAddr
		if addrs, err := n.nl.AddrList(l, 0); err == nil && len(addrs) > 0 {
			c.addr, _ = netip.AddrFromSlice(addrs[0].IP.To4())
		}
	}
	return c, n.close, nil
}
