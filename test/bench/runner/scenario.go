// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// Scenario is a fault injected into the node that holds the VIP, and its revert.
type Scenario struct {
	// Name is short, used in tables and JSON ("graceful", "crash", ...).
	Name string
	// Title says what happens.
	Title string
	// Fault injects the fault on node i.
	Fault func(ctx context.Context, d *Deployment, i int) error
	// Revert undoes it after the run; processes that exited are restarted afterwards in
	// any case.
	Revert func(ctx context.Context, d *Deployment, i int) error
	// Prepare, if set, runs before the wait for a stable holder (a rolling update first
	// rolls every node back to the previous release, unmeasured).
	Prepare func(ctx context.Context, d *Deployment) error
	// Target, if set, picks the node to fault given the holder; default the holder.
	Target func(ctx context.Context, d *Deployment, holder int) (int, error)
	// Stay, if set, is a fault after which the VIP should stay served without a failover:
	// the run watches for Stay after Fault returned instead of waiting for another holder,
	// and counts as failed ("no failover") if the client does not reach the VIP then.
	Stay time.Duration
	// ImpairARP, if set, delays and drops the ARP and NDP frames the holder sends, from before the
	// fault until the VIP is on one node again after the revert.
	ImpairARP *netns.Impairment
	// Applies tells whether the scenario applies to the system; default all.
	Applies func(sut.System) bool
	// SteadyEtcd puts the runs of a system that keeps the VIP off the etcd leader's node
	// (sut.EtcdAware) into that state before the fault (Runner.offEtcdLeader). The forced
	// case has a row of its own (link-down-etcd-leader).
	SteadyEtcd bool
	// NeedsBridge marks a fault at the harness's bridge (a blackhole): behind the Neutron
	// router the nodes' NICs are Neutron ports, and the scenario is not run there.
	NeedsBridge bool
}

// healWatch is how long a blackhole scenario watches the healed cluster: past the end of a
// stalled hold, so that a holder that kept the VIP through the cut is seen answering
// beside a new one.
const healWatch = 4 * time.Second

// blackhole is a scenario that cuts the target (by default the holder) off at L2 with its
// carrier up, both ways (a switch or flow-table fault, a VM migration blip), and heals
// the cut after cut, whatever the run does meanwhile. The run then watches the healed
// cluster for healWatch: the outage counts every dark moment from the cut on, the one
// after the heal included.
func blackhole(name, who string, cut time.Duration, target func(context.Context, *Deployment, int) (int, error)) Scenario {
	return Scenario{
		Name:        name,
		Title:       fmt.Sprintf("%s cut off at L2 with its carrier up for %s (the bridge drops every frame from and to its port), then healed", who, cut),
		Fault:       func(ctx context.Context, d *Deployment, i int) error { return d.Blackhole(ctx, i, cut) },
		Revert:      func(ctx context.Context, d *Deployment, _ int) error { return d.Healed(ctx) },
		Target:      target,
		Stay:        cut + healWatch,
		SteadyEtcd:  target == nil,
		NeedsBridge: true,
	}
}

func signal(sig syscall.Signal) func(context.Context, *Deployment, int) error {
	return func(_ context.Context, d *Deployment, i int) error { return d.Process(i).Signal(sig) }
}

// waitExit gives a signalled process time to exit and kills it if it does not.
func waitExit(ctx context.Context, d *Deployment, i int) error {
	p := d.Process(i)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
	}
	return nil
}

