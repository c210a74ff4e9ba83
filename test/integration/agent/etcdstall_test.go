// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// etcdStall is how long the etcd leader is stopped: about what etcd needs to elect a new
// leader when its leader's node fails (1 to 2 election timeouts of 1 s), and the Lease
// writes of every node stall meanwhile.
const etcdStall = 1500 * time.Millisecond

// TestEtcdElectionElsewhereKeepsTheVIP stops the etcd leader's process (SIGSTOP, as a
// failed node's etcd looks to the others) while another node holds the VIP, at five
// points of the holder's renewal cycle. Every Lease write stalls until etcd has a leader
// again; the holder must keep the VIP throughout, and the VIP must never be on two nodes.
// A follower whose read comes after etcd has a leader again and before the holder's next
// retry leaves the holder that retry (timing.StalledRetryWait; docs/agent-reference.md, "Holding
// through an etcd election"; TestFollowersLeaveAStalledHolderItsRetry shows it
// deterministically). The test asserts what must hold in every run (never two holders, the
// VIP served again afterwards) and logs the outages and moves; how often and how long the
// VIP moves is measured by make bench's etcd-leader-cut row, not bounded here.
func TestEtcdElectionElsewhereKeepsTheVIP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// As deployed: the etcd-leader yield, reading gardenadm's metrics listener (the
	// agent's default --etcd-metrics-url), keeps the VIP off the etcd leader's node.
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kvs-"},
		ExtraArgs: []string{"--etcd-check-period=2s"}})
	assertEtcdMetricsRead(ctx, t, h)

	tm := timing.Defaults()
	var worst time.Duration
	var moved []int
	phases := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, tm.RetryPeriod / 2, 750 * time.Millisecond, tm.RetryPeriod - 100*time.Millisecond}
	for i, phase := range phases {
		holder, etcdLeader := holderAwayFromEtcdLeader(ctx, t, h, c)
		renewed := waitRenewal(ctx, t, h, holder, holder.Name())
		time.Sleep(time.Until(renewed.Add(phase)))

		sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{})
		prober, err := h.Client().StartProber(ctx, netns.ProbeOptions{Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		etcd := etcdLeader.Etcd()
		if err := etcd.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(etcdStall)
		if err := etcd.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		// Long enough for every stalled renewal and takeover attempt to have been answered.
		time.Sleep(3 * time.Second)
		res := prober.Stop()
		rep := sampler.Stop()
		assertNoOverlap(t, rep)
		var outage time.Duration
		for _, o := range res.Outages {
			outage += o.Duration()
		}
		worst = max(worst, outage)
		t.Logf("run %d: etcd leader %s stopped for %s %s after a renewal by %s; client outage %s (%d probes); holder changes %s",
			i, etcdLeader, etcdStall, phase, holder, outage, res.Probes, changes(rep))
		if outage > 0 {
			moved = append(moved, i)
		}
		if n := len(res.Outages); n > 0 && res.Outages[n-1].Open() {
			t.Errorf("run %d: the VIP was not served again 3 s after etcd's leader came back: %+v", i, res.Outages[n-1])
		}
	}
	t.Logf("the VIP left its holder in runs %v of %d", moved, len(phases))
	for _, n := range h.Nodes() {
		if p := c.Agent(n); p != nil {
			logLines(t, n, p.LogPath(), "stall") // how long each stall lasted
		}
	}
	t.Logf("longest client outage over the runs: %s", worst)
}

// holderAwayFromEtcdLeader waits until one node holds the VIP, steadily, and its etcd
// member does not lead; it returns the holder and the etcd leader's node.
func holderAwayFromEtcdLeader(ctx context.Context, t *testing.T, h *netns.Harness, c *agent.Cluster) (holder, etcdLeader *netns.Node) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		holder, err := c.WaitStable(ctxFor(t, ctx, 60*time.Second), 6*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if etcdLeader = waitEtcdLeader(ctx, t, h); etcdLeader != holder {
			return holder, etcdLeader
		}
	}
	t.Fatal("the VIP holder's etcd member kept leading etcd")
	return nil, nil
}

// assertEtcdMetricsRead waits until every agent reads its etcd member's metrics from
// gardenadm's listener and the etcd leader's agent reports the leadership.
func assertEtcdMetricsRead(ctx context.Context, t *testing.T, h *netns.Harness) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var missing []string
		etcdLeader := waitEtcdLeader(ctx, t, h)
		for _, n := range h.Nodes() {
			if v, err := metric(ctx, n, "kube_vip_agent_etcd_metrics_readable"); err != nil || v != 1 {
				missing = append(missing, fmt.Sprintf("%s: readable %v (%v)", n, v, err))
			}
		}
		if v, err := metric(ctx, etcdLeader, "kube_vip_agent_etcd_leader"); err != nil || v != 1 {
			missing = append(missing, fmt.Sprintf("%s leads etcd: kube_vip_agent_etcd_leader %v (%v)", etcdLeader, v, err))
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agents do not read gardenadm's etcd metrics listener: %v", missing)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
