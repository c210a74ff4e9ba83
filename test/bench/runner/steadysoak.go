// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// SteadySoakOptions configure a steady soak: a deployment left alone for Duration but for
// lossy ARP on every node and a blip of one follower every BlipEvery.
type SteadySoakOptions struct {
	Duration  time.Duration `json:"duration"`
	BlipEvery time.Duration `json:"blipEvery"`
	// Blackhole is how long a blackhole blip cuts the follower off at L2, its carrier up.
	Blackhole time.Duration `json:"blackhole"`
	// Flap is how long a link-flap blip keeps the follower's link down.
	Flap time.Duration `json:"flap"`
	// ARPLoss is the probability that one ARP or NDP frame a node sends is lost, each frame
	// on its own; 0: no impairment.
	ARPLoss float64 `json:"arpLoss"`
}

// Validate refuses options that would not soak anything or whose blips would overlap.
func (o SteadySoakOptions) Validate() error {
	switch {
	case o.Duration <= 0:
		return errors.New("steady soak: the duration must be positive")
	case o.BlipEvery <= 0 || o.Blackhole <= 0 || o.Flap <= 0:
		return errors.New("steady soak: the blip interval and both blip lengths must be positive")
	case o.Blackhole >= o.BlipEvery || o.Flap >= o.BlipEvery:
		return fmt.Errorf("steady soak: blips of %s and %s do not fit a blip every %s", o.Blackhole, o.Flap, o.BlipEvery)
	case o.ARPLoss < 0 || o.ARPLoss >= 1:
		return fmt.Errorf("steady soak: ARP loss %g is not in [0, 1)", o.ARPLoss)
	}
	return nil
}

// The kinds of follower blip.
const (
	// BlipBlackhole cuts the follower off at the bridge, both ways, its carrier up.
	BlipBlackhole = "blackhole"
	// BlipLinkFlap takes the follower's link down and up again.
	BlipLinkFlap = "link-flap"
)

// BlipAftermath is how long after a blip's heal a move still counts as following it: past
// an etcd election (two election timeouts of 1 s) and a lease duration of kube-vip's (5 s).
const BlipAftermath = 10 * time.Second

// Blip is one follower blip of a steady soak.
type Blip struct {
	// At is when the cut began, since the start of the soak.
	At   time.Duration `json:"at"`
	Node string        `json:"node"`
	Kind string        `json:"kind"`
	// Took is how long the node was cut off, until the heal (or link up) returned.
	Took time.Duration `json:"took"`
	// EtcdLeader is the node whose etcd member led just before the blip ("" if unknown):
	// a blip of that node costs the cluster an etcd election and stalls the renewals.
	EtcdLeader string `json:"etcdLeader,omitempty"`
}

// Move is the VIP coming to rest on another node.
type Move struct {
	// At is when the new node was seen alone holding the VIP, since the start of the soak.
	At   time.Duration `json:"at"`
	From string        `json:"from"`
	To   string        `json:"to"`
	// AfterBlip is the index in Blips of the blip whose cut or aftermath (BlipAftermath)
	// the move fell in; -1 if none.
	AfterBlip int `json:"afterBlip"`
}

// SteadySoakResult is what a steady soak of one deployment measured. Every move counts as
// needless: nothing failed on the holder.
type SteadySoakResult struct {
	// Took is the measured time, shorter than planned after an interrupt or an error.
	Took time.Duration `json:"took"`
	// Holder held the VIP at the start.
	Holder string `json:"holder"`
	Blips  []Blip `json:"blips"`
	// SkippedBlips counts the blip times at which not exactly one node held the VIP, so that
	// there was no follower to pick.
	SkippedBlips int `json:"skippedBlips,omitempty"`
	// HolderChanges counts every change of the holder set the sampler saw (an overlap or a
	// gap included).
	HolderChanges int    `json:"holderChanges"`
	Moves         []Move `json:"moves"`
	// TwoHolders is the time the sampler saw (and confirmed) the VIP on two nodes or more.
	TwoHolders time.Duration `json:"twoHolders"`
	// TwoAnswerers is the time two MACs or more answered the client's ARP requests for
	// the VIP (netns.TwoAnswerers).
	TwoAnswerers time.Duration `json:"twoAnswerers"`
	// Windows are the client's outages, relative to the start; LongestOutage the longest.
	Windows       []Window      `json:"windows"`
	LongestOutage time.Duration `json:"longestOutage"`
	// Restarts counts daemons that had exited and were restarted (as the kubelet would).
	Restarts int `json:"restarts,omitempty"`
	// EtcdLeaderMoved: the holder's etcd member led at the start and the soak handed etcd's
	// leadership away first (Runner.waitStableOffEtcdLeader).
	EtcdLeaderMoved bool `json:"etcdLeaderMoved,omitempty"`
	// ARPRelayed and ARPDropped count the nodes' ARP and NDP frames the impairment passed
	// and dropped.
	ARPRelayed int `json:"arpRelayed,omitempty"`
	ARPDropped int `json:"arpDropped,omitempty"`
}

