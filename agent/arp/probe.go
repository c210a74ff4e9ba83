// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// arpProbe asks for an IPv4 VIP with ARP requests, sent from this node's own address (not
// from 0.0.0.0: Neutron's ARP anti-spoofing drops a sender address that is not the
// port's), and reads every ARP packet whose sender address is the VIP from another MAC: a
// reply, or another host's announcement.
type arpProbe struct {
	conn    *packet.Conn
	raw     syscall.RawConn
	ifi     *net.Interface
	vip     netip.Addr
	sender  netip.Addr // this node's address, the requests' sender
	request []byte
	buf     []byte
	// repliesOnly: only replies to this node's own requests count, not announcements
	// (openReplyProbe).
	repliesOnly bool
}

func openARPProbe(iface string, vip netip.Addr) (*arpProbe, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	sender, err := senderAddress(ifi, vip)
	if err != nil {
		return nil, err
	}
	request, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, sender, ethernet.Broadcast, vip)
	if err != nil {
		return nil, fmt.Errorf("building the ARP probe: %w", err)
	}
	payload, err := request.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("building the ARP probe: %w", err)
	}
	frame, err := (&ethernet.Frame{
		Destination: ethernet.Broadcast, Source: ifi.HardwareAddr, EtherType: ethernet.EtherTypeARP, Payload: payload,
	}).MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("building the ARP probe: %w", err)
	}
	// The socket queues only ARP packets whose sender address is the VIP, so that it can
	// stay open for a whole takeover on a busy LAN.
	v4 := vip.As4()
	filter, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 14 + 14, Size: 4}, // Ethernet header, then the ARP sender protocol address
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: binary.BigEndian.Uint32(v4[:]), SkipFalse: 1},
		bpf.RetConstant{Val: 1 << 16},
		bpf.RetConstant{Val: 0},
	})
	if err != nil {
		return nil, fmt.Errorf("assembling the socket filter: %w", err)
	}
	conn, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ARP, &packet.Config{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("opening an ARP socket on %s: %w", ifi.Name, err)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("the ARP socket on %s: %w", ifi.Name, err)
	}
	return &arpProbe{conn: conn, raw: raw, ifi: ifi, vip: vip, sender: sender, request: frame, buf: make([]byte, 1500)}, nil
}

func (p *arpProbe) send() error {
	if _, err := p.conn.WriteTo(p.request, &packet.Addr{HardwareAddr: ethernet.Broadcast}); err != nil {
		return fmt.Errorf("sending the ARP probe on %s: %w", p.ifi.Name, err)
	}
	return nil
}

func (p *arpProbe) drain() ([]string, error) {
	var holders []string
	for {
		n, _, ok, err := recvQueued(p.raw, p.buf)
		if err != nil || !ok {
			return holders, err
		}
		var f ethernet.Frame
		var pkt arp.Packet
		if f.UnmarshalBinary(p.buf[:n]) != nil || f.EtherType != ethernet.EtherTypeARP || pkt.UnmarshalBinary(f.Payload) != nil {
			continue
		}
		if p.counts(&pkt) {
			holders = append(holders, pkt.SenderHardwareAddr.String())
		}
	}
}

// counts reports whether pkt shows another host holding the VIP: any packet from the VIP,
// or with repliesOnly a reply to this node's request (the kernel answers to the request's
// sender address; an announcement's target is the VIP itself).
func (p *arpProbe) counts(pkt *arp.Packet) bool {
	if pkt.SenderIP != p.vip || bytes.Equal(pkt.SenderHardwareAddr, p.ifi.HardwareAddr) {
		return false
	}
	return !p.repliesOnly || (pkt.Operation == arp.OperationReply && pkt.TargetIP == p.sender)
}

func (p *arpProbe) Close() error { return p.conn.Close() }

// senderAddress is the interface's first IPv4 address other than the VIP.
func senderAddress(ifi *net.Interface, vip netip.Addr) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addresses of %s: %w", ifi.Name, err)
	}
	for _, a := range addrs {
		prefix, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		if ip := prefix.Addr(); ip.Is4() && ip != vip {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv4 address of its own to probe the VIP from", ifi.Name)
}
