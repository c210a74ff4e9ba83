// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package vip_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// TestTakeoverGuard: the old holder crashed right after refreshing the VIP (valid_lft 1s), so
// its kernel keeps the address, and answers ARP for it, until the lifetime ran out and the
// kernel's lifetime check came round. The new leader, on another node of the LAN, probes as
// the agent's keeper does and adds the VIP only once nobody answers. Both NICs are sampled
// every millisecond: the VIP is never on both, whatever the kernel's lateness, and the
// takeover follows the old address's removal within a probe round. Without the guard the
// new leader would add the VIP at once, while the old one still has it for about a second.
func TestTakeoverGuard(t *testing.T) {
	n := newTwoNodes(t, lanIPv4, nil)
	for round := range 3 {
		refreshed := n.crashedHolder()
		s := n.sample(n.vip)
		waits, holder := takeover(t, n.newNS, n.vip, func() error { return n.addVIP(n.newNS) })
		s.done()

		s.mu.Lock()
		if s.both[0] != 0 {
			t.Errorf("round %d: the VIP was on both nodes in %d samples", round, s.both[0])
		}
		if waits == 0 || holder == "" {
			t.Errorf("round %d: the guard never saw the old holder answer (it holds the VIP for about a second)", round)
		}
		if s.oldGone[0].IsZero() || s.newOn[0].IsZero() {
			t.Fatalf("round %d: old removed at %v, new added at %v", round, s.oldGone[0], s.newOn[0])
		}
		lateness := s.oldGone[0].Sub(refreshed) - time.Second
		gap := s.newOn[0].Sub(s.oldGone[0])
		t.Logf("round %d: the kernel removed the old holder's VIP %s after its lifetime; the guard waited %d probe rounds and the new leader had it %s later",
			round, lateness.Round(time.Millisecond), waits, gap.Round(time.Millisecond))
		// The guard's silence plus a request interval and an add, with room for a loaded
		// machine: the takeover follows the old address promptly, not a lease later.
		if limit := timing.TakeoverSilence + timing.TakeoverProbeInterval + 150*time.Millisecond; gap > limit {
			t.Errorf("round %d: the new leader added the VIP %s after the old one's was gone, more than the guard's silence (%s)", round, gap, limit)
		}
		s.mu.Unlock()
		n.delVIP(n.newNS)
	}
}

// takeover runs the guard in namespace ns, as the keeper does: one session of the guard a
// tick at a time until it finds the VIP free, then add. It returns how many ticks found a
// holder, and the holder.
func takeover(t *testing.T, ns string, vip netip.Addr, add func() error) (waits int, holder string) {
	t.Helper()
	return takeoverAll(t, ns, []netip.Addr{vip}, add)
}
