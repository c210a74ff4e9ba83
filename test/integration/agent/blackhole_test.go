// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// blackholeOutageBound is the longest the client may find the VIP dark when its holder is
// cut with the carrier up: the followers' early takeover (EarlyTakeoverSilence and one
// probe interval, the confirmation, the guard) plus 200 ms for the Lease write and the
// client's next probe on a busy machine. It checks that the early takeover happened, not
// its speed: the 0.6 s goal is the bench's (rows holder-cut-*), and at 0.58 s before the
// write it left a test on this machine no room (600 ms seen in a CI-like run).
const blackholeOutageBound = timing.EarlyTakeoverSilence + timing.FollowerProbeInterval + timing.ConfirmSilence + timing.TakeoverSilence + 200*time.Millisecond

// TestBlackholedHolder cuts the holder off at L2 with its carrier up (the bridge drops every
// frame from and to its port, etcd's and the kube-apiserver's included), right after a
// renewal, for 0.6, 1.5 and 2.5 s, then heals the cut. The holder sees no link change. A
// follower takes the Lease early on the silence; the cut holder must have fenced itself
// (removed the VIP) before that, so that after the heal only one node answers for the VIP:
// both NICs are read every millisecond, the client's namespace asks for the VIP every 10 ms
// from an address of its own and records who answers, and the client probes the VIP.
//
// The last case drops only the frames the holder sends, for 1.5 s: it still hears its
// followers, so its fence finds no silence, while its answers and its API requests are lost
// (a stalled hold). The follower that takes the Lease early adds the VIP while the holder's
// may still be on, unheard, and announces it; the holder fences on hearing that, or steps
// down on the new record, which its etcd member still receives. Before the heal.
func TestBlackholedHolder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kvb-"}})
	for _, tc := range []struct {
		name string
		cut  time.Duration
		dir  netns.Direction
	}{
		{"cut 600ms", 600 * time.Millisecond, netns.BothWays},
		{"cut 1.5s", 1500 * time.Millisecond, netns.BothWays},
		{"cut 2.5s", 2500 * time.Millisecond, netns.BothWays},
		{"frames out cut 1.5s", 1500 * time.Millisecond, netns.FromNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := offEtcdLeader(ctx, t, h, c)
			blackholeHolder(ctx, t, h, old, tc.cut, tc.dir)
		})
	}
}

// blackholeHolder cuts old off in dir for cut right after a renewal, heals it, watches for
// 4 s more (past the end of a stalled hold) and checks: never the VIP on two NICs, never two
// answerers for it, one answerer after the heal, the client's outage within the bound.
func blackholeHolder(ctx context.Context, t *testing.T, h *netns.Harness, old *netns.Node, cut time.Duration, dir netns.Direction) {
	t.Helper()
	via := anotherNode(h, old)
	sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
	watch, err := h.StartAnswerWatch(ctx, 10*time.Millisecond)
	if err != nil {
		sampler.Stop()
		t.Fatal(err)
	}
	prober, err := h.Client().StartProber(ctx, netns.ProbeOptions{Duration: time.Minute})
	if err != nil {
		sampler.Stop()
		_, _ = watch.Stop()
		t.Fatal(err)
	}
	waitRenewal(ctx, t, h, via, old.Name())
	cutAt := time.Now()
	heal, err := h.Blackhole(ctx, old, dir)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(cutAt.Add(cut)))
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	healedAt := time.Now()
	time.Sleep(4 * time.Second)
	res := prober.Stop()
	answers, werr := watch.Stop()
	rep := sampler.Stop()

	after := netns.Answerers(answers, healedAt.Add(100*time.Millisecond))
	two := netns.TwoAnswerers(answers, 50*time.Millisecond)
	t.Logf("%s cut for %s (healed %s after the cut): holders %s; two holders %s; answerers after the heal %v, two answerers %s; client: longest outage %s",
		old, cut, healedAt.Sub(cutAt).Round(time.Millisecond), changes(rep), rep.TwoHolders().Round(time.Millisecond),
		answerNames(h, after), two.Round(time.Millisecond), res.Longest().Round(time.Millisecond))
	if dir == netns.FromNode {
		assertUnheardOverlap(t, rep, healedAt)
	} else {
		assertNoOverlap(t, rep)
	}
	if werr != nil {
		t.Errorf("answer watch: %v", werr)
	}
	// Answerers one after another are a handover (the etcd-leader yield may offer the Lease
	// on after an early taker that leads etcd); two at once is what clients must never see.
	if len(after) == 0 || two != 0 {
		t.Errorf("after the heal %v answered for the VIP, two at once for %s; want one at a time", answerNames(h, after), two.Round(time.Millisecond))
	}
	if holders, err := h.Holders(); err != nil || len(holders) != 1 {
		t.Errorf("after the heal: holders %v, %v; want one", netns.Names(holders), err)
	}
	netns.CheckOutage(t, "holder blackholed for "+cut.String(), res, blackholeOutageBound)
}

