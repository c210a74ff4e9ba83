// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// ndpConn sends ICMPv6 on one interface.
type ndpConn struct {
	pc  *ipv6.PacketConn
	raw *icmp.PacketConn
}

func (c *ndpConn) Close() error { return c.raw.Close() }

var allNodes = net.ParseIP("ff02::1")

func (a *Announcer) sendNA(ctx context.Context) (int, error) {
	if a.ndp == nil {
		if err := a.refreshInterface(); err != nil {
			return 0, err
		}
		raw, err := icmp.ListenPacket("ip6:ipv6-icmp", "::")
		if err != nil {
			return 0, fmt.Errorf("opening an ICMPv6 socket: %w", err)
		}
		pc := raw.IPv6PacketConn()
		// The agent only sends: block every ICMPv6 type from being queued on the socket.
		var block ipv6.ICMPFilter
		block.SetAll(true)
		if err := pc.SetICMPFilter(&block); err != nil {
			_ = raw.Close()
			return 0, fmt.Errorf("filtering the ICMPv6 socket: %w", err)
		}
		if err := pc.SetMulticastHopLimit(255); err != nil {
			_ = raw.Close()
			return 0, fmt.Errorf("setting the hop limit: %w", err)
		}
		if err := pc.SetMulticastInterface(a.ifi); err != nil {
			_ = raw.Close()
			return 0, fmt.Errorf("selecting %s for multicast: %w", a.ifi.Name, err)
		}
		a.ndp = &ndpConn{pc: pc, raw: raw}
	}
	msg, err := UnsolicitedNA(a.ifi.HardwareAddr, a.vip)
	if err != nil {
		return 0, err
	}
	if err := termOver(ctx); err != nil {
		return 0, err
	}
	cm := &ipv6.ControlMessage{HopLimit: 255, IfIndex: a.ifi.Index}
	if _, err := a.ndp.pc.WriteTo(msg, cm, &net.IPAddr{IP: allNodes, Zone: a.ifi.Name}); err != nil {
		_ = a.ndp.Close()
		a.ndp = nil
		return 0, fmt.Errorf("sending a neighbour advertisement on %s: %w", a.ifi.Name, err)
	}
	return 1, nil
}

// UnsolicitedNA returns an ICMPv6 neighbour advertisement (RFC 4861 §4.4) for target,
// with the override flag and the target link-layer address option. The kernel fills in
// the checksum.
func UnsolicitedNA(mac net.HardwareAddr, target netip.Addr) ([]byte, error) {
	if !target.Is6() || target.Is4In6() {
		return nil, fmt.Errorf("%s is not an IPv6 address", target)
	}
	b, err := ndp.MarshalMessage(&ndp.NeighborAdvertisement{
		Override: true, TargetAddress: target,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}},
	})
	if err != nil {
		return nil, fmt.Errorf("building the neighbour advertisement: %w", err)
	}
	return b, nil
}

// ndpProbe asks for an IPv6 VIP as address resolution does, with a neighbour
// solicitation to the VIP's solicited-node multicast address from this node's link-local
// address (Neutron's port security allows it), and reads every neighbour advertisement for
// the VIP from another host: the holder's answer, or its announcement. A holder's kernel
// answers a multicast solicitation with the target link-layer address option, which names
// its MAC.
type ndpProbe struct {
	conn         *net.IPConn
	raw          syscall.RawConn
	pc           *ipv6.PacketConn
	ifi          *net.Interface
	vip, self    netip.Addr
	solicitation []byte
	dst          *net.IPAddr
	buf          []byte
	repliesOnly  bool // as arpProbe's
}

func openNDPProbe(iface string, vip netip.Addr) (*ndpProbe, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	self, err := linkLocal(ifi)
	if err != nil {
		return nil, err
	}
	group, err := ndp.SolicitedNodeMulticast(vip)
	if err != nil {
		return nil, fmt.Errorf("the solicited-node address of %s: %w", vip, err)
	}
	solicitation, err := ndp.MarshalMessage(&ndp.NeighborSolicitation{
		TargetAddress: vip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}},
	})
	if err != nil {
		return nil, fmt.Errorf("building the neighbour solicitation: %w", err)
	}
	// Bound to the link-local address, the socket sends from it and receives on this
	// interface only.
	c, err := net.ListenPacket("ip6:ipv6-icmp", self.WithZone(ifi.Name).String())
	if err != nil {
		return nil, fmt.Errorf("opening an ICMPv6 socket on %s: %w", ifi.Name, err)
	}
	conn := c.(*net.IPConn)
	p := &ndpProbe{
		conn: conn, pc: ipv6.NewPacketConn(conn), ifi: ifi, vip: vip, self: self, solicitation: solicitation,
		dst: &net.IPAddr{IP: group.AsSlice(), Zone: ifi.Name}, buf: make([]byte, 1500),
	}
	// Only neighbour advertisements are queued.
	var filter ipv6.ICMPFilter
	filter.SetAll(true)
	filter.Accept(ipv6.ICMPTypeNeighborAdvertisement)
	if p.raw, err = conn.SyscallConn(); err == nil {
		err = p.pc.SetICMPFilter(&filter)
	}
	if err == nil {
		err = p.pc.SetMulticastHopLimit(ndp.HopLimit)
	}
	if err == nil {
		err = p.pc.SetMulticastInterface(ifi)
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("setting up the ICMPv6 socket on %s: %w", ifi.Name, err)
	}
	return p, nil
}

func (p *ndpProbe) send() error {
	if _, err := p.pc.WriteTo(p.solicitation, nil, p.dst); err != nil {
		return fmt.Errorf("sending the neighbour solicitation on %s: %w", p.ifi.Name, err)
	}
	return nil
}

func (p *ndpProbe) drain() ([]string, error) {
	var holders []string
	for {
		n, from, ok, err := recvQueued(p.raw, p.buf)
		if err != nil || !ok {
			return holders, err
		}
		m, err := ndp.ParseMessage(p.buf[:n])
		na, isNA := m.(*ndp.NeighborAdvertisement)
		if err != nil || !isNA || na.TargetAddress != p.vip || (p.repliesOnly && !na.Solicited) {
			continue // with repliesOnly, an unsolicited advertisement is an announcement
		}
		sender := ""
		if sa, ok := from.(*unix.SockaddrInet6); ok {
			if netip.AddrFrom16(sa.Addr) == p.self {
				continue // this node's own announcement, looped back
			}
			sender = netip.AddrFrom16(sa.Addr).String()
		}
		for _, o := range na.Options {
			if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target {
				sender = lla.Addr.String()
				if bytes.Equal(lla.Addr, p.ifi.HardwareAddr) {
					sender = ""
				}
			}
		}
		if sender != "" {
			holders = append(holders, sender)
		}
	}
}

func (p *ndpProbe) Close() error { return p.conn.Close() }

// linkLocal is the interface's IPv6 link-local address.
func linkLocal(ifi *net.Interface) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addresses of %s: %w", ifi.Name, err)
	}
	for _, a := range addrs {
		if prefix, err := netip.ParsePrefix(a.String()); err == nil && prefix.Addr().Is6() && prefix.Addr().IsLinkLocalUnicast() {
			return prefix.Addr(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv6 link-local address to probe the VIP from", ifi.Name)
}
