// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// lossyHolder is the loss of the holder's ARP frames and how long it lasts: each follower's
// probe goes unanswered with this probability, so four in a row, the silence of the early
// takeover, are lost about every 14 s across the two followers (0.75 × 0.25^4 per tick, 25
// ticks a second), and ten in a row (those four, the request of the tick that reaches the
// silence and the confirmation burst) about once in 15 hours.
const (
	lossyHolder    = 0.25
	lossyHolderFor = 90 * time.Second
)

// TestLossyHolderMovesNothing drops a quarter of the ARP frames the holder sends, its
// answers to the followers' probes among them, for 90 s. The holder is healthy and
// reachable: a follower whose silence reached timing.EarlyTakeoverSilence must find it
// answering within its timing.ConfirmProbes, and the VIP must not move. Without the
// confirmation the followers took the Lease early several times a minute. The etcd-leader
// yield, a move by design, is off. The loss is the harness's relay in this process: a stall
// of it longer than the burst (20 ms) would hold back the answers and count as a silence.
func TestLossyHolderMovesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kvl-"}, ExtraArgs: []string{"--etcd-metrics-url="}})
	holder := offEtcdLeader(ctx, t, h, c)
	attempts := map[*netns.Node]int{}
	for _, n := range h.Nodes() {
		attempts[n] = earlyAttempts(t, c, n, time.Time{})
	}
	sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{})
	imp, err := h.ImpairARP(ctx, holder, netns.Impairment{Loss: lossyHolder})
	if err != nil {
		sampler.Stop()
		t.Fatal(err)
	}
	time.Sleep(lossyHolderFor)
	relayed, dropped, err := imp.Stop(context.WithoutCancel(ctx))
	rep := sampler.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("holder %s: %d of its ARP frames dropped, %d relayed, in %s; holders %s", holder, dropped, relayed, lossyHolderFor, changes(rep))
	assertNoOverlap(t, rep)
	for n, before := range attempts {
		if got := earlyAttempts(t, c, n, time.Time{}) - before; got > 0 {
			t.Errorf("%s tried %d early takeovers of a holder that lost only some of its answers (confirmed by %d more probes, %s)",
				n, got, timing.ConfirmProbes, timing.ConfirmSilence)
		}
	}
	if len(rep.Changes) > 1 {
		t.Errorf("the VIP moved off %s, whose ARP frames were only lossy: %s", holder, changes(rep))
	}
}