// unheardOverlapBound is how long the VIP may stay on a holder whose frames out are dropped
// after a follower that took the Lease early added it: the holder hears the announcement and
// fences within a check interval, or sees the new record (its etcd member still receives).
const unheardOverlapBound = 100 * time.Millisecond

// assertUnheardOverlap checks the sampler where the holder's frames out were dropped: the new
// holder's guard cannot hear the old one, so the VIP may be on both NICs for a moment, while
// nobody hears the old one. That must end soon, and before the heal.
func assertUnheardOverlap(t *testing.T, rep netns.SamplerReport, healedAt time.Time) {
	t.Helper()
	if rep.Errors != 0 {
		t.Errorf("holder sampler: %d failed sweeps, first: %s", rep.Errors, rep.FirstError)
	}
	if n := len(rep.Overlaps); n > 0 && !rep.Overlaps[n-1].At.Before(healedAt) {
		t.Errorf("VIP on two nodes at %s, after the heal at %s; changes %s",
			rep.Overlaps[n-1].At.Format("15:04:05.000"), healedAt.Format("15:04:05.000"), changes(rep))
	}
	if d := rep.TwoHolders(); d > unheardOverlapBound {
		t.Errorf("VIP on two nodes for %s, want at most %s while the cut holder is unheard; changes %s",
			d.Round(time.Millisecond), unheardOverlapBound, changes(rep))
	}
}

