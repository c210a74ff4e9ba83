// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-logr/logr"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// Options tune the runs.
type Options struct {
	// Hold is how long the fault stays after the client reached the VIP on its new node,
	// to catch a second outage; default 500ms.
	Hold time.Duration
	// StableFor is how long the VIP has to stay on one node before a run (on top of the
	// system's settle time after the last start); default 300ms.
	StableFor time.Duration
	// Log receives progress.
	Log logr.Logger
	// Client probes and dials Target; default the harness's client namespace.
	Client *netns.Client
	// Target is the client's way to the VIP; default VIP:6443. Through a Neutron router
	// it is the floating IP (see -dataplane).
	Target netip.AddrPort
}

func (o Options) withDefaults() Options {
	if o.Hold == 0 {
		o.Hold = 500 * time.Millisecond
	}
	if o.StableFor == 0 {
		o.StableFor = 300 * time.Millisecond
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return o
}

// Window is an outage the client saw, relative to the fault.
type Window struct {
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	// Open marks an outage that had not ended when the probing stopped.
	Open bool `json:"open,omitempty"`
}

// RunResult is one run of one scenario.
type RunResult struct {
	Leader string `json:"leader"`
	// NewHolder is the node that held the VIP after the failover; empty without failover.
	NewHolder string `json:"newHolder,omitempty"`
	// Failover is false when no other node took the VIP (or the client did not reach it)
	// within the scenario timeout.
	Failover bool `json:"failover"`
	// Outage is the client's time without the VIP: the sum of the outage windows that began
	// after the fault and before the revert, or the timeout without failover.
	Outage time.Duration `json:"outage"`
	// Detected is when another node first held the VIP, after the fault.
	Detected time.Duration `json:"detected,omitempty"`
	// Reverted is when the fault was undone, after the fault.
	Reverted time.Duration `json:"reverted"`
	// TwoHolders is the time with two or more nodes holding the VIP (confirmed by the
	// sampler), from the fault until the VIP was on one node again after the revert.
	TwoHolders time.Duration `json:"twoHolders"`
	// ARPConflicts counts VIP claims by one MAC after a claim by another that followed
	// its own earlier claim (within 5s), between the fault and the revert.
	ARPConflicts int `json:"arpConflicts"`
	// ARPClaimers are the nodes that sent ARP for the VIP between the fault and the revert.
	ARPClaimers []string `json:"arpClaimers,omitempty"`
	// AfterRevert sums the outage windows that began after the revert (e.g. the VIP
	// moving back by preemption, or an old holder coming back); not part of Outage.
	AfterRevert time.Duration `json:"afterRevert,omitempty"`
	// Windows are all outage windows from just before the fault until the end of the run.
	Windows []Window `json:"windows"`
	// Target is the node the fault hit when that was not the holder (etcd-leader-cut).
	Target string `json:"target,omitempty"`
	// Moves counts how often the VIP came to rest on another node from the fault until
	// the end of the run.
	Moves int `json:"moves"`
	// ARPRelayed and ARPDropped count the holder's ARP frames the impairment passed
	// (delayed) and dropped.
	ARPRelayed int `json:"arpRelayed,omitempty"`
	ARPDropped int `json:"arpDropped,omitempty"`
	// Restarts counts daemons that had exited and were restarted after the revert.
	Restarts int `json:"restarts,omitempty"`
	// EtcdLeaderMoved: the holder's etcd member led, and the run handed etcd's leadership
	// to another node, then waited for a stable holder again, before the fault
	// (Scenario.SteadyEtcd).
	EtcdLeaderMoved bool `json:"etcdLeaderMoved,omitempty"`
}

// Runner runs scenarios on a harness.
type Runner struct {
	h    *netns.Harness
	opts Options
}

// New returns a runner on h.
func New(h *netns.Harness, opts Options) *Runner {
	opts = opts.withDefaults()
	if opts.Client == nil {
		opts.Client = h.Client()
	}
	if !opts.Target.IsValid() {
		opts.Target = netip.AddrPortFrom(h.VIP(), 6443)
	}
	return &Runner{h: h, opts: opts}
}

// Harness is the harness the runner runs on.
func (r *Runner) Harness() *netns.Harness { return r.h }

// dialVIP opens and closes one TCP connection from the client to the target (VIP:6443).
func (r *Runner) dialVIP(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	conn, err := r.opts.Client.DialContext(ctx, "tcp", r.opts.Target.String())
	if err != nil {
		return err
	}
	return conn.Close()
}

// WaitStable waits until every daemon runs, the last (re)start is the system's settle
// time ago, exactly one node (the system's preferred one, if it has one) has held the VIP
// for StableFor, and the client reaches it.
// It returns the holder's index.
func (r *Runner) WaitStable(ctx context.Context, d *Deployment, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var holder *netns.Node
	var since time.Time
	var last string
	for {
		if _, err := d.EnsureRunning(ctx); err != nil {
			return -1, err
		}
		holders, err := r.h.Holders()
		if err != nil {
			return -1, err
		}
		now := time.Now()
		switch {
		case len(holders) != 1:
			holder, last = nil, fmt.Sprintf("holders %v", netns.Names(holders))
		case d.sys.Preferred() >= 0 && holders[0] != d.nodes[d.sys.Preferred()]:
			holder, last = nil, fmt.Sprintf("%s holds the VIP, waiting for %s to take it back", holders[0].Name(), d.nodes[d.sys.Preferred()].Name())
		case holders[0] != holder:
			holder, since = holders[0], now
		case now.Sub(since) >= r.opts.StableFor && now.Sub(d.LastStart()) >= d.sys.Settle():
			if err := r.dialVIP(ctx); err != nil {
				last = "client cannot reach the VIP: " + err.Error()
				break
			}
			return d.nodeIndex(holder), nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%s: no stable VIP holder within %v (%s)", d.sys.Name(), timeout, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Run runs scenario sc once: it waits for a stable holder, injects the fault there, waits
// for the VIP on another node and the client reaching it (or the scenario timeout), holds
// the fault a moment, reverts it and waits for a stable holder again.
func (r *Runner) Run(ctx context.Context, d *Deployment, sc Scenario) (RunResult, error) {
	if sc.Prepare != nil {
		if err := sc.Prepare(ctx, d); err != nil {
			return RunResult{}, fmt.Errorf("preparing %s: %w", sc.Name, err)
		}
	}
	var res RunResult
	var leader int
	var err error
	if sc.SteadyEtcd {
		leader, res.EtcdLeaderMoved, err = r.waitStableOffEtcdLeader(ctx, d)
	} else {
		leader, err = r.WaitStable(ctx, d, 90*time.Second)
	}
	if err != nil {
		return res, err
	}
	timeout := d.sys.ScenarioTimeout()
	res.Leader = d.nodes[leader].Name()
	target := leader
	if sc.Target != nil {
		if target, err = sc.Target(ctx, d, leader); err != nil {
			return res, err
		}
		res.Target = d.nodes[target].Name()
	}
	var imp *netns.ImpairedARP
	stopImpairment := func() error {
		if imp == nil {
			return nil
		}
		var err error
		res.ARPRelayed, res.ARPDropped, err = imp.Stop(context.WithoutCancel(ctx))
		imp = nil
		return err
	}
	defer func() { _ = stopImpairment() }()
	if sc.ImpairARP != nil {
		if imp, err = r.h.ImpairARP(ctx, d.nodes[leader], *sc.ImpairARP); err != nil {
			return res, err
		}
	}

	sampler := r.h.StartHolderSampler(ctx, netns.SamplerOptions{})
	capture, err := r.h.StartARPCapture(ctx)
	if err != nil {
		sampler.Stop()
		return res, err
	}
	prober, err := r.opts.Client.StartProber(ctx, netns.ProbeOptions{Mode: netns.ProbeTCP, Target: r.opts.Target, Duration: timeout + 3*time.Minute})
	if err != nil {
		sampler.Stop()
		_, _ = capture.Stop()
		return res, err
	}
	stopObservers := func() (netns.ProbeResult, netns.SamplerReport, []netns.ARPClaim, error) {
		pr := prober.Stop()
		sr := sampler.Stop()
		claims, cerr := capture.Stop()
		return pr, sr, claims, cerr
	}

	time.Sleep(100 * time.Millisecond) // a baseline of 10 probes before the fault
	faultAt := time.Now()
	if err := sc.Fault(ctx, d, target); err != nil {
		_, _, _, _ = stopObservers()
		return res, fmt.Errorf("fault %s on %s: %w", sc.Name, d.nodes[target].Name(), err)
	}
	if sc.Stay > 0 {
		res.Failover = r.watchServed(ctx, sc.Stay, &res)
	} else {
		res.Failover = r.waitFailover(ctx, d, leader, faultAt.Add(timeout), &res)
		if res.Failover {
			time.Sleep(r.opts.Hold)
		}
	}
	revertAt := time.Now()
	res.Reverted = revertAt.Sub(faultAt)
	revertErr := sc.Revert(ctx, d, target)
	d.touch(target)
	if revertErr == nil {
		res.Restarts, revertErr = d.EnsureRunning(ctx)
	}
	// Keep observing until the VIP is on one node again, so that the two-holder time
	// includes how long the old holder keeps the VIP after the revert.
	// Daemons that exit meanwhile are restarted, as the kubelet would.
	if err := r.waitSingleHolder(ctx, d, 30*time.Second); err != nil {
		r.opts.Log.Info("VIP still on several nodes after the revert", "system", d.sys.Name(), "scenario", sc.Name, "err", err.Error())
	}
	pr, sr, claims, captureErr := stopObservers()
	if err := errors.Join(revertErr, captureErr, stopImpairment()); err != nil {
		return res, fmt.Errorf("%s on %s: %w", sc.Name, res.Leader, err)
	}
	if sr.Errors > 0 {
		return res, fmt.Errorf("holder sampler: %d failed sweeps, first: %s", sr.Errors, sr.FirstError)
	}

	res.Windows, res.Outage, res.AfterRevert = outage(pr, faultAt, revertAt)
	if !res.Failover {
		res.Outage = timeout
	}
	res.TwoHolders = twoHolderTime(sr, faultAt)
	res.Moves = moves(sr, faultAt, res.Leader)
	res.ARPConflicts, res.ARPClaimers = arpFacts(claims, faultAt, revertAt)
	return res, nil
}

// waitStableOffEtcdLeader waits for a stable holder and, for a system that keeps the VIP
// off the etcd leader's node, for one whose etcd member does not lead (offEtcdLeader); it
// returns the holder's index and whether etcd's leadership was handed away.
func (r *Runner) waitStableOffEtcdLeader(ctx context.Context, d *Deployment) (leader int, moved bool, err error) {
	if leader, err = r.WaitStable(ctx, d, 90*time.Second); err != nil {
		return -1, false, err
	}
	for tries := 0; ; tries++ {
		var handed bool
		if handed, err = r.offEtcdLeader(ctx, d, leader); err != nil || !handed {
			return leader, moved, err
		}
		// The handover stalls writes for a moment, which may move the VIP: start over
		// from a stable holder.
		moved = true
		time.Sleep(d.sys.Settle())
		if leader, err = r.WaitStable(ctx, d, 90*time.Second); err != nil {
			return -1, moved, err
		}
		if tries == 5 {
			return leader, moved, fmt.Errorf("%s: the holder's etcd member still led after 5 handovers", d.sys.Name())
		}
	}
}

// offEtcdLeader puts, for a system that keeps the VIP off the etcd leader's node
// (sut.EtcdAware), the runs into that state: if the holder's member leads, etcd's
// leadership goes to another node. The system would move the VIP itself (ours: the
// etcd-leader yield), but only to a node that has been eligible, and not cut off itself,
// for election.OfferHoldDown (5 min), and this benchmark's faults come seconds apart.
func (r *Runner) offEtcdLeader(ctx context.Context, d *Deployment, holder int) (moved bool, err error) {
	if aware, ok := d.sys.(sut.EtcdAware); !ok || !aware.KeepsOffEtcdLeader() {
		return false, nil
	}
	_, moved, err = etcdLeaderOff(ctx, d, holder)
	return moved, err
}

// watchServed waits for stay, then tells whether exactly one node holds the VIP and the
// client reaches it (within a second), and fills res.NewHolder.
func (r *Runner) watchServed(ctx context.Context, stay time.Duration, res *RunResult) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(stay):
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(10 * time.Millisecond) {
		holders, err := r.h.Holders()
		if err != nil || len(holders) != 1 {
			continue
		}
		if r.dialVIP(ctx) == nil {
			res.NewHolder = holders[0].Name()
			return true
		}
	}
	return false
}

// moves counts how often the VIP came to rest on another single node than the one before,
// from the fault on.
func moves(sr netns.SamplerReport, faultAt time.Time, leader string) int {
	return len(restMoves(sr, faultAt, leader))
}

// restMoves lists the times the VIP came to rest on another single node than the one
// before, from since on, holder holding it then; an overlap or a gap that ends on the
// same node is no move. At is relative to since; AfterBlip is -1.
func restMoves(sr netns.SamplerReport, since time.Time, holder string) []Move {
	var out []Move
	last := holder
	for _, c := range sr.Changes {
		if c.At.Before(since) || len(c.Holders) != 1 {
			continue
		}
		if c.Holders[0] != last {
			out = append(out, Move{At: c.At.Sub(since), From: last, To: c.Holders[0], AfterBlip: -1})
			last = c.Holders[0]
		}
	}
	return out
}

// waitSingleHolder polls until exactly one node holds the VIP, restarting daemons that
// exited.
func (r *Runner) waitSingleHolder(ctx context.Context, d *Deployment, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if _, err := d.EnsureRunning(ctx); err != nil {
			return err
		}
		holders, err := r.h.Holders()
		if err != nil {
			return err
		}
		if len(holders) == 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("holders %v: %w", netns.Names(holders), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitFailover polls until a node other than the leader holds the VIP and the client
// reaches the VIP, or until deadline. It fills res.NewHolder and res.Detected.
func (r *Runner) waitFailover(ctx context.Context, d *Deployment, leader int, deadline time.Time, res *RunResult) bool {
	faultAt := deadline.Add(-d.sys.ScenarioTimeout())
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if res.NewHolder == "" {
			holders, err := r.h.Holders()
			if err == nil {
				for _, n := range holders {
					if n != d.nodes[leader] {
						res.NewHolder, res.Detected = n.Name(), time.Since(faultAt)
					}
				}
			}
		}
		if res.NewHolder != "" && r.dialVIP(ctx) == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// outage returns the windows from 100ms before the fault on, relative to the fault, the
// summed length of the windows that began after the fault and before the revert, and that
// of the windows that began after the revert.
func outage(pr netns.ProbeResult, faultAt, revertAt time.Time) ([]Window, time.Duration, time.Duration) {
	var ws []Window
	var sum, after time.Duration
	for _, o := range pr.Outages {
		end := o.End
		if o.Open() {
			end = pr.End
		}
		if end.Before(faultAt.Add(-100 * time.Millisecond)) {
			continue
		}
		ws = append(ws, Window{Start: o.Start.Sub(faultAt), End: end.Sub(faultAt), Open: o.Open()})
		if end.After(faultAt) && o.Start.Before(revertAt) {
			start := o.Start
			if start.Before(faultAt) {
				start = faultAt
			}
			sum += end.Sub(start)
		} else if !o.Start.Before(revertAt) {
			after += end.Sub(o.Start)
		}
	}
	return ws, sum, after
}

// twoHolderTime sums the spans, from the fault on, in which the sampler saw two or more
// holders and confirmed it at least once.
func twoHolderTime(sr netns.SamplerReport, faultAt time.Time) time.Duration {
	var total time.Duration
	for _, sp := range sr.TwoHolderSpans() {
		start := sp.From
		if start.Before(faultAt) {
			start = faultAt
		}
		if !sp.To.After(start) {
			continue
		}
		for _, o := range sr.Overlaps {
			if !o.At.Before(sp.From) && o.At.Before(sp.To) {
				total += sp.To.Sub(start)
				break
			}
		}
	}
	return total
}

// arpFacts looks at the claims between the fault and the revert (a revert may move the
// VIP back, which is a handover, not a conflict).
func arpFacts(claims []netns.ARPClaim, faultAt, revertAt time.Time) (int, []string) {
	var after []netns.ARPClaim
	seen := map[string]bool{}
	var claimers []string
	for _, c := range claims {
		if c.At.Before(faultAt) || c.At.After(revertAt) {
			continue
		}
		after = append(after, c)
		name := c.Node
		if name == "" {
			name = c.MAC.String()
		}
		if !seen[name] {
			seen[name] = true
			claimers = append(claimers, name)
		}
	}
	return len(netns.ARPConflicts(after, 5*time.Second)), claimers
}
