// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gardener/gardener-extension-kube-vip/agent/arp"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// The simulation runs a group of agents on one simulated clock, in the manner of
// etcd-io/raft's rafttest: each node's real Elector (decide, step, its reads and writes,
// confirmExpiry, release) against a Lease store with compare-and-swap, stalls and lost
// responses; and, as a model that follows the agent package rule for rule, the keeper (the
// VIP in the kernel with its lifetime, the takeover guard, the fences, the health gate), the
// followers' probers and an L2 segment with loss, delay, one-way cuts and blackholes. The
// followers' and the holder's hearing of each other's probes is arp.Hearing itself.
//
// One goroutine runs at a time. The scheduler hands an elector a command (a step, a Lease
// event, a poke) and waits until the command finishes or blocks in a Lease request; the
// request's answer is an event of its own, at a time drawn from the seed. So a seed replays
// exactly, and a failure names the seed that shows it.

// simEpoch is the simulated clock's start. Deadlines at or after it are simulated ones; the
// few contexts the elector bounds in wall time (context.WithTimeout) are read as the timeout
// they were given.
var simEpoch = time.Date(2030, 1, 1, 0, 0, 0, 123456789, time.UTC)

// mutation switches off one protection, to show that the simulation finds what it guards
// against.
type mutation int

const (
	intact  mutation = iota
	noGuard          // the takeover guard counts the VIP as free at once
	noFence          // the holder never fences itself off
)

// simFaults are the fault kinds a schedule draws from.
type simFault int

const (
	holderBlackholed   simFault = iota // the bridge drops every frame of the holder's port, carrier up; its API path too
	followerBlackholed                 // the same for a follower
	holderOneWay                       // the holder's frames to the others are dropped; the rest works
	apiCut                             // a node's requests to the API server hang; L2 works
	etcdStall                          // the store commits nothing (an etcd election); requests may be lost
	crash                              // the agent process dies and restarts; the kernel keeps the VIP until its lifetime ends
	unhealthy                          // a node's local kube-apiserver dies: it refuses requests and the health gate closes
	lostResponses                      // a third of the answers of the API server are lost on the way back
	simFaultKinds
)

func (f simFault) String() string {
	return [...]string{"holder-blackholed", "follower-blackholed", "holder-one-way", "api-cut", "etcd-stall", "crash",
		"unhealthy", "lost-responses"}[f]
}

// simConfig is one run.
type simConfig struct {
	seed   uint64
	nodes  int
	mutate mutation
	// faults limits the kinds drawn; nil: all.
	faults []simFault
}

// simResult is what a run saw.
type simResult struct {
	violations []string
	// served is how long after the last heal the VIP was on exactly one visible node again.
	served time.Duration
	moves  int
	trace  []string
}

// The shape of a schedule, and the rates of the faults that every schedule has.
const (
	arpLoss        = 0.02
	warmUp         = 4 * time.Second
	faultWindow    = 14 * time.Second
	liveBound      = 8 * time.Second
	moveBound      = time.Second
	traceLines     = 80
	lostProposal   = 0.3 // a request that meets a stalled etcd is lost, never answered
	lostAnswerRate = 0.33
)

type world struct {
	cfg   simConfig
	rng   *rand.Rand
	clock *clocktesting.FakeClock
	now   time.Time
	queue simQueue
	seq   int

	lease      *coordinationv1.Lease
	rv         uint64
	stallUntil time.Time
	lossyUntil time.Time

	nodes      []*simNode
	lastHolder string
	moves      int
	violations []string
	trace      []string
}

type simNode struct {
	name  string
	agent *simAgent // the running process; nil while it is down

	// The kernel: the VIP and when its lifetime runs out.
	vip     bool
	lapseAt time.Time

	blackholed, oneWay, apiCut, refused bool
	missedWatch                         bool // a Lease write happened while its API path was cut
}

// simAgent is one process of the agent on a node: its elector and the model of the rest.
type simAgent struct {
	w    *world
	node *simNode
	e    *Elector

	run     chan func()
	out     chan *simCall // nil: the command finished
	busy    bool
	blocked *simCall // the Lease request it waits for
	pending []func()
	dead    bool
	started bool
	wakeGen int
	spins   int
	spunAt  time.Time

	k     simKeeper
	p     simProber
	ear   arp.Hearing
	inbox []simFrame // requests for the VIP heard (the listener's and the prober's ear)
	// announcements of the VIP by other hosts (gratuitous ARP) heard by the listener
	claims []simFrame
	// answers to this node's probes, with their arrival
	answers []simFrame
	// the guard's last answer from another host
	guardHeard time.Time
	healthy    bool
}

