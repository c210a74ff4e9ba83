// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
)

// Client is the client namespace: the place from which tests reach the VIP.
type Client struct {
	h    *Harness
	ns   *namespace
	addr netip.Addr
	mac  net.HardwareAddr
}

// Namespace is the name of the client's network namespace.
func (c *Client) Namespace() string { return c.ns.name }

// IP is the client's address.
func (c *Client) IP() netip.Addr { return c.addr }

// MAC is the client's hardware address.
func (c *Client) MAC() net.HardwareAddr { return c.mac }

// Start starts a process inside the client's namespace. The harness stops it on Close.
func (c *Client) Start(_ context.Context, opts ProcessOptions) (*Process, error) {
	p, err := startProcess(c.ns.name, opts, c.h.dir, "client-")
	if err != nil {
		return nil, err
	}
	c.h.track(p)
	return p, nil
}

// Run runs a command inside the client namespace to completion.
func (c *Client) Run(ctx context.Context, name string, args ...string) (string, error) {
	return runIn(ctx, c.ns.name, name, args...)
}

// DialContext opens a connection from inside the client's namespace.
func (c *Client) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return c.ns.DialContext(ctx, network, address)
}

// HTTPClient returns a client whose connections start in the client namespace.
func (c *Client) HTTPClient(timeout time.Duration, tr *http.Transport) *http.Client {
	return c.ns.httpClient(timeout, tr)
}

// Neighbor is the client's neighbour entry for an address.
type Neighbor struct {
	MAC   net.HardwareAddr
	State string // as `ip neigh` prints it: REACHABLE, STALE, ...
}

// Neighbor returns the client's neighbour entry for ip on its LAN interface; ok is false
// when there is none or it has no hardware address (INCOMPLETE, FAILED).
func (c *Client) Neighbor(ip netip.Addr) (Neighbor, bool, error) {
	l, err := c.ns.nl.LinkByName(Interface)
	if err != nil {
		return Neighbor{}, false, fmt.Errorf("client: link %s: %w", Interface, err)
	}
	family := netlink.FAMILY_V4
	if ip.Is6() {
		family = netlink.FAMILY_V6
	}
	neighs, err := c.ns.nl.NeighList(l.Attrs().Index, family)
	if err != nil {
		return Neighbor{}, false, fmt.Errorf("client: neighbours: %w", err)
	}
	for _, n := range neighs {
		got, ok := netip.AddrFromSlice(n.IP)
		if !ok || got.Unmap() != ip {
			continue
		}
		if len(n.HardwareAddr) == 0 || n.State&(netlink.NUD_INCOMPLETE|netlink.NUD_FAILED) != 0 {
			return Neighbor{State: neighState(n.State)}, false, nil
		}
		return Neighbor{MAC: n.HardwareAddr, State: neighState(n.State)}, true, nil
	}
	return Neighbor{}, false, nil
}

// WaitNeighbor polls until the client's entry for ip has mac.
func (c *Client) WaitNeighbor(ctx context.Context, ip netip.Addr, mac net.HardwareAddr) error {
	var last Neighbor
	for {
		n, ok, err := c.Neighbor(ip)
		if err != nil {
			return err
		}
		last = n
		if ok && n.MAC.String() == mac.String() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("client neighbour %s is %s %s, want %s: %w", ip, last.MAC, last.State, mac, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// neighState names s as `ip neigh` does: by the first of these states set in it.
func neighState(s int) string {
	for _, st := range []struct {
		flag int
		name string
	}{
		{netlink.NUD_REACHABLE, "REACHABLE"},
		{netlink.NUD_STALE, "STALE"},
		{netlink.NUD_DELAY, "DELAY"},
		{netlink.NUD_PROBE, "PROBE"},
		{netlink.NUD_FAILED, "FAILED"},
		{netlink.NUD_INCOMPLETE, "INCOMPLETE"},
		{netlink.NUD_PERMANENT, "PERMANENT"},
		{netlink.NUD_NOARP, "NOARP"},
	} {
		if s&st.flag != 0 {
			return st.name
		}
	}
	return fmt.Sprintf("0x%x", s)
}