// MovesAfterBlips counts the moves that fell in a blip or its aftermath.
func (r SteadySoakResult) MovesAfterBlips() int {
	n := 0
	for _, m := range r.Moves {
		if m.AfterBlip >= 0 {
			n++
		}
	}
	return n
}

// SteadySoak leaves d alone for opts.Duration but for opts.ARPLoss of every node's ARP and
// NDP frames and a blip of one follower every opts.BlipEvery, and measures the holder
// timeline, the client's outages and who answers the client's ARP requests for the VIP.
// The result holds what was measured also when the soak ends with an error.
func (r *Runner) SteadySoak(ctx context.Context, d *Deployment, opts SteadySoakOptions) (res SteadySoakResult, err error) {
	// Named results: the deferred stop of the impairments adds its counts to what is returned.
	if err := opts.Validate(); err != nil {
		return res, err
	}
	imp := &impairments{h: r.h, nodes: d.nodes, imp: netns.Impairment{Loss: opts.ARPLoss}, on: make([]*netns.ImpairedARP, len(d.nodes))}
	defer func() {
		if err := imp.stopAll(context.WithoutCancel(ctx)); err != nil {
			r.opts.Log.Error(err, "stopping the ARP impairment")
		}
		res.ARPRelayed, res.ARPDropped = imp.relayed, imp.dropped
	}()
	for i := range d.nodes {
		if err := imp.start(ctx, i); err != nil {
			return res, err
		}
	}
	// Started in the state ours' etcd-leader yield keeps, as the failover runs are: else
	// the yield's planned move, minutes in, would count as needless.
	leader, moved, err := r.waitStableOffEtcdLeader(ctx, d)
	res.EtcdLeaderMoved = moved
	if err != nil {
		return res, err
	}
	res.Holder = d.nodes[leader].Name()

	sampler := r.h.StartHolderSampler(ctx, netns.SamplerOptions{})
	watch, err := r.h.StartAnswerWatch(ctx, 10*time.Millisecond)
	if err != nil {
		sampler.Stop()
		return res, err
	}
	prober, err := r.opts.Client.StartProber(ctx, netns.ProbeOptions{Mode: netns.ProbeTCP, Target: r.opts.Target, Duration: opts.Duration + time.Minute})
	if err != nil {
		sampler.Stop()
		_, _ = watch.Stop()
		return res, err
	}
	start := time.Now()
	soak := &steadySoak{r: r, d: d, opts: opts, imp: imp, start: start}
	loopErr := soak.blipFollowers(ctx, &res)
	end := time.Now()
	pr := prober.Stop()
	answers, watchErr := watch.Stop()
	sr := sampler.Stop()

	res.Took = end.Sub(start)
	res.HolderChanges = max(len(sr.Changes)-1, 0)
	res.Moves = attributeMoves(restMoves(sr, start, res.Holder), res.Blips, BlipAftermath)
	res.TwoHolders = twoHolderTime(sr, start)
	res.TwoAnswerers = netns.TwoAnswerers(answers, 50*time.Millisecond)
	res.Windows, _, _ = outage(pr, start, end)
	for _, w := range res.Windows {
		res.LongestOutage = max(res.LongestOutage, w.End-w.Start)
	}
	var samplerErr error
	if sr.Errors > 0 {
		samplerErr = fmt.Errorf("holder sampler: %d failed sweeps, first: %s", sr.Errors, sr.FirstError)
	}
	if watchErr != nil {
		watchErr = fmt.Errorf("ARP answer watch: %w", watchErr)
	}
	return res, errors.Join(loopErr, samplerErr, watchErr)
}

// steadySoak is a steady soak under way.
type steadySoak struct {
	r     *Runner
	d     *Deployment
	opts  SteadySoakOptions
	imp   *impairments
	start time.Time
}

// blipFollowers runs the soak's time: every opts.BlipEvery a blip of the next follower,
// and in between the restart of daemons that exited.
func (s *steadySoak) blipFollowers(ctx context.Context, res *SteadySoakResult) error {
	r, d := s.r, s.d
	plan := newBlipPlan(netns.Names(d.nodes))
	end := s.start.Add(s.opts.Duration)
	next := s.start.Add(s.opts.BlipEvery)
	for {
		n, err := d.EnsureRunning(ctx)
		res.Restarts += n
		if err != nil {
			return err
		}
		now := time.Now()
		if !now.Before(end) {
			return nil
		}
		if !now.Before(next) {
			// Past now, so that a stall (a slow heal, a restart) does not bunch the blips.
			for !next.After(now) {
				next = next.Add(s.opts.BlipEvery)
			}
			holders, err := r.h.Holders()
			if err != nil {
				return err
			}
			i, kind, ok := plan.next(netns.Names(holders))
			if !ok {
				res.SkippedBlips++
				r.opts.Log.Info("no blip: not exactly one holder", "system", d.sys.Name(), "holders", netns.Names(holders))
				continue
			}
			b, err := s.blip(ctx, i, kind)
			if b.At > 0 { // the cut happened
				res.Blips = append(res.Blips, b)
			}
			r.opts.Log.Info("blip", "system", d.sys.Name(), "node", b.Node, "kind", b.Kind, "took", b.Took.Round(time.Millisecond),
				"etcdLeader", b.EtcdLeader, "holder", netns.Names(holders))
			if err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(100*time.Millisecond, time.Until(end), time.Until(next))):
		}
	}
}

