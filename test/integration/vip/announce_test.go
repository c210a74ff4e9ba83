// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package vip_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"

	"github.com/gardener/gardener-extension-kube-vip/agent/arp"
)

// TestNoAnnouncementAfterTheTerm: a leader that froze after its keeper checked the term
// resumes with an announcement to send; its term is over and another node may hold the
// VIP, so the announcer sends nothing (it checks the term's end, the context's deadline,
// on the clock right before each packet). The other node's NIC sees no claim of the VIP.
func TestNoAnnouncementAfterTheTerm(t *testing.T) {
	bothFamilies(t, func(t *testing.T, fam lanFamily) {
		n := newTwoNodes(t, fam, nil)
		claims := make(chan struct{}, 16)
		stop := captureClaims(t, n.newNS, n.vip, claims)
		defer stop()
		ended, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
		defer cancel()
		var sent int
		runIn(t, n.oldNS, func() error {
			a, err := arp.New("eth0", n.vip)
			if err != nil {
				return err
			}
			defer func() { _ = a.Close() }()
			sent, _ = a.Announce(ended)
			return nil
		})
		select {
		case <-claims:
			t.Fatalf("the other node saw an announcement of the VIP after the sender's term ended (%d packets sent)", sent)
		case <-time.After(200 * time.Millisecond):
		}
		if sent != 0 {
			t.Fatalf("the announcer reported %d packets sent after the term ended", sent)
		}
	})
}

// captureClaims reports on claims every frame arriving at ns's eth0 that claims vip: an
// ARP packet with vip as sender, or a neighbour advertisement for it.
func captureClaims(t *testing.T, ns string, vip netip.Addr, claims chan<- struct{}) (stop func()) {
	t.Helper()
	var c *packet.Conn
	runIn(t, ns, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		c, err = packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, nil)
		return err
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			if claimsVIP(buf[:n], vip) {
				claims <- struct{}{}
			}
		}
	}()
	return func() { _ = c.Close(); <-done }
}

func claimsVIP(f []byte, vip netip.Addr) bool {
	if len(f) < 14 {
		return false
	}
	switch etherType := uint16(f[12])<<8 | uint16(f[13]); {
	case etherType == unix.ETH_P_ARP && len(f) >= 42:
		spa, _ := netip.AddrFromSlice(f[28:32])
		return spa == vip
	case etherType == unix.ETH_P_IPV6 && len(f) >= 14+40+24:
		const icmpv6, na = 58, 136
		target, _ := netip.AddrFromSlice(f[14+40+8 : 14+40+24])
		return f[14+6] == icmpv6 && f[14+40] == na && target == vip
	}
	return false
}