type simFrame struct {
	from string
	at   time.Time
}

// simKeeper is the keeper's state (agent/keeper.go, takeover.go, missing.go).
type simKeeper struct {
	leading, present, suspended, acquiring bool
	term                                   timing.Term
	takeoverSince, missingSince, lastAsked time.Time
	nextSweep                              time.Time
}

// simProber is a follower's prober (arp.Prober.Run).
type simProber struct {
	open                 bool
	heardAt, silentSince time.Time
	heardFrom            string
	peers                arp.Hearing
	trust                arp.Trust // kept across reopens and cuts, as the prober keeps it
	poked                bool
}

type simCall struct {
	op       string
	lease    *coordinationv1.Lease
	deadline time.Time
	reply    chan simAnswer
	answered bool // the caller has its answer; a later one is dropped
}

type simAnswer struct {
	lease *coordinationv1.Lease
	err   error
}

type simEvent struct {
	at  time.Time
	seq int
	fn  func()
}

type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	ev := old[len(old)-1]
	*q = old[:len(old)-1]
	return ev
}

func (w *world) at(t time.Time, fn func()) {
	if t.Before(w.now) {
		t = w.now
	}
	w.seq++
	heap.Push(&w.queue, &simEvent{at: t, seq: w.seq, fn: fn})
}

func (w *world) after(d time.Duration, fn func()) { w.at(w.now.Add(d), fn) }

// between draws a duration in [lo, hi).
func (w *world) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

func (w *world) logf(format string, args ...any) {
	line := fmt.Sprintf("%8.3fs ", w.now.Sub(simEpoch).Seconds()) + fmt.Sprintf(format, args...)
	w.trace = append(w.trace, line)
	if len(w.trace) > traceLines {
		w.trace = w.trace[1:]
	}
}

// simulate runs one fault schedule drawn from cfg.seed and checks that no two nodes answer
// for the VIP, as a bystander on the segment sees it, and that after the last heal one node
// serves it within liveBound.
func simulate(cfg simConfig) simResult {
	w := &world{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 0x6b7669)), now: simEpoch, clock: clocktesting.NewFakeClock(simEpoch)}
	w.lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-vip-agent"}}
	w.rv = 1
	w.lease.ResourceVersion = "1"
	for i := range cfg.nodes {
		n := &simNode{name: fmt.Sprintf("node-%d", i)}
		w.nodes = append(w.nodes, n)
		w.after(w.between(0, 200*time.Millisecond), func() { w.start(n) })
	}
	healed := w.schedule()
	end := healed.Add(liveBound)
	var served, dark time.Time // served again after the heal; nobody visible since
	w.at(end, func() {})
	for w.queue.Len() > 0 {
		ev := heap.Pop(&w.queue).(*simEvent)
		if ev.at.After(end) {
			break
		}
		w.now = ev.at
		w.clock.SetTime(w.now)
		ev.fn()
		w.check()
		switch vis := len(w.visible()); {
		case vis == 1:
			dark = time.Time{}
			if served.IsZero() && !w.now.Before(healed) {
				served = w.now
			}
		case vis == 0 && dark.IsZero():
			dark = w.now
		}
		if len(w.violations) > 0 {
			break
		}
	}
	if len(w.violations) == 0 {
		w.checkServed(served, dark)
	}
	w.stop()
	return simResult{violations: w.violations, served: served.Sub(healed), moves: w.moves, trace: w.trace}
}

// checkServed: one node served the VIP after the last heal, and at the end one serves it,
// visible and named by the Lease, or a move began less than moveBound ago (a false silence
// at 2 % loss, four probes in a row, moves the VIP now and then).
func (w *world) checkServed(served, dark time.Time) {
	vis := w.visible()
	switch {
	case served.IsZero():
		w.violate("nobody served the VIP within %s of the last heal", liveBound)
	case len(vis) == 0 && w.now.Sub(dark) < moveBound:
	case len(vis) != 1:
		w.violate("%d nodes serve the VIP %s after the last heal (want 1)", len(vis), liveBound)
	case holderOf(w.lease) != vis[0].name:
		w.violate("%s serves the VIP but the Lease names %q", vis[0].name, holderOf(w.lease))
	case vis[0].agent == nil || !vis[0].agent.k.leading:
		w.violate("%s serves the VIP without leading", vis[0].name)
	}
}

