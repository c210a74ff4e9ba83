// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package vip puts the virtual IP on a network interface and takes it off again, through
// netlink.
//
// The address is a host address (/32 or /128) that is never used as a source address
// (preferred lifetime 0) and that carries a short kernel lifetime (valid_lft): unless the
// holder refreshes it, the kernel removes it by itself. IPv6 addresses skip duplicate
// address detection, so that they are usable at once.
package vip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Address is the VIP on one interface.
type Address struct {
	name     string
	link     netlink.Link
	vip      netip.Addr
	lifetime int // seconds
	// h keeps one netlink socket for all requests, instead of a fresh socket per request.
	h *netlink.Handle
}

// netlinkTimeout bounds one netlink request; the kernel answers in microseconds unless
// rtnl_lock is held for long.
const netlinkTimeout = time.Second

// New returns the VIP on the named interface. lifetime is the kernel valid_lft and must be
// a whole number of seconds, at least one.
func New(iface string, vip netip.Addr, lifetime time.Duration) (*Address, error) {
	if !vip.IsValid() {
		return nil, errors.New("the VIP is not a valid IP address")
	}
	if lifetime < time.Second || lifetime%time.Second != 0 {
		return nil, fmt.Errorf("the VIP lifetime must be a whole number of seconds, at least 1s, got %s", lifetime)
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening a netlink socket: %w", err)
	}
	if err := h.SetSocketTimeout(netlinkTimeout); err != nil {
		h.Close()
		return nil, fmt.Errorf("setting the netlink socket's timeout: %w", err)
	}
	link, err := h.LinkByName(iface)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	return &Address{name: iface, link: link, vip: vip.Unmap(), lifetime: int(lifetime / time.Second), h: h}, nil
}

// Close releases the netlink socket.
func (a *Address) Close() { a.h.Close() }

// Interface is the name of the interface.
func (a *Address) Interface() string { return a.name }

// relink looks the interface up again by name after an error that says it is gone: an
// interface that was deleted and created again has a new index.
func (a *Address) relink(err error) {
	if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EINVAL) {
		if link, lerr := a.h.LinkByName(a.name); lerr == nil {
			a.link = link
		}
	}
}

func (a *Address) netlinkAddr() *netlink.Addr {
	bits := 32
	if a.vip.Is6() {
		bits = 128
	}
	addr := &netlink.Addr{
		IPNet:       &net.IPNet{IP: a.vip.AsSlice(), Mask: net.CIDRMask(bits, bits)},
		ValidLft:    a.lifetime,
		PreferedLft: 0,
	}
	if a.vip.Is6() {
		addr.Flags = unix.IFA_F_NODAD
	}
	return addr
}

// Present reports whether the VIP is on the interface.
func (a *Address) Present() (bool, error) {
	family := netlink.FAMILY_V4
	if a.vip.Is6() {
		family = netlink.FAMILY_V6
	}
	addrs, err := addrList(a.h, a.link, family)
	if err != nil {
		a.relink(err)
		return false, fmt.Errorf("listing the addresses of %s: %w", a.Interface(), err)
	}
	for _, addr := range addrs {
		if ip, ok := netip.AddrFromSlice(addr.IP); ok && ip.Unmap() == a.vip {
			return true, nil
		}
	}
	return false, nil
}

// Ensure adds the VIP, or resets its lifetime if it is there, and reports whether it was
// missing. It never lists the host's addresses (thousands on a node whose kube-proxy puts
// every ClusterIP on kube-ipvs0): an exclusive add tells whether the address was there,
// and only then a replace refreshes its lifetime.
func (a *Address) Ensure() (bool, error) {
	addr := a.netlinkAddr()
	err := a.h.AddrAdd(a.link, addr)
	if errors.Is(err, unix.EEXIST) {
		err = a.h.AddrReplace(a.link, addr)
		if err == nil {
			return false, nil
		}
	}
	if err != nil {
		a.relink(err)
		return false, fmt.Errorf("adding %s to %s: %w", a.vip, a.Interface(), err)
	}
	return true, nil
}

// Refresh resets the VIP's lifetime if it is there and reports whether it was; it never adds
// it. A replace would create it, so it lists the family's addresses first.
func (a *Address) Refresh() (bool, error) {
	if present, err := a.Present(); err != nil || !present {
		return false, err
	}
	if err := a.h.AddrReplace(a.link, a.netlinkAddr()); err != nil {
		a.relink(err)
		return false, fmt.Errorf("refreshing %s on %s: %w", a.vip, a.Interface(), err)
	}
	return true, nil
}

// Remove removes the VIP and reports whether it was there.
func (a *Address) Remove() (bool, error) {
	err := a.h.AddrDel(a.link, a.netlinkAddr())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EADDRNOTAVAIL), errors.Is(err, unix.ESRCH), errors.Is(err, unix.ENOENT):
		return false, nil
	default:
		a.relink(err)
		return false, fmt.Errorf("removing %s from %s: %w", a.vip, a.Interface(), err)
	}
}

// LinkUp reports whether the interface is up with a carrier.
func (a *Address) LinkUp() (bool, error) {
	link, err := a.h.LinkByName(a.name)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", a.Interface(), err)
	}
	return linkUsable(link.Attrs()), nil
}

func linkUsable(attrs *netlink.LinkAttrs) bool {
	return attrs.Flags&net.FlagUp != 0 &&
		(attrs.OperState == netlink.OperUp || attrs.OperState == netlink.OperUnknown)
}

// DetectInterface picks the interface for the VIP: the one with an address whose subnet
// contains the VIP, else the one that carries the default route of the VIP's family.
func DetectInterface(vip netip.Addr) (string, error) {
	vip = vip.Unmap()
	links, err := netlink.LinkList()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return "", fmt.Errorf("listing interfaces: %w", err)
	}
	family := netlink.FAMILY_V4
	if vip.Is6() {
		family = netlink.FAMILY_V6
	}
	for _, link := range links {
		addrs, err := addrList(nil, link, family)
		if err != nil {
			continue
		}
		for _, addr := range addrs {
			if addr.IPNet == nil {
				continue
			}
			prefix, ok := netipPrefix(addr.IPNet)
			if ok && prefix.Bits() < prefix.Addr().BitLen() && prefix.Contains(vip) {
				return link.Attrs().Name, nil
			}
		}
	}
	routes, err := netlink.RouteList(nil, family)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return "", fmt.Errorf("listing routes: %w", err)
	}
	for _, r := range routes {
		if (r.Dst == nil || isDefault(r.Dst)) && r.LinkIndex > 0 {
			link, err := netlink.LinkByIndex(r.LinkIndex)
			if err == nil {
				return link.Attrs().Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface has a subnet containing %s and there is no default route; set the interface explicitly", vip)
}

// addrList lists addresses, retrying a dump that the kernel interrupted because the
// addresses changed meanwhile (busy hosts: pods come and go); after a few tries it takes
// the last, possibly incomplete, answer.
func addrList(h *netlink.Handle, link netlink.Link, family int) ([]netlink.Addr, error) {
	if h == nil {
		h = &netlink.Handle{} // a fresh socket per request
	}
	var addrs []netlink.Addr
	var err error
	for range 3 {
		if addrs, err = h.AddrList(link, family); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return addrs, err
		}
	}
	return addrs, nil
}

func netipPrefix(n *net.IPNet) (netip.Prefix, bool) {
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones), true
}

func isDefault(n *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	return ones == 0
}
