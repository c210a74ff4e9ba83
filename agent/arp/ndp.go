// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
)

// ndpConn sends ICMPv6 on one interface.
type ndpConn struct {
	pc  *ipv6.PacketConn
	raw *icmp.PacketConn
}

func (c *ndpConn) Close() error { return c.raw.Close() }

var allNodes = net.ParseIP("ff02::1")

func (a *Announcer) sendNA(context.Context) (int, error) {
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
	body := make([]byte, 4+16+8)
	binary.BigEndian.PutUint32(body[0:4], 1<<29) // O (override); not solicited, not a router
	t := target.As16()
	copy(body[4:20], t[:])
	body[20], body[21] = 2, 1 // option: target link-layer address, length 1 (8 bytes)
	copy(body[22:28], mac)
	m := icmp.Message{Type: ipv6.ICMPTypeNeighborAdvertisement, Code: 0, Body: &icmp.RawBody{Data: body}}
	return m.Marshal(nil)
}