// visible are the nodes whose kernel holds the VIP and whose answers reach a bystander.
func (w *world) visible() []*simNode {
	var out []*simNode
	for _, n := range w.nodes {
		if n.vip && !n.blackholed && !n.oneWay {
			out = append(out, n)
		}
	}
	return out
}

// check runs after every event: a bystander must never hear two nodes answer for the VIP.
func (w *world) check() {
	if vis := w.visible(); len(vis) >= 2 {
		names := make([]string, len(vis))
		for i, n := range vis {
			names[i] = n.name
		}
		w.violate("two nodes answer for the VIP: %s", strings.Join(names, ", "))
	}
	if h := holderOf(w.lease); h != w.lastHolder {
		if h != "" && w.lastHolder != "" {
			w.moves++
		}
		if h != "" {
			w.lastHolder = h
		}
	}
}

func (w *world) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.logf("VIOLATION: %s", msg)
	w.violations = append(w.violations, fmt.Sprintf("seed %d at %.3fs: %s", w.cfg.seed, w.now.Sub(simEpoch).Seconds(), msg))
}

// schedule draws the faults and returns when the last one heals.
func (w *world) schedule() time.Time {
	kinds := w.cfg.faults
	if kinds == nil {
		for f := range simFaultKinds {
			kinds = append(kinds, f)
		}
	}
	healed := simEpoch.Add(warmUp)
	for range 1 + w.rng.IntN(3) {
		f := kinds[w.rng.IntN(len(kinds))]
		start := simEpoch.Add(warmUp + w.between(0, faultWindow))
		d := w.between(200*time.Millisecond, 3*time.Second)
		pick := w.rng.IntN(len(w.nodes))
		if end := start.Add(d); end.After(healed) {
			healed = end
		}
		w.at(start, func() { w.inject(f, d, pick) })
	}
	return healed
}

// inject starts fault f for d; pick chooses a node where the fault does not name one.
func (w *world) inject(f simFault, d time.Duration, pick int) {
	n := w.nodes[pick]
	switch f {
	case holderBlackholed, holderOneWay:
		if h := w.byName(holderOf(w.lease)); h != nil {
			n = h
		}
	case followerBlackholed:
		for i := range w.nodes {
			if c := w.nodes[(pick+i)%len(w.nodes)]; c.name != holderOf(w.lease) {
				n = c
				break
			}
		}
	}
	// A node cut off whose agent is dead too keeps answering for the VIP from its kernel
	// until the address's lifetime ends, unheard, and nothing of the agent can remove it: a
	// follower takes the Lease early on the silence, and a heal before that lifetime ends
	// shows two answerers. The rule assumes one of the two faults at a time (docs/agent.md).
	cut := f == holderBlackholed || f == followerBlackholed || f == holderOneWay
	if (cut && n.agent == nil) || (f == crash && (n.blackholed || n.oneWay)) {
		w.logf("fault %s on %s skipped: its agent is down or it is cut off", f, n.name)
		return
	}
	w.logf("fault %s on %s for %s", f, n.name, d)
	switch f {
	case holderBlackholed, followerBlackholed:
		if n.blackholed {
			return
		}
		n.blackholed, n.apiCut = true, true
		w.after(d, func() { n.blackholed = false; w.apiHealed(n); w.logf("healed %s", n.name) })
	case holderOneWay:
		if n.oneWay {
			return
		}
		n.oneWay = true
		w.after(d, func() { n.oneWay = false; w.logf("healed %s", n.name) })
	case apiCut:
		if n.apiCut {
			return
		}
		n.apiCut = true
		w.after(d, func() { w.apiHealed(n); w.logf("healed %s", n.name) })
	case etcdStall:
		w.stallUntil = maxTime(w.stallUntil, w.now.Add(d))
	case lostResponses:
		w.lossyUntil = maxTime(w.lossyUntil, w.now.Add(d))
	case crash:
		if n.agent == nil {
			return
		}
		w.kill(n)
		w.after(d, func() { w.start(n) })
	case unhealthy:
		if n.refused {
			return
		}
		n.refused = true
		if a := n.agent; a != nil {
			a.setHealthy(false)
		}
		w.after(d, func() {
			n.refused = false
			if a := n.agent; a != nil {
				a.setHealthy(true)
			}
			w.logf("healed %s", n.name)
		})
	}
}