// answerNames names the nodes that own the MACs, the MAC itself for a foreign one.
func answerNames(h *netns.Harness, macs []string) string {
	names := make([]string, len(macs))
	for i, mac := range macs {
		names[i] = mac
		for _, n := range h.Nodes() {
			if n.MAC().String() == mac {
				names[i] = n.Name()
			}
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}

// cutOffsMetric counts the times a follower heard its peers' probes stop.
const cutOffsMetric = "kube_vip_agent_follower_cut_offs_total"

// TestBlackholedFollowerMovesNothing cuts a follower off at L2 with its carrier up for 1 s,
// then 2.7 probe intervals (216 ms), then 1 s again. It hears the holder fall silent, but it hears its peer's probes fall silent
// too, so it counts itself deaf and forgets the holder: it must not take the Lease, neither
// during the cut nor after the heal (a write on the wire may commit late), nor may anybody
// else. A follower's own blip is no reason to reset every connection through the VIP. The
// holder still hears the other follower and must not fence either. The cut follower leads
// etcd, the hardest case (the cut starts an etcd election, the holder's renewals stall);
// the agents do not read etcd's metrics, so that the etcd-leader yield, a move by design,
// stays out of the count. The cut follower's metrics show the cut. The cut of 2.7 intervals loses two
// of its peer's probes: the gap shows only at the tick that reads the first probe after the
// heal, while its silence of the holder, read a tick late, already reaches the threshold of
// the early takeover. The last round cuts the other follower first, for 1 s, and the etcd
// leader right after its heal: the first cut makes the second follower count itself deaf,
// and its own cut then comes before it heard its peer again (timing.PeerReturnWait).
func TestBlackholedFollowerMovesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kvf-"}, ExtraArgs: []string{"--etcd-metrics-url="}})
	for round, r := range []struct {
		cut        time.Duration
		otherFirst bool
	}{{time.Second, false}, {27 * timing.FollowerProbeInterval / 10, false}, {time.Second, false}, {time.Second, true}} {
		cut := r.cut
		holder := offEtcdLeader(ctx, t, h, c)
		follower := etcdLeader(ctx, t, h)
		sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
		prober, err := h.Client().StartProber(ctx, netns.ProbeOptions{Duration: time.Minute})
		if err != nil {
			sampler.Stop()
			t.Fatal(err)
		}
		cutOffs, err := metric(ctx, follower, cutOffsMetric)
		if err != nil {
			t.Fatal(err)
		}
		attempts := earlyAttempts(t, c, follower, time.Time{})
		lease := recordLease(ctx, t, holder, holder.Name())
		if r.otherFirst {
			var other *netns.Node
			for _, n := range h.Nodes() {
				if n != holder && n != follower {
					other = n
				}
			}
			cutOff(ctx, t, h, other, cut)
		}
		cutOff(ctx, t, h, follower, cut)
		time.Sleep(4 * time.Second)
		res := prober.Stop()
		rep := sampler.Stop()
		lease.stop()
		if after, err := metric(ctx, follower, cutOffsMetric); err != nil || after <= cutOffs {
			t.Errorf("round %d: the cut follower's %s went from %v to %v (%v), want a rise", round, cutOffsMetric, cutOffs, after, err)
		}
		t.Logf("round %d: follower %s (etcd leader) cut for %s under holder %s (the other follower cut right before: %v): holders %s; client: longest outage %s",
			round, follower, cut, holder, r.otherFirst, changes(rep), res.Longest().Round(time.Millisecond))
		assertNoOverlap(t, rep)
		// A write on the wire may commit late or not at all: the attempt is the defect. But a
		// holder that dropped the VIP by its own rule (the stalled hold below) leaves a real
		// silence, and a takeover on it ends a silence's length after the VIP left at the
		// earliest; one that went out while the holder held ends before.
		var realSilence time.Time
		if len(rep.Changes) > 1 {
			realSilence = rep.Changes[1].At.Add(timing.EarlyTakeoverSilence - timing.FollowerProbeInterval)
		}
		if n := earlyAttempts(t, c, follower, realSilence) - attempts; n > 0 {
			t.Errorf("round %d: the cut follower %s tried %d early takeovers of a holder that only it could not hear", round, follower, n)
		}
		if len(rep.Changes) == 1 {
			continue
		}
		// Cutting etcd's leader starts an election, which the holder's stalled hold covers
		// only up to its bound: past it the holder drops the VIP by its own rule, and takes it
		// again if its own write is the next to commit.
		if prev, next, ok := lease.stalledPastHold(timing.Defaults(), holder.Name(), rep.Changes[1].At); ok {
			t.Logf("round %d: nothing committed to the Lease from %s's record of %s until %s's, read at %s, and the VIP left at %s, at the end of the stalled hold: the holder had to drop it; not the follower's doing",
				round, prev.holder, prev.at.Format(time.StampMilli), next.holder, next.seen.Format(time.StampMilli), rep.Changes[1].At.Format(time.StampMilli))
			continue
		}
		// A renewal may commit after the holder gave up waiting for it: the Lease then shows
		// a record the holder never learned of, and its hold runs from the renewal before. Its
		// own log says where the hold it kept ended.
		if end, ok := stalledHoldEnd(t, c, holder, rep.Changes[1].At); ok {
			t.Logf("round %d: the VIP left %s at %s, at the end of the stalled hold it logged (until %s): the holder had to drop it; not the follower's doing",
				round, holder, rep.Changes[1].At.Format(time.StampMilli), end.Format(time.StampMilli))
			continue
		}
		t.Errorf("round %d: the VIP moved although only the follower %s was cut: %s; the Lease's records: %s", round, follower, changes(rep), lease.history())
		// CI keeps no agent logs: what each agent said about the VIP and the Lease explains the move.
		for _, n := range h.Nodes() {
			logLines(t, n, c.Agent(n).LogPath(), "VIP removed", "VIP added", "fenced", "Fenced", "went missing", "stall", "Health changed",
				"Became leader", "Stopped leading", "Lease expired", "Reading the Lease", "forgetting the holder", "answers for the VIP")
		}
	}
}

// cutOff cuts n off at L2 with its carrier up for d, then heals the cut.
func cutOff(ctx context.Context, t *testing.T, h *netns.Harness, n *netns.Node, d time.Duration) {
	t.Helper()
	heal, err := h.Blackhole(ctx, n, netns.BothWays)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	if err := heal(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
}

// earlyAttempts counts n's early takeovers, won or failed, that its agent logged before
// (zero: so far).
func earlyAttempts(t *testing.T, c *agent.Cluster, n *netns.Node, before time.Time) int {
	t.Helper()
	count := 0
	for _, entry := range agentLog(t, c, n) {
		if !before.IsZero() && !entry.TS.Before(before) {
			continue
		}
		if entry.Reason == election.ReasonEarly && entry.Msg == "Became leader" ||
			strings.HasPrefix(entry.Msg, "Taking the Lease of a silent holder early failed") {
			count++
		}
	}
	return count
}

// logEntry is the part of an agent's JSON log line the tests read.
type logEntry struct {
	TS             time.Time `json:"ts"`
	Msg            string    `json:"msg"`
	Reason         string    `json:"reason"`
	PreviousHolder string    `json:"previousHolder"`
	Until          time.Time `json:"until"`
}

// agentLog returns n's agent log, one entry a line.
func agentLog(t *testing.T, c *agent.Cluster, n *netns.Node) []logEntry {
	t.Helper()
	raw, err := os.ReadFile(c.Agent(n).LogPath())
	if err != nil {
		t.Fatal(err)
	}
	var out []logEntry
	for _, line := range strings.Split(string(raw), "\n") {
		var entry logEntry
		if json.Unmarshal([]byte(line), &entry) == nil {
			out = append(out, entry)
		}
	}
	return out
}

// stalledHoldEnd finds a stalled hold that n logged and that ended when the VIP left n (at
// left): no earlier than holdEndSlack before it, and no later than the keeper's removal may
// lag.
func stalledHoldEnd(t *testing.T, c *agent.Cluster, n *netns.Node, left time.Time) (time.Time, bool) {
	t.Helper()
	for _, entry := range agentLog(t, c, n) {
		if strings.HasPrefix(entry.Msg, "Renewals stall; holding the term") &&
			!left.Before(entry.Until.Add(-holdEndSlack)) && !left.After(entry.Until.Add(timing.ActiveRemovalLateness)) {
			return entry.Until, true
		}
	}
	return time.Time{}, false
}

// etcdLeader returns the node whose etcd member leads.
func etcdLeader(ctx context.Context, t *testing.T, h *netns.Harness) *netns.Node {
	t.Helper()
	for _, n := range h.Nodes() {
		if leads, err := n.EtcdLeads(ctx); err == nil && leads {
			return n
		}
	}
	t.Fatal("no etcd member leads")
	return nil
}

// TestStalledPastHold checks the excuse TestBlackholedFollowerMovesNothing gives a holder that
// dropped the VIP: only at the end of its own stalled hold, with nothing committed before.
func TestStalledPastHold(t *testing.T) {
	d := timing.Defaults()
	t0 := time.Unix(1000, 0)
	end := d.StalledTerm(d.TermFrom(t0)).End
	own := func(at time.Time) leaseWrite {
		return leaseWrite{holder: "node1", at: at, seen: at.Add(5 * time.Millisecond)}
	}
	for _, tc := range []struct {
		name   string
		writes []leaseWrite
		left   time.Time
		want   bool
	}{
		{"the holder dropped at its hold's end and took it back", []leaseWrite{own(t0), own(end.Add(280 * time.Millisecond))}, end, true},
		{"another node took it after the hold's end", []leaseWrite{own(t0), {holder: "node2", at: end.Add(100 * time.Millisecond), seen: end.Add(110 * time.Millisecond)}}, end, true},
		{"the VIP left before the hold's end", []leaseWrite{own(t0), own(end.Add(280 * time.Millisecond))}, end.Add(-time.Second), false},
		{"a renewal committed within the hold", []leaseWrite{own(t0), own(t0.Add(2 * time.Second)), own(end.Add(time.Second))}, end, false},
		{"the gap follows another node's record", []leaseWrite{{holder: "node2", at: t0, seen: t0}, own(end.Add(time.Second))}, end, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &leaseRecorder{writes: tc.writes}
			if _, _, ok := r.stalledPastHold(d, "node1", tc.left); ok != tc.want {
				t.Errorf("excused: %v, want %v", ok, tc.want)
			}
		})
	}
}
