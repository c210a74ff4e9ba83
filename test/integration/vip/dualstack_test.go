// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package vip_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/gardener/gardener-extension-kube-vip/agent/arp"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// TestDualStackGuardSurvivesLateAndLostReplies: a dual-stack exposure's old holder crashed
// right after a refresh and its kernel answers for both VIPs (ARP and neighbour
// advertisements) for about another second, every frame it sends 40 ms late and 2 % lost.
// The new leader runs the family guards together (arp.Guards) and adds both VIPs only when
// both are free. In odd rounds the old holder's IPv6 VIP lasts a second longer (its removal
// failed; the kernel lifetime removes it). Both NICs, both families, sampled with a 1 ms
// pause: no VIP is ever on both nodes, and the new leader never adds one while the old
// holder has the other.
func TestDualStackGuardSurvivesLateAndLostReplies(t *testing.T) {
	n := newTwoNodes(t, lanIPv4, &slowLossyLAN)
	n.ip("-n", n.oldNS, "addr", "add", lanIPv6.oldIP, "dev", "eth0", "nodad")
	n.ip("-n", n.newNS, "addr", "add", lanIPv6.newIP, "dev", "eth0", "nodad")
	for _, h := range []*netlink.Handle{n.oldH, n.newH} {
		for end := time.Now().Add(5 * time.Second); !n.hasLinkLocal(h); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("eth0 has no IPv6 link-local address after 5 s")
			}
		}
	}
	vips := []netip.Addr{lanIPv4.vip, lanIPv6.vip}
	for round := range 5 {
		for i, vip := range vips {
			lifetime := "1"
			if i == 1 && round%2 == 1 {
				lifetime = "2"
			}
			n.ip("-n", n.oldNS, "addr", "add", vip.String()+"/"+bits(vip), "dev", "eth0", "valid_lft", lifetime, "preferred_lft", "0", "nodad")
		}
		refreshed := time.Now()
		s := n.sample(vips...)
		waits, holder := takeoverAll(t, n.newNS, vips, func() error {
			for _, vip := range vips {
				if out, err := exec.Command("ip", "-n", n.newNS, "addr", "add", vip.String()+"/"+bits(vip), "dev", "eth0", "nodad").CombinedOutput(); err != nil {
					return fmt.Errorf("adding %s: %w: %s", vip, err, out)
				}
			}
			return nil
		})
		s.done()
		s.mu.Lock()
		for i, vip := range vips {
			if s.both[i] != 0 {
				t.Errorf("round %d: %s was on both nodes in %d samples", round, vip, s.both[i])
			}
			t.Logf("round %d: %s: the old holder's went %s after the refresh, the new leader had it %s later",
				round, vip, s.oldGone[i].Sub(refreshed).Round(time.Millisecond), s.newOn[i].Sub(s.oldGone[i]).Round(time.Millisecond))
		}
		if s.crossed != 0 {
			t.Errorf("round %d: in %d samples the new leader had one VIP while the old holder still had the other", round, s.crossed)
		}
		if waits == 0 || holder == "" {
			t.Errorf("round %d: the guards never saw the old holder answer (it holds the VIPs for about a second)", round)
		}
		if round == 0 {
			t.Logf("the sampler read both NICs %d times; %d guard calls found a holder (%s)", s.samples, waits, holder)
		}
		s.mu.Unlock()
		for _, vip := range vips {
			n.ip("-n", n.newNS, "addr", "del", vip.String()+"/"+bits(vip), "dev", "eth0")
		}
		for end := time.Now().Add(5 * time.Second); n.hasAny(n.oldH, vips); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("the old holder's VIPs outlived their lifetime by 4 s")
			}
		}
	}
}

// takeoverAll runs arp.Guards for vips in namespace ns as the keeper does, a tick at a
// time, then adds.
func takeoverAll(t *testing.T, ns string, vips []netip.Addr, add func() error) (waits int, holder string) {
	t.Helper()
	runIn(t, ns, func() error {
		var guards arp.Guards
		for _, vip := range vips {
			guards = append(guards, arp.NewGuard("eth0", vip))
		}
		defer func() { _ = guards.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		since := time.Now()
		for ctx.Err() == nil {
			free, who, err := guards.Free(ctx, since, time.Now().Add(timing.KeeperTick))
			if err != nil {
				return fmt.Errorf("the guards: %w", err)
			}
			if free {
				return add()
			}
			if who != "" {
				waits++
				holder = who
			}
		}
		return ctx.Err()
	})
	return waits, holder
}

// hasAny reports whether the node's eth0 has any of vips.
func (n *twoNodes) hasAny(h *netlink.Handle, vips []netip.Addr) bool {
	for _, held := range n.held(h, vips) {
		if held {
			return true
		}
	}
	return false
}

// held reports, per VIP, whether the node's eth0 has it (one netlink dump).
func (n *twoNodes) held(h *netlink.Handle, vips []netip.Addr) []bool {
	out := make([]bool, len(vips))
	link, err := h.LinkByName("eth0")
	if err != nil {
		n.t.Error(err)
		return out
	}
	addrs, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		n.t.Error(err)
		return out
	}
	for i, vip := range vips {
		for _, a := range addrs {
			if a.IP.Equal(net.IP(vip.AsSlice())) {
				out[i] = true
			}
		}
	}
	return out
}
