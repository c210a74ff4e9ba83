// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Interface is the name of the LAN interface in every node and in the client.
const Interface = "eth0"

// Node is one node namespace.
type Node struct {
	h    *Harness
	name string
	// index is the node's number for Options.NIC (0-based, in order of creation).
	index int
	ns    *namespace
	addr  netip.Addr
	mac   net.HardwareAddr

	// control plane; the options are fixed before any process starts
	kubeconfig    string
	etcdOpts      ProcessOptions
	apiserverOpts ProcessOptions
	cpMu          sync.Mutex
	etcd          *Process
	apiserver     *Process

	// routes are the configured routes of the LAN interface that LinkDown saw; the kernel
	// drops them with the link, LinkUp puts them back (as a VM's network configuration
	// would after a cable is plugged in again).
	routesMu sync.Mutex
	routes   []netlink.Route
}

// Name is "node1".."nodeN"; it is also the node name tests give the agents.
func (n *Node) Name() string { return n.name }

// String is the node's name.
func (n *Node) String() string { return n.name }

// Namespace is the name of the network namespace (for `ip netns exec`).
func (n *Node) Namespace() string { return n.ns.name }

// IP is the node's address on the LAN.
func (n *Node) IP() netip.Addr { return n.addr }

// MAC is the hardware address of the node's LAN interface.
func (n *Node) MAC() net.HardwareAddr { return n.mac }

// Interface is the name of the node's LAN interface.
func (n *Node) Interface() string { return Interface }

// Start starts a process inside the node's namespace. The harness stops it on Close.
func (n *Node) Start(_ context.Context, opts ProcessOptions) (*Process, error) {
	p, err := startProcess(n.ns.name, opts, n.h.dir, n.name+"-")
	if err != nil {
		return nil, err
	}
	n.h.track(p)
	return p, nil
}

// Run runs a command inside the namespace to completion and returns its combined output.
func (n *Node) Run(ctx context.Context, name string, args ...string) (string, error) {
	return runIn(ctx, n.ns.name, name, args...)
}

func runIn(ctx context.Context, nsName, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nsName, name}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), nsName, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func (n *Node) link() (netlink.Link, error) {
	l, err := n.ns.nl.LinkByName(Interface)
	if err != nil {
		return nil, fmt.Errorf("%s: link %s: %w", n.name, Interface, err)
	}
	return l, nil
}

// LinkDown sets the node's LAN interface down (inside the node), as a cut cable would.
func (n *Node) LinkDown(context.Context) error {
	l, err := n.link()
	if err != nil {
		return err
	}
	routes, err := n.ns.nl.RouteList(l, netlink.FAMILY_ALL) // both families: a dual-stack node has an IPv6 default route
	if err != nil {
		return fmt.Errorf("%s: routes: %w", n.name, err)
	}
	n.routesMu.Lock()
	n.routes = slices.DeleteFunc(routes, func(r netlink.Route) bool { return r.Protocol == unix.RTPROT_KERNEL })
	n.routesMu.Unlock()
	if err := n.ns.nl.LinkSetDown(l); err != nil {
		return fmt.Errorf("%s: link down: %w", n.name, err)
	}
	return nil
}

// LinkUp sets the node's LAN interface up again.
func (n *Node) LinkUp(context.Context) error {
	l, err := n.link()
	if err != nil {
		return err
	}
	if err := n.ns.nl.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s: link up: %w", n.name, err)
	}
	n.routesMu.Lock()
	defer n.routesMu.Unlock()
	for _, r := range n.routes {
		if err := n.ns.nl.RouteReplace(&r); err != nil {
			return fmt.Errorf("%s: restoring route %s: %w", n.name, r, err)
		}
	}
	n.routes = nil
	return nil
}

// AddAddress adds prefix (e.g. the VIP as /32) to the node's LAN interface by hand.
func (n *Node) AddAddress(_ context.Context, prefix netip.Prefix) error {
	l, err := n.link()
	if err != nil {
		return err
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: prefix.Addr().AsSlice(), Mask: net.CIDRMask(prefix.Bits(), prefix.Addr().BitLen())}}
	if err := n.ns.nl.AddrAdd(l, addr); err != nil {
		return fmt.Errorf("%s: adding %s: %w", n.name, prefix, err)
	}
	return nil
}

// RemoveAddress removes prefix from the node's LAN interface. A missing address is not
// an error.
func (n *Node) RemoveAddress(_ context.Context, prefix netip.Prefix) error {
	l, err := n.link()
	if err != nil {
		return err
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: prefix.Addr().AsSlice(), Mask: net.CIDRMask(prefix.Bits(), prefix.Addr().BitLen())}}
	if err := n.ns.nl.AddrDel(l, addr); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		return fmt.Errorf("%s: removing %s: %w", n.name, prefix, err)
	}
	return nil
}

// HasAddress reports whether ip is on any interface of the node.
func (n *Node) HasAddress(ip netip.Addr) (bool, error) {
	addrs, err := n.ns.nl.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return false, fmt.Errorf("%s: listing addresses: %w", n.name, err)
	}
	for _, a := range addrs {
		if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == ip {
			return true, nil
		}
	}
	return false, nil
}

// HeldVIPs returns the harness's VIPs that are on the node (one netlink dump), in the
// order of Harness.VIPs.
func (n *Node) HeldVIPs() ([]netip.Addr, error) {
	addrs, err := n.ns.nl.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("%s: listing addresses: %w", n.name, err)
	}
	var held []netip.Addr
	for _, vip := range n.h.VIPs() {
		for _, a := range addrs {
			if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == vip {
				held = append(held, vip)
				break
			}
		}
	}
	return held, nil
}

// IP6 is the node's IPv6 address on the LAN; invalid unless the harness has VIP6.
func (n *Node) IP6() netip.Addr { return n.h.ipv6For(n.addr) }

// DialContext opens a connection from inside the node's namespace.
func (n *Node) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return n.ns.DialContext(ctx, network, address)
}

// HTTPClient returns a client whose connections start in the node's namespace (no
// keep-alive). tr may carry TLS settings; it is modified.
func (n *Node) HTTPClient(timeout time.Duration, tr *http.Transport) *http.Client {
	return n.ns.httpClient(timeout, tr)
}

// GetOK GETs url with hc and fails unless the answer is 200 OK; the body is read to its end.
func GetOK(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// Listen opens a listener inside the node's namespace, e.g. a stand-in service on the VIP's
// port for tests without control plane. The caller closes it.
func (n *Node) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	var l net.Listener
	err := n.ns.do(func() error {
		var lc net.ListenConfig
		var err error
		l, err = lc.Listen(ctx, network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: listen %s %s: %w", n.name, network, address, err)
	}
	return l, nil
}
