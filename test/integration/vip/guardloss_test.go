// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package vip_test

import (
	"cmp"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	knetns "github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// slowLossyLAN is the old holder's egress in TestGuardSurvivesLateAndLostReplies: every
// frame 40 ms late, 2 % of them lost.
var slowLossyLAN = knetns.Impairment{Delay: 40 * time.Millisecond, Loss: 0.02}

// TestGuardSurvivesLateAndLostReplies: the old holder crashed right after a refresh and
// its kernel answers for the VIP for about another second, but every frame it sends is
// 40 ms late and 2 % are lost (a relay between the nodes plays tc netem). The new leader's
// guard must keep waiting while the old holder answers: both NICs, sampled with a 1 ms
// pause between reads, never have the VIP at once.
func TestGuardSurvivesLateAndLostReplies(t *testing.T) {
	bothFamilies(t, func(t *testing.T, fam lanFamily) {
		n := newTwoNodes(t, fam, &slowLossyLAN)
		for round := range 5 {
			refreshed := n.crashedHolder()
			s := n.sample(n.vip)
			waits, holder := takeover(t, n.newNS, n.vip, func() error { return n.addVIP(n.newNS) })
			s.done()
			s.mu.Lock()
			if round == 0 {
				t.Logf("the sampler read both NICs %d times in %s", s.samples, time.Since(refreshed).Round(time.Millisecond))
			}
			if s.both[0] != 0 {
				t.Errorf("round %d: the VIP was on both nodes in %d samples", round, s.both[0])
			}
			if waits == 0 || holder == "" {
				t.Errorf("round %d: the guard never saw the old holder answer (it holds the VIP for about a second)", round)
			}
			if !s.oldGone[0].IsZero() && !s.newOn[0].IsZero() {
				t.Logf("round %d: the old holder's VIP went %s after its lifetime; the new leader had it %s later (%d probe rounds found it held)",
					round, (s.oldGone[0].Sub(refreshed) - time.Second).Round(time.Millisecond), s.newOn[0].Sub(s.oldGone[0]).Round(time.Millisecond), waits)
			}
			s.mu.Unlock()
			n.delVIP(n.newNS)
			n.waitGone(n.oldH)
		}
	})
}

// TestGuardVerdictOnAQuietLAN: nobody holds the VIP (the whole old node died). The guard
// finds it free after TakeoverProbes unanswered requests, each given TakeoverReplyBound:
// TakeoverSilence after its first request, plus this machine's scheduling.
func TestGuardVerdictOnAQuietLAN(t *testing.T) {
	bothFamilies(t, func(t *testing.T, fam lanFamily) {
		n := newTwoNodes(t, fam, nil)
		var worst, best time.Duration
		for round := range 10 {
			start := time.Now()
			waits, _ := takeover(t, n.newNS, n.vip, func() error { return nil })
			took := time.Since(start)
			if waits != 0 {
				t.Fatalf("round %d: the guard found a holder on a LAN where nobody holds the VIP", round)
			}
			if took < timing.TakeoverSilence {
				t.Fatalf("round %d: the verdict came %s after the first request, before TakeoverSilence (%s)", round, took, timing.TakeoverSilence)
			}
			worst, best = max(worst, took), min(cmp.Or(best, took), took)
		}
		t.Logf("verdict %s to %s after the first request (TakeoverSilence %s, 10 rounds)", best.Round(time.Millisecond), worst.Round(time.Millisecond), timing.TakeoverSilence)
		if limit := timing.TakeoverSilence + 100*time.Millisecond; worst > limit {
			t.Errorf("a verdict took %s, more than %s", worst, limit)
		}
	})
}