func (w *world) byName(name string) *simNode {
	for _, n := range w.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// apiHealed ends a cut of n's API path; its watch catches up with what it missed.
func (w *world) apiHealed(n *simNode) {
	n.apiCut = false
	if n.missedWatch && n.agent != nil {
		n.missedWatch = false
		a, l := n.agent, w.lease.DeepCopy()
		w.after(w.between(time.Millisecond, 20*time.Millisecond), func() { w.exec(a, a.observe(l)) })
	}
}

// --- the L2 segment ---

// frame reports whether one frame from one node reaches another.
func (w *world) frame(from, to *simNode) bool {
	if from.blackholed || from.oneWay || to.blackholed {
		return false
	}
	return w.rng.Float64() >= arpLoss
}

// frameDelay is a frame's way through the segment: mostly sub-millisecond, sometimes tens
// of milliseconds (a busy softirq), within timing.TakeoverReplyBound both ways.
func (w *world) frameDelay() time.Duration {
	if w.rng.IntN(20) == 0 {
		return w.between(5*time.Millisecond, 20*time.Millisecond)
	}
	return w.between(100*time.Microsecond, 2*time.Millisecond)
}

// broadcast sends a request for the VIP from n (a follower's probe or a guard's): every
// node that gets it hears it, and a kernel that holds the VIP answers.
func (w *world) broadcast(n *simNode, answer func(from *simNode, at time.Time)) {
	for _, m := range w.nodes {
		if m == n || !w.frame(n, m) {
			continue
		}
		arrive := w.now.Add(w.frameDelay())
		if a := m.agent; a != nil {
			a.inbox = append(a.inbox, simFrame{from: n.name, at: arrive})
		}
		if m.vip && w.frame(m, n) {
			answer(m, arrive.Add(w.frameDelay()))
		}
	}
}

// --- processes ---

func (w *world) start(n *simNode) {
	a := &simAgent{w: w, node: n, run: make(chan func()), out: make(chan *simCall), healthy: !n.refused}
	n.agent = a
	e, err := New(Config{
		Leases: simLeases{a}, Name: "kube-vip-agent", Identity: n.name, MAC: n.name, Timings: timing.Defaults(), Clock: w.clock, Log: logr.Discard(),
		Eligible: a.eligible, HoldThroughStall: a.eligible, VIPAnswered: a.answered, VIPSilence: a.silence,
		Callbacks: Callbacks{
			OnLeading: a.leading, OnRenewing: a.renewing, OnAcquiring: a.acquiringCB, OnAcquireFailed: a.acquireFailed,
			OnStoppedLeading: a.following,
			OnAcquired: func(_ *coordinationv1.Lease, acq Acquisition) {
				w.logf("%s acquired: %s", n.name, acq)
			},
		},
	})
	if err != nil {
		panic(err) // the defaults are valid
	}
	e.jitter = func(d time.Duration) time.Duration { return d + time.Duration(w.rng.Int64N(int64(d/2)+1)) }
	a.e = e
	go func() {
		for fn := range a.run {
			fn()
			a.out <- nil
		}
	}()
	// A process that starts removes a VIP its kernel still has (agent.removeStaleVIP keeps
	// it only for a Lease that names this node and a renewal of its own).
	if n.vip {
		w.setVIP(n, false, "restart")
	}
	w.logf("%s starts", n.name)
	w.exec(a, a.sync)
	w.tickEvery(a, timing.KeeperTick, a.keeperTick)
	w.tickEvery(a, timing.FenceCheckInterval, a.fastTick)
	w.tickEvery(a, timing.FollowerProbeInterval, a.proberTick)
}

// tickEvery runs fn every d, from a phase drawn at random, while a lives.
func (w *world) tickEvery(a *simAgent, d time.Duration, fn func()) {
	var tick func()
	tick = func() {
		if a.dead {
			return
		}
		fn()
		w.after(d, tick)
	}
	w.after(w.between(0, d), tick)
}

func (w *world) kill(n *simNode) {
	a := n.agent
	n.agent = nil
	a.dead = true
	w.logf("%s stops (VIP %t)", n.name, n.vip)
	if a.blocked != nil {
		// Its command ends here: every call it makes now fails at once, and its callbacks
		// change nothing.
		a.blocked.answered = true
		a.blocked.reply <- simAnswer{err: errProcessGone}
		for c := <-a.out; c != nil; c = <-a.out {
		}
	}
	close(a.run)
}

// stop ends every process's goroutine.
func (w *world) stop() {
	for _, n := range w.nodes {
		if n.agent != nil {
			w.kill(n)
		}
	}
}

// exec runs fn in a's goroutine, after the command it runs now if any.
func (w *world) exec(a *simAgent, fn func()) {
	if a.dead {
		return
	}
	if a.busy {
		a.pending = append(a.pending, fn)
		return
	}
	a.busy = true
	a.run <- fn
	w.await(a)
}

// await waits until a's command finishes or blocks in a Lease request.
func (w *world) await(a *simAgent) {
	if c := <-a.out; c != nil {
		a.blocked = c
		w.serve(a, c)
		return
	}
	a.busy, a.blocked = false, nil
	w.rewake(a)
	if len(a.pending) > 0 {
		fn := a.pending[0]
		a.pending = a.pending[1:]
		w.exec(a, fn)
	}
}

// rewake sets a's timer to the elector's next wakeup, as Run does after every step.
func (w *world) rewake(a *simAgent) {
	if !a.started {
		return
	}
	d := a.e.nextWakeup()
	if d == 0 {
		if a.spunAt.Equal(w.now) {
			a.spins++
		} else {
			a.spins, a.spunAt = 0, w.now
		}
		if a.spins > 1000 {
			w.violate("%s's elector wakes up at once, again and again", a.node.name)
			return
		}
	}
	a.wakeGen++
	gen := a.wakeGen
	w.after(d, func() {
		if a.wakeGen == gen {
			w.exec(a, a.step)
		}
	})
}

func (a *simAgent) step() { a.e.step(context.Background()) }

// sync is the elector's start (Elector.sync without its wall-clock retry): read the Lease,
// then step; a failed read is retried a retry period later.
func (a *simAgent) sync() {
	lease, err := a.e.get(context.Background())
	if err != nil {
		a.w.after(timing.Defaults().RetryPeriod, func() { a.w.exec(a, a.sync) })
		return
	}
	a.e.observe(lease, true)
	a.started = true
	a.e.step(context.Background())
}

// observe is a watch event: the elector records it and steps, as Run does.
func (a *simAgent) observe(l *coordinationv1.Lease) func() {
	return func() {
		if !a.started {
			return
		}
		a.e.observe(l, false)
		a.e.step(context.Background())
	}
}

// poke asks the elector to step (Elector.Poke, RenewNow), from a callback or a tick.
func (a *simAgent) poke() {
	a.w.after(0, func() {
		if a.started {
			a.w.exec(a, a.step)
		}
	})
}

// --- the Lease store ---

type simLeases struct{ a *simAgent }

func (l simLeases) Get(ctx context.Context, _ string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	return l.call(ctx, "get", nil)
}

func (l simLeases) Create(ctx context.Context, lease *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return l.call(ctx, "create", lease)
}

func (l simLeases) Update(ctx context.Context, lease *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return l.call(ctx, "update", lease)
}

func (l simLeases) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

var errProcessGone = errors.New("the process is gone")

func (l simLeases) call(ctx context.Context, op string, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	a := l.a
	if a.dead {
		return nil, errProcessGone
	}
	c := &simCall{op: op, lease: lease.DeepCopy(), deadline: a.w.deadline(ctx), reply: make(chan simAnswer, 1)}
	a.out <- c
	r := <-c.reply
	return r.lease, r.err
}

// deadline reads ctx's deadline on the simulated clock.
func (w *world) deadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	switch {
	case !ok:
		return w.now.Add(time.Hour)
	case !d.Before(simEpoch):
		return d
	}
	return w.now.Add(time.Until(d).Round(10 * time.Millisecond))
}