// Scenarios are the faults of the benchmark, in table order.
var Scenarios = []Scenario{
	{
		Name:   "graceful",
		Title:  "graceful stop (SIGTERM) of the leader's daemon",
		Fault:  signal(syscall.SIGTERM),
		Revert: waitExit,
	},
	{
		Name:   "crash",
		Title:  "SIGKILL of the leader's daemon",
		Fault:  signal(syscall.SIGKILL),
		Revert: waitExit,
	},
	{
		Name:  "link-down",
		Title: "the leader's LAN link down (up again after the run)",
		Fault: func(ctx context.Context, d *Deployment, i int) error { return d.nodes[i].LinkDown(ctx) },
		Revert: func(ctx context.Context, d *Deployment, i int) error {
			return d.nodes[i].LinkUp(ctx)
		},
		SteadyEtcd: true,
	},
	{
		Name:   "link-down-etcd-leader",
		Title:  "the leader's LAN link down right after etcd's leadership was handed to its node (up again after the run)",
		Target: etcdLeaderAtHolder,
		Fault:  func(ctx context.Context, d *Deployment, i int) error { return d.nodes[i].LinkDown(ctx) },
		Revert: func(ctx context.Context, d *Deployment, i int) error { return d.nodes[i].LinkUp(ctx) },
	},
	{
		Name:  "apiserver-dead",
		Title: "the leader's local kube-apiserver killed, its daemon alive (apiserver restarted after)",
		Fault: func(_ context.Context, d *Deployment, i int) error {
			d.nodes[i].KillAPIServer()
			return nil
		},
		Revert: func(ctx context.Context, d *Deployment, i int) error {
			n := d.nodes[i]
			if err := n.StartAPIServer(ctx); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			if err := n.WaitAPIServerReady(ctx); err != nil {
				return fmt.Errorf("restarted apiserver: %w", err)
			}
			return nil
		},
	},
	{
		Name:   "freeze",
		Title:  "the leader's daemon frozen (SIGSTOP; SIGCONT after the run)",
		Fault:  signal(syscall.SIGSTOP),
		Revert: signal(syscall.SIGCONT),
	},
	{
		Name:   "etcd-leader-cut",
		Title:  "the LAN link of the etcd leader's node down while another node holds the VIP (up again after the run)",
		Target: etcdLeaderElsewhere,
		Fault:  func(ctx context.Context, d *Deployment, i int) error { return d.nodes[i].LinkDown(ctx) },
		Revert: func(ctx context.Context, d *Deployment, i int) error { return d.nodes[i].LinkUp(ctx) },
		// etcd elects a new leader within about two election timeouts (1 s each); the
		// holder's renewals stall meanwhile.
		Stay: 4 * time.Second,
	},
	blackhole("holder-cut-0.6s", "the leader", 600*time.Millisecond, nil),
	blackhole("holder-cut-1.5s", "the leader", 1500*time.Millisecond, nil),
	blackhole("holder-cut-2.5s", "the leader", 2500*time.Millisecond, nil),
	// The etcd leader's node: the hardest follower to cut, as its cut starts an etcd
	// election and stalls the holder's renewals.
	blackhole("follower-cut-1s", "the etcd leader's node, while another node holds the VIP,", time.Second, etcdLeaderElsewhere),
	{
		Name:      "crash-arp-impaired",
		Title:     "SIGKILL of the leader's daemon, its ARP and NDP frames delayed 40 ms and 2 % lost",
		Fault:     signal(syscall.SIGKILL),
		Revert:    waitExit,
		ImpairARP: &ARPImpairment,
	},
	{
		Name:      "freeze-arp-impaired",
		Title:     "the leader's daemon frozen (SIGSTOP; SIGCONT after the run), its ARP and NDP frames delayed 40 ms and 2 % lost",
		Fault:     signal(syscall.SIGSTOP),
		Revert:    signal(syscall.SIGCONT),
		ImpairARP: &ARPImpairment,
	},
	{
		Name:    "rolling-update",
		Title:   "a DaemonSet-like roll, node by node, from the previous release to this one (each node stopped with SIGTERM, the new daemon started, the system's settle time waited)",
		Prepare: func(ctx context.Context, d *Deployment) error { return d.Roll(ctx, false) },
		Fault:   func(ctx context.Context, d *Deployment, _ int) error { return d.Roll(ctx, true) },
		Revert:  func(context.Context, *Deployment, int) error { return nil },
		Stay:    3 * time.Second,
		Applies: func(s sut.System) bool { _, ok := s.(sut.Rollable); return ok },
	},
}

// ARPImpairment is what the ARP-impaired scenarios do to the old holder's ARP frames
// (issue 24: tc netem delay 40 ms, loss 2 %).
var ARPImpairment = netns.Impairment{Delay: 40 * time.Millisecond, Loss: 0.02}

// ScenarioByName returns the scenario called name.
func ScenarioByName(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}