// blip cuts follower i off (kind) and heals it. The node's ARP impairment pauses for the
// blip: its relay enters the bridge at a port of its own, which a blackhole does not cover,
// so the node's ARP frames would still pass.
func (s *steadySoak) blip(ctx context.Context, i int, kind string) (Blip, error) {
	d, imp := s.d, s.imp
	n := d.nodes[i]
	b := Blip{Node: n.Name(), Kind: kind}
	if leader, err := etcdLeader(ctx, d.nodes); err == nil {
		b.EtcdLeader = d.nodes[leader].Name()
	}
	if err := imp.pause(ctx, i); err != nil {
		return b, err
	}
	// The heal must happen also when the bench is interrupted meanwhile.
	bg := context.WithoutCancel(ctx)
	at := time.Now()
	b.At = at.Sub(s.start)
	var heal func(context.Context) error
	switch kind {
	case BlipBlackhole:
		var err error
		if heal, err = s.r.h.Blackhole(ctx, n, netns.BothWays); err != nil {
			return b, errors.Join(err, imp.start(bg, i))
		}
		time.Sleep(s.opts.Blackhole)
	case BlipLinkFlap:
		if err := n.LinkDown(ctx); err != nil {
			return b, errors.Join(err, n.LinkUp(bg), imp.start(bg, i))
		}
		heal = n.LinkUp
		time.Sleep(s.opts.Flap)
	default:
		return b, errors.Join(fmt.Errorf("unknown blip kind %q", kind), imp.start(bg, i))
	}
	err := heal(bg)
	b.Took = time.Since(at)
	if err != nil {
		err = fmt.Errorf("healing the %s of %s: %w", kind, n.Name(), err)
	}
	return b, errors.Join(err, imp.start(bg, i))
}

// blipPlan picks the followers to blip: the nodes in turn, the holder skipped, each node
// alternating between a blackhole and a link flap (alternating per blip instead would give
// one follower only blackholes and the other only flaps while the holder stays).
type blipPlan struct {
	nodes []string
	last  int
	done  []int
}

func newBlipPlan(nodes []string) *blipPlan {
	return &blipPlan{nodes: nodes, last: -1, done: make([]int, len(nodes))}
}

// next returns the node after the last one blipped that does not hold the VIP, and its
// blip's kind; false unless exactly one node holds the VIP.
func (p *blipPlan) next(holders []string) (int, string, bool) {
	if len(holders) != 1 {
		return -1, "", false
	}
	for k := 1; k <= len(p.nodes); k++ {
		i := (p.last + k) % len(p.nodes)
		if slices.Contains(holders, p.nodes[i]) {
			continue
		}
		kind := BlipBlackhole
		if p.done[i]%2 == 1 {
			kind = BlipLinkFlap
		}
		p.last = i
		p.done[i]++
		return i, kind, true
	}
	return -1, "", false
}

// attributeMoves sets each move's AfterBlip to the blip whose cut or aftermath it fell in.
func attributeMoves(moves []Move, blips []Blip, aftermath time.Duration) []Move {
	for k := range moves {
		moves[k].AfterBlip = -1
		for j, b := range blips {
			if moves[k].At >= b.At && moves[k].At <= b.At+b.Took+aftermath {
				moves[k].AfterBlip = j
			}
		}
	}
	return moves
}

// impairments keeps the ARP impairment of every node, which a blip pauses, and sums what
// the relays passed and dropped.
type impairments struct {
	h     *netns.Harness
	nodes []*netns.Node
	imp   netns.Impairment
	on    []*netns.ImpairedARP

	relayed, dropped int
}

// start impairs node i's ARP and NDP frames; nothing without loss.
func (m *impairments) start(ctx context.Context, i int) error {
	if m.imp.Loss == 0 || m.on[i] != nil {
		return nil
	}
	a, err := m.h.ImpairARP(ctx, m.nodes[i], m.imp)
	if err != nil {
		return fmt.Errorf("impairing the ARP of %s: %w", m.nodes[i].Name(), err)
	}
	m.on[i] = a
	return nil
}

// pause stops node i's impairment until the next start.
func (m *impairments) pause(ctx context.Context, i int) error {
	a := m.on[i]
	if a == nil {
		return nil
	}
	m.on[i] = nil
	relayed, dropped, err := a.Stop(ctx)
	m.relayed += relayed
	m.dropped += dropped
	if err != nil {
		return fmt.Errorf("pausing the ARP impairment of %s: %w", m.nodes[i].Name(), err)
	}
	return nil
}

func (m *impairments) stopAll(ctx context.Context) error {
	var errs []error
	for i := range m.on {
		errs = append(errs, m.pause(ctx, i))
	}
	return errors.Join(errs...)
}