// serve carries a request of a's to the store and its answer back. The caller gives up
// at its deadline, whatever the store does with the request later.
func (w *world) serve(a *simAgent, c *simCall) {
	n := a.node
	w.timeout(a, c)
	switch {
	case n.refused:
		w.after(time.Millisecond, func() {
			w.answer(a, c, simAnswer{err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED)})
		})
	case n.apiCut:
	default:
		w.after(w.between(time.Millisecond, 5*time.Millisecond), func() { w.commit(a, c) })
	}
}

// commit applies a request that reached the store; a stalled store holds it until it has a
// leader again, or loses it.
func (w *world) commit(a *simAgent, c *simCall) {
	if w.now.Before(w.stallUntil) {
		if w.rng.Float64() < lostProposal {
			return
		}
		w.at(w.stallUntil.Add(w.between(time.Millisecond, 30*time.Millisecond)), func() { w.commit(a, c) })
		return
	}
	ans := w.apply(a.node, c)
	back := w.now.Add(w.between(time.Millisecond, 5*time.Millisecond))
	lost := w.now.Before(w.lossyUntil) && w.rng.Float64() < lostAnswerRate
	if lost {
		return
	}
	w.at(back, func() {
		if !a.node.apiCut {
			w.answer(a, c, ans)
		}
	})
}

