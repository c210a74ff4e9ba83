// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
)

func TestGratuitousARPHasBothForms(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x11}
	vip := netip.MustParseAddr("198.18.0.100")
	packets, err := GratuitousARP(mac, vip)
	if err != nil {
		t.Fatal(err)
	}
	if len(packets) != 2 {
		t.Fatalf("got %d packets, want a request and a reply", len(packets))
	}
	req, rep := packets[0], packets[1]
	if req.Operation != arp.OperationRequest || rep.Operation != arp.OperationReply {
		t.Fatalf("operations %v, %v; want request, reply", req.Operation, rep.Operation)
	}
	for _, p := range packets {
		if p.SenderIP != vip || p.TargetIP != vip {
			t.Errorf("%v: sender %s target %s, want both %s (ML2/OVN binds on spa=tpa=VIP)", p.Operation, p.SenderIP, p.TargetIP, vip)
		}
		if !bytes.Equal(p.SenderHardwareAddr, mac) {
			t.Errorf("%v: sender MAC %s, want %s", p.Operation, p.SenderHardwareAddr, mac)
		}
		// The packet must survive a round trip through the wire format.
		b, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back arp.Packet
		if err := back.UnmarshalBinary(b); err != nil || back.SenderIP != vip {
			t.Fatalf("round trip: %v, %v", err, back.SenderIP)
		}
	}
	// Linux (arp_is_garp) takes a reply as gratuitous only when its target MAC is the
	// sender's own.
	if !bytes.Equal(rep.TargetHardwareAddr, rep.SenderHardwareAddr) {
		t.Errorf("reply target MAC %s, want the sender's own %s", rep.TargetHardwareAddr, rep.SenderHardwareAddr)
	}
	if !bytes.Equal(req.TargetHardwareAddr, net.HardwareAddr{0, 0, 0, 0, 0, 0}) {
		t.Errorf("request target MAC %s, want zero", req.TargetHardwareAddr)
	}
}

func TestGratuitousARPRejectsIPv6(t *testing.T) {
	if _, err := GratuitousARP(net.HardwareAddr{2, 0, 0, 0, 0, 1}, netip.MustParseAddr("2001:db8::1")); err == nil {
		t.Fatal("an IPv6 VIP was accepted for ARP")
	}
}

func TestUnsolicitedNA(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x22}
	vip := netip.MustParseAddr("2001:db8::100")
	b, err := UnsolicitedNA(mac, vip)
	if err != nil {
		t.Fatal(err)
	}
	m, err := icmp.ParseMessage(58, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != ipv6.ICMPTypeNeighborAdvertisement {
		t.Fatalf("type %v, want neighbor advertisement", m.Type)
	}
	body := m.Body.(*icmp.RawBody).Data
	if body[0]&0x20 == 0 || body[0]&0x40 != 0 || body[0]&0x80 != 0 {
		t.Errorf("flags %08b: want override only", body[0])
	}
	if got, _ := netip.AddrFromSlice(body[4:20]); got != vip {
		t.Errorf("target %s, want %s", got, vip)
	}
	if body[20] != 2 || body[21] != 1 || !bytes.Equal(body[22:28], mac) {
		t.Errorf("target link-layer option %x, want type 2 length 1 with %s", body[20:28], mac)
	}
	if _, err := UnsolicitedNA(mac, netip.MustParseAddr("198.18.0.1")); err == nil {
		t.Error("an IPv4 target was accepted")
	}
}

// A follower's prober counts only the holder's replies to its own requests: an announcement
// also reaches a follower whose own frames are dropped, and hearing it would start a silence
// that is the follower's own cut. The guard counts both.
func TestARPProbeCountsRepliesOrEverything(t *testing.T) {
	vip, self, holder := netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.11"), netip.MustParseAddr("198.18.0.12")
	ownMAC := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	holderMAC := net.HardwareAddr{2, 0, 0, 0, 0, 2}
	packet := func(op arp.Operation, srcMAC net.HardwareAddr, src netip.Addr, dstMAC net.HardwareAddr, dst netip.Addr) *arp.Packet {
		p, err := arp.NewPacket(op, srcMAC, src, dstMAC, dst)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	announcements, err := GratuitousARP(holderMAC, vip)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name               string
		pkt                *arp.Packet
		guard, repliesOnly bool
	}{
		{"the holder's reply to this node", packet(arp.OperationReply, holderMAC, vip, ownMAC, self), true, true},
		{"the holder's gratuitous request", announcements[0], true, false},
		{"the holder's gratuitous reply", announcements[1], true, false},
		{"the holder's reply to another node", packet(arp.OperationReply, holderMAC, vip, ownMAC, holder), true, false},
		{"another node's request", packet(arp.OperationRequest, holderMAC, holder, ownMAC, vip), false, false},
		{"this node's own reply", packet(arp.OperationReply, ownMAC, vip, ownMAC, self), false, false},
	} {
		for repliesOnly, want := range map[bool]bool{false: tc.guard, true: tc.repliesOnly} {
			p := &arpProbe{ifi: &net.Interface{HardwareAddr: ownMAC}, vip: vip, sender: self, repliesOnly: repliesOnly}
			if got := p.counts(tc.pkt); got != want {
				t.Errorf("%s, replies only %v: counts %v, want %v", tc.name, repliesOnly, got, want)
			}
		}
	}
}