// apply is the API server's handling of one request, with optimistic concurrency.
func (w *world) apply(from *simNode, c *simCall) simAnswer {
	switch c.op {
	case "get":
		return simAnswer{lease: w.lease.DeepCopy()}
	case "create":
		return simAnswer{err: apierrors.NewAlreadyExists(leases, c.lease.Name)}
	}
	if c.lease.ResourceVersion != w.lease.ResourceVersion {
		return simAnswer{err: apierrors.NewConflict(leases, c.lease.Name, nil)}
	}
	w.store(c.lease)
	w.logf("%s wrote the Lease: holder %q", from.name, holderOf(w.lease))
	for _, n := range w.nodes {
		a := n.agent
		switch {
		case a == nil:
		case n.apiCut:
			n.missedWatch = true
		default:
			l := w.lease.DeepCopy()
			w.after(w.between(time.Millisecond, 15*time.Millisecond), func() { w.exec(a, a.observe(l)) })
		}
	}
	return simAnswer{lease: w.lease.DeepCopy()}
}

// store keeps the Lease as the API server does: serialized (MicroTime keeps microseconds).
func (w *world) store(l *coordinationv1.Lease) {
	raw, err := json.Marshal(l)
	if err != nil {
		panic(err) // a Lease always serializes
	}
	stored := &coordinationv1.Lease{}
	if err := json.Unmarshal(raw, stored); err != nil {
		panic(err)
	}
	w.rv++
	stored.ResourceVersion = strconv.FormatUint(w.rv, 10)
	w.lease = stored
}

// timeout answers c with its context's error at its deadline.
func (w *world) timeout(a *simAgent, c *simCall) {
	w.at(c.deadline, func() { w.answer(a, c, simAnswer{err: context.DeadlineExceeded}) })
}

func (w *world) answer(a *simAgent, c *simCall, ans simAnswer) {
	if a.dead || c.answered {
		return // the process is gone, or the caller gave up
	}
	c.answered = true
	a.blocked = nil
	c.reply <- ans
	w.await(a)
}

// --- the rest of the agent, modelled ---

func (a *simAgent) eligible() bool { return a.healthy }

// answered is election.Config.VIPAnswered: another host answers for the VIP now.
func (a *simAgent) answered(context.Context) bool {
	for _, m := range a.w.nodes {
		if m != a.node && m.vip && !m.blackholed && !m.oneWay && !a.node.blackholed {
			return true
		}
	}
	return false
}

// silence is election.Config.VIPSilence (arp.Prober.Silence). The simulation does not model
// the prober's confirmation burst: a silence counts as confirmed when the poke comes, which
// makes its early takeovers ConfirmSilence earlier than the agent's, never later.
func (a *simAgent) silence() Silence {
	p := &a.p
	if p.peers.SilentFor(a.w.now, timing.PeerSilence) {
		return Silence{SilentSince: p.silentSince, Confirmed: p.poked}
	}
	return Silence{HeardAt: p.heardAt, HeardFrom: p.heardFrom, SilentSince: p.trust.Apply(p.silentSince), Confirmed: p.poked}
}

// proberTick is one tick of a follower's prober (arp.Prober.Run): it probes while it does
// not lead.
func (a *simAgent) proberTick() {
	w, p := a.w, &a.p
	if a.k.leading {
		if p.open {
			p.open, p.silentSince = false, time.Time{}
		}
		return
	}
	now := w.now
	if !p.open {
		*p = simProber{open: true, silentSince: now, trust: p.trust}
	}
	answered := false
	for _, f := range a.answers {
		if !f.at.After(now) {
			answered = true
			p.heardFrom = f.from
		}
	}
	a.answers = a.later(a.answers, now)
	w.broadcast(a.node, func(from *simNode, at time.Time) {
		a.answers = append(a.answers, simFrame{from: from.name, at: at})
	})
	if answered {
		p.silentSince, p.heardAt, p.poked = now, now, false
	}
	if p.peers.SilentFor(now, timing.PeerSilence) {
		*p = simProber{open: true, silentSince: now, trust: p.trust}
		p.trust.Cut(now)
	}
	for _, f := range a.heard(now) {
		p.peers.Heard(f, now)
		a.ear.Heard(f, now) // the listener hears while following too
	}
	p.trust.Heard(p.peers)
	if !p.poked && now.Sub(a.silence().SilentSince) >= timing.EarlyTakeoverSilence {
		p.poked = true
		a.poke()
	}
}

// later keeps the frames that arrive after now.
func (a *simAgent) later(frames []simFrame, now time.Time) []simFrame {
	var out []simFrame
	for _, f := range frames {
		if f.at.After(now) {
			out = append(out, f)
		}
	}
	return out
}

// heard drains the requests for the VIP that reached this node by now.
func (a *simAgent) heard(now time.Time) []string {
	var macs []string
	for _, f := range a.inbox {
		if !f.at.After(now) {
			macs = append(macs, f.from)
		}
	}
	a.inbox = a.later(a.inbox, now)
	return macs
}

// fastTick is the holder's listener (arp.Listener.Run, every timing.FenceCheckInterval)
// and the takeover guard's probing (every timing.TakeoverProbeInterval).
func (a *simAgent) fastTick() {
	w, k := a.w, &a.k
	now := w.now
	if k.leading {
		for _, mac := range a.heard(now) {
			a.ear.Heard(mac, now)
		}
	}
	claimed := false
	for _, f := range a.claims {
		claimed = claimed || !f.at.After(now)
	}
	a.claims = a.later(a.claims, now)
	switch {
	case claimed && k.leading && w.cfg.mutate != noFence && a.fence():
		a.ear = arp.Hearing{}
	case !a.ear.Deaf(now):
	case !k.leading:
		a.ear = arp.Hearing{}
	case w.cfg.mutate == noFence:
	case a.fence():
		a.ear = arp.Hearing{}
	}
	if a.guarding() {
		w.broadcast(a.node, func(_ *simNode, at time.Time) {
			w.at(at, func() { a.guardHeard = maxTime(a.guardHeard, at) })
		})
		a.reconcile()
	}
}

func (a *simAgent) guarding() bool {
	k := &a.k
	return !k.suspended && (k.acquiring || (k.leading && !k.present && !k.term.End.IsZero()))
}

// free is the guard's verdict: TakeoverSilence without an answer since the takeover began.
func (a *simAgent) free() bool {
	if a.w.cfg.mutate == noGuard {
		return true
	}
	return !a.w.now.Before(maxTime(a.k.takeoverSince, a.guardHeard).Add(timing.TakeoverSilence))
}

// keeperTick is keeper.Run's tick.
func (a *simAgent) keeperTick() { a.reconcile() }

// reconcile is keeper.reconcileLocked and takeover.
func (a *simAgent) reconcile() {
	w, k, n := a.w, &a.k, a.node
	now := w.now
	switch {
	case k.term.End.IsZero():
		if n.vip && !now.Before(k.nextSweep) {
			k.nextSweep = now.Add(time.Second)
			w.setVIP(n, false, "sweep")
		}
	case k.suspended:
	case !now.Before(k.term.End):
		a.drop("the term ended")
		k.term = timing.Term{}
	case !k.present:
		if !a.free() || a.awaitingWrite() {
			return
		}
		k.present = true
		w.setVIP(n, true, "takeover")
		a.refresh()
		a.announce()
	case !now.After(k.term.RefreshBy):
		a.refresh()
	}
}

func (a *simAgent) awaitingWrite() bool {
	return !a.k.missingSince.IsZero() && a.k.term.Start.Before(a.k.missingSince)
}

// announce sends the takeover's burst of gratuitous ARP and the periodic ones after it
// (keeper.announceLocked), while the VIP is on in the term.
func (a *simAgent) announce() {
	w := a.w
	from := w.now
	offsets := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, time.Second}
	for at := 6 * time.Second; at < 2*time.Minute; at += 5 * time.Second {
		offsets = append(offsets, at)
	}
	for _, off := range offsets {
		w.at(from.Add(off), func() {
			k := &a.k
			if a.dead || !k.present || !k.leading || !w.now.Before(k.term.End) {
				return
			}
			for _, m := range w.nodes {
				if m != a.node && m.agent != nil && w.frame(a.node, m) {
					m.agent.claims = append(m.agent.claims, simFrame{from: a.node.name, at: w.now.Add(w.frameDelay())})
				}
			}
		})
	}
}

// refresh sets the VIP's kernel lifetime from now; the kernel removes it up to
// timing.KernelExpiryLateness after that runs out.
func (a *simAgent) refresh() {
	w, n := a.w, a.node
	n.lapseAt = w.now.Add(timing.Defaults().VIPLifetime + w.between(0, timing.KernelExpiryLateness))
	at := n.lapseAt
	w.at(at, func() {
		if n.vip && n.lapseAt.Equal(at) {
			w.setVIP(n, false, "its lifetime ran out")
		}
	})
}

func (a *simAgent) drop(reason string) {
	a.k.present = false
	if a.node.vip {
		a.w.setVIP(a.node, false, reason)
	}
}

func (w *world) setVIP(n *simNode, on bool, why string) {
	n.vip = on
	w.logf("%s VIP %t (%s)", n.name, on, why)
}

// fence is keeper.Fence.
func (a *simAgent) fence() bool {
	k := &a.k
	if k.term.End.IsZero() || k.suspended || !k.present || !a.w.now.Before(k.term.End) {
		return false
	}
	a.drop("fenced")
	a.missing()
	a.reconcile()
	return true
}

// missing is keeper.missingLocked and askRenewalLocked.
func (a *simAgent) missing() {
	k, now := &a.k, a.w.now
	k.present, k.takeoverSince, k.missingSince = false, now, now
	if k.lastAsked.IsZero() || now.Sub(k.lastAsked) >= time.Second {
		k.lastAsked = now
		a.e.RenewNow()
		a.poke()
	}
}

func (a *simAgent) setHealthy(healthy bool) {
	k := &a.k
	was := k.suspended
	a.healthy = healthy
	k.suspended = !healthy
	switch {
	case k.suspended:
		a.drop("not healthy")
		if !was && !k.term.End.IsZero() {
			k.missingSince = a.w.now
		}
	case k.leading:
		k.takeoverSince = a.w.now
		if was && a.awaitingWrite() && (k.lastAsked.IsZero() || a.w.now.Sub(k.lastAsked) >= time.Second) {
			k.lastAsked = a.w.now
			a.e.RenewNow()
		}
	}
	a.poke()
}

// The elector's callbacks (keeper.Leading, Renewing, Acquiring, AcquireFailed, Following).

func (a *simAgent) leading(term timing.Term, newTerm bool) {
	k, now := &a.k, a.w.now
	if a.dead {
		return
	}
	k.term = term
	if newTerm {
		k.leading = true
		if !k.acquiring {
			k.takeoverSince = now
		}
		k.acquiring = false
		k.missingSince = time.Time{}
		a.w.logf("%s leads", a.node.name)
	}
	if !term.Start.Before(k.missingSince) {
		k.missingSince = time.Time{}
	}
	a.reconcile()
}

func (a *simAgent) renewing(time.Time) {
	k := &a.k
	if a.dead {
		return
	}
	if !k.term.End.IsZero() && !k.suspended && k.present && a.w.now.Before(k.term.End) {
		a.refresh()
	}
}

func (a *simAgent) acquiringCB() {
	k := &a.k
	if a.dead || k.leading || k.suspended {
		return
	}
	k.takeoverSince, k.acquiring = a.w.now, true
}

func (a *simAgent) acquireFailed() { a.k.acquiring = false }

func (a *simAgent) following(reason string) bool {
	k := &a.k
	if a.dead {
		return false // a process that is gone removes nothing
	}
	k.term = timing.Term{}
	a.drop(reason)
	k.leading = false
	a.w.logf("%s follows: %s", a.node.name, reason)
	return true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
