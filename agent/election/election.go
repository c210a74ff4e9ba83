// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package election elects one leader among the agents through a coordination.k8s.io Lease.
//
// It follows client-go's leader election model (a Lease, the node name as identity,
// optimistic concurrency on the resourceVersion, release on cancel) but differs where a
// virtual IP needs it:
//
//   - Followers watch the Lease instead of polling it. A released Lease is taken over the
//     moment the release is seen, and the steady state costs one request per retry period
//     (the leader's renewal) for the whole group.
//   - Timings are sub-second. A follower takes over once it has not seen the record change
//     for LeaseDuration, measured on its own monotonic clock from the moment it saw the
//     change, so clock skew between nodes does not matter.
//   - The leader learns, with every renewal, until when it may act as leader: the start of
//     its last successful renewal plus RenewDeadline. Because a renewal is seen by a
//     follower only after it started, and RenewDeadline < LeaseDuration, no follower can
//     take over before that instant.
//
// Leadership changes are reported through Callbacks, synchronously, in the election's own
// goroutine: OnStoppedLeading returns before the Lease is released, and the Lease is only
// released when it reports that what the leader held is gone; otherwise the Lease expires.
package election

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// Config configures an Elector.
type Config struct {
	// Leases is the client for the Lease's namespace.
	Leases LeaseClient
	// Name is the name of the Lease.
	Name string
	// Identity is this candidate's identity, the node name.
	Identity string
	// Timings are the election and VIP timings. A follower waits LeaseDuration, or the
	// leader's own lease duration if that is longer, after the last change of the Lease
	// it saw before it takes over; the leader's term ends RenewDeadline after the start of
	// its last successful renewal; RetryPeriod is the interval of its renewals.
	Timings timing.Timings
	// Eligible reports whether this candidate may take the lead now (for example, whether
	// its local kube-apiserver is healthy). Nil means always.
	Eligible func() bool
	// MayKeep reports whether this candidate, while it leads, may go on leading; a leader
	// that may not ends its term and releases the Lease. Nil means Eligible. It may be
	// looser than Eligible (hysteresis), never a reason to skip a renewal: the term still
	// ends RenewDeadline after the last successful one.
	MayKeep func() bool
	// Yield reports whether this candidate should leave the lead to another one that can
	// take it, for example because its node's etcd member leads the etcd cluster: when
	// that node fails, etcd must elect a new leader before any Lease write succeeds, so
	// holding the VIP there puts two elections in series. Asked with leading true, it says
	// whether a leader should offer the lead (it may demand a confirmed signal); with
	// false, whether a follower should defer. A leader that should yield marks its renewals
	// with YieldAnnotation, and keeps leading: any follower that is eligible and need not
	// defer itself takes such a Lease at once, and the leader stops when it sees the new
	// holder (the new holder's takeover guard waits while the old one still answers for the
	// VIP). Nobody eligible, nothing changes: the offer never blanks the VIP. A follower that
	// should defer takes a release or an expired Lease YieldDelay later than the others, and
	// ignores offers. Nil means never.
	Yield func(leading bool) bool
	// HoldThroughStall reports whether this candidate, as leader, may keep leading past the
	// end of its term while its renewals stall (time out or fail without a verdict on the
	// Lease: an etcd election), up to timing.StalledWriteHold; the agent says yes where the
	// takeover guard protects the VIP and the health gate holds. A conflict whose re-read
	// names another holder, or a definite rejection, still ends the term. Nil means never.
	HoldThroughStall func() bool
	// VIPAnswered reports whether another host answers for the VIP now (a probe of the
	// takeover guard). A follower whose read of an expired Lease was slow leaves the holder
	// time to renew (timing.StalledTakeoverDelay) only while one does: a holder that holds
	// through a stall keeps its VIP on and answers for it, whereas one whose node lost its
	// link or died serves nobody, and waiting for it lengthens the outage (the cut node
	// led etcd, so the read waited for etcd's election). Nil means one always does.
	VIPAnswered func(ctx context.Context) bool
	// VIPSilence reports what this candidate's prober heard of the VIP while it follows. A
	// follower that heard the VIP answer after it first saw the holder's name, and then
	// heard nothing for timing.EarlyTakeoverSilence nor to the confirmation burst (Confirmed),
	// takes the Lease before its term expires (a holder whose link went down serves nobody).
	// Nil means never early.
	VIPSilence func() Silence
	// MAC is this candidate's NIC, recorded in its acquisition: a follower's early takeover
	// needs an answer from the holder's own MAC, not the previous holder's late one. Empty
	// records none, and followers then take any answer (an older agent's record).
	MAC string
	// Fallbacks reach the Lease through other kube-apiservers of the cluster (the other
	// control-plane nodes'). They are used for one thing only: to release the Lease when
	// the write through Leases fails (the local kube-apiserver died), so that a follower
	// takes over at once instead of after the lease duration. It is called at the release,
	// so that the list can follow the control plane's nodes. Optional.
	Fallbacks func() []LeaseClient
	// Callbacks receive the leadership changes.
	Callbacks Callbacks
	// Clock is the clock; nil means the real one.
	Clock clock.Clock
	// Log receives one line per transition.
	Log logr.Logger
}

// Silence is what a follower heard of the VIP on its L2 segment.
type Silence struct {
	// HeardAt is when another host last answered for the VIP (any family); zero for never.
	HeardAt time.Time
	// HeardFrom is the MAC address that answered at HeardAt.
	HeardFrom string
	// SilentSince is when every family of the VIP was last answered, or when this follower
	// began to probe it if that is later; zero while it does not probe them all.
	SilentSince time.Time
	// Confirmed says that every family's silence outlasted its confirmation burst
	// (timing.ConfirmProbes): only then is it evidence for the early takeover.
	Confirmed bool
	// CutAt is when this follower was last cut off itself on L2, as far as it can tell (its
	// probe failed, or it heard neither its peers nor the holder); zero for never. It takes
	// no offer for OfferHoldDown after that.
	CutAt time.Time
}

// Callbacks receive leadership changes. They run in the election's goroutine and must
// return quickly.
type Callbacks struct {
	// OnLeading is called after every successful acquisition or renewal with the term it
	// gives (timing.Timings.TermFrom): until when this candidate is leader unless renewed
	// again, and until when it may refresh the VIP. newTerm is true on the
	// acquisition that starts a term.
	OnLeading func(term timing.Term, newTerm bool)
	// OnRenewing is called right before the leader writes a renewal that, if it succeeds,
	// gives the term that starts at start. The write may commit although the leader dies
	// before it learns so; followers then take over a lease duration after it, so the VIP
	// must live on from here (package timing, "A renewal on the wire").
	OnRenewing func(start time.Time)
	// OnAcquiring is called right before a follower writes an acquisition, and
	// OnAcquireFailed when that write failed. Between them the keeper may start its
	// takeover guard, whose verdict it uses only after OnLeading.
	OnAcquiring     func()
	OnAcquireFailed func()
	// OnStoppedLeading is called when a term ends, before the Lease is released. It
	// reports whether the leader's resources are gone; only then is the Lease released,
	// otherwise it is left to expire.
	OnStoppedLeading func(reason string) (released bool)
	// OnNewLeader is called when the holder seen in the Lease changes ("" when released).
	OnNewLeader func(identity string)
	// OnAcquired is called after OnLeading at the start of a term with the Lease as this
	// candidate wrote it and why it took it (the Lease's AcquiredAnnotation).
	OnAcquired func(lease *coordinationv1.Lease, a Acquisition)
}

// Validate checks the timings and the required fields.
func (c *Config) Validate() error {
	var errs []error
	if c.Leases == nil {
		errs = append(errs, errors.New("a Lease client is required"))
	}
	if c.Name == "" || c.Identity == "" {
		errs = append(errs, errors.New("the Lease name and the identity are required"))
	}
	for _, p := range c.Timings.Problems() {
		errs = append(errs, fmt.Errorf("%s (%s) %s", p.Field, p.Value, p.Message))
	}
	return errors.Join(errs...)
}

// Elector runs the election for one candidate.
type Elector struct {
	cfg   Config
	clock clock.Clock
	log   logr.Logger

	// Owned by the Run goroutine.
	observed     *coordinationv1.Lease
	observedAt   time.Time
	leading      bool
	renewStarted time.Time // start of the last successful acquisition or renewal
	// renewLate: the last successful write completed after its term's RefreshBy, so the
	// VIP could not be refreshed in that term and would lapse before the next regular
	// renewal; the leader renews again at once instead of a retry period later.
	renewLate bool
	// renewAsked: the keeper asked for a renewal at once (RenewNow); the next write clears it.
	renewAsked atomic.Bool
	// failedAcquisitions counts this follower's failed takeover writes since its last
	// success (followerRetry).
	failedAcquisitions int
	// createRefused: creating the missing Lease was forbidden (see noteCreateFailure).
	createRefused bool
	// stalled: the renewals of the current term stall and the term is held through them
	// (Config.HoldThroughStall, timing.StalledTerm); lastAttempt is when the last renewal
	// attempt started, to pace the retries.
	stalled   bool
	stalledAt time.Time
	// stalledSince mirrors stalledAt (Unix ns) while a leader holds through a stall, 0
	// otherwise, for StalledHold.
	stalledSince atomic.Int64
	lastAttempt  time.Time
	// stallNotBefore: a follower's read before a takeover stalled; it does not take the
	// Lease for want of renewals before this (confirmExpiry).
	stallNotBefore time.Time
	// gaveTimeTo is the observedAt of the last record whose holder this follower gave time
	// to renew before a takeover (confirmExpiry): once per record.
	gaveTimeTo time.Time
	// resignedAt is when this candidate last gave the lead up because it was not eligible
	// (see heldDown).
	resignedAt time.Time
	// ineligibleAt is when this candidate was last seen not eligible after it had been
	// eligible once (see recentlyUnfit): the wait for the first probe at start is no
	// crash.
	ineligibleAt time.Time
	wasEligible  bool
	lastHolder   string
	holderSeenAt time.Time // when lastHolder was first seen (view.earlyAt)
	// earlyFailedAt: when the last early takeover write failed; the record is left to its
	// expiry unless a silence begins after it (takeEarly, view.earlyAt).
	earlyFailedAt time.Time
	// takingEarly: the write under way is an early takeover's (its Acquisition's reason).
	takingEarly bool
	// releaseSeen: the Lease as last seen is a release record (see isRelease). Only a
	// release may be taken at once; an unheld Lease that was created (after a deletion, or
	// at bootstrap) may hide a leader whose term still runs.
	releaseSeen bool
	// lastWrite is the renewTime of the last record this process tried to write (a write
	// that timed out may still have reached the API server). A Lease that names this
	// candidate is its own only if it carries that record; otherwise somebody else wrote it
	// (by hand, from a backup, or an earlier process) and it is waited for like any other
	// holder's.
	lastWrite *metav1.MicroTime

	// jitter stretches a follower's retry at random (followerRetry); a simulation draws it
	// from its seed.
	jitter func(time.Duration) time.Duration

	poke chan struct{}
	// rewatch restarts the watch from the resourceVersion sent (rewatchIfBehind).
	rewatch chan string
}

// New returns an Elector for the configuration.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Eligible == nil {
		cfg.Eligible = func() bool { return true }
	}
	if cfg.MayKeep == nil {
		cfg.MayKeep = cfg.Eligible
	}
	return &Elector{
		cfg: cfg, clock: cfg.Clock, log: cfg.Log,
		jitter: func(d time.Duration) time.Duration { return wait.Jitter(d, 0.5) },
		poke:   make(chan struct{}, 1), rewatch: make(chan string, 1),
	}, nil
}

// RenewNow asks a leader to renew at once rather than at its next regular renewal: the
// keeper found its VIP missing and adds it back only in a term that a write of its own
// began after that (the compare-and-swap then keeps a follower's early write out). One
// write per request; a follower ignores it. It never blocks.
func (e *Elector) RenewNow() {
	e.renewAsked.Store(true)
	e.Poke()
}

// Poke asks the election to re-evaluate at once, for example after the eligibility
// changed. It never blocks.
func (e *Elector) Poke() {
	select {
	case e.poke <- struct{}{}:
	default:
	}
}

const (
	// LeaseDurationAnnotation carries the writer's lease duration in milliseconds, exactly;
	// spec.leaseDurationSeconds rounds it up to whole seconds.
	LeaseDurationAnnotation = "kube-vip-agent.gardener.cloud/lease-duration-ms"
	// ReleasedByAnnotation marks a release record with the identity of the releasing
	// holder. Only a record that carries it is taken without waiting: a holder cleared by
	// hand may hide a leader whose term still runs.
	ReleasedByAnnotation = "kube-vip-agent.gardener.cloud/released-by"
	// YieldAnnotation, on a held Lease, names the holder that offers the lead to any other
	// eligible candidate (Config.Yield); only that holder's renewals write it.
	YieldAnnotation = "kube-vip-agent.gardener.cloud/yield"
	// maxPublishedLeaseDuration caps the lease duration a follower accepts from the Lease,
	// so that a hand-edited value cannot stop every takeover.
	maxPublishedLeaseDuration = time.Minute
)

// Run takes part in the election until ctx is done. On the way out a leader ends its term
// (OnStoppedLeading) and then releases the Lease, so that a follower takes over at once.
func (e *Elector) Run(ctx context.Context) error {
	events := make(chan observation, 16)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()

	if err := e.sync(ctx); err != nil {
		return err
	}
	go e.watch(watchCtx, e.observed.ResourceVersion, events)

	timer := e.clock.NewTimer(0)
	defer timer.Stop()
	for {
		e.step(ctx)
		wait := e.nextWakeup()
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(wait)

		select {
		case <-ctx.Done():
			e.shutdown()
			return nil
		case ev := <-events:
			e.observe(ev.lease, ev.authoritative)
		case <-e.poke:
		case <-timer.C():
		}
	}
}

// view is the state decide looks at. It asks Config's functions (MayKeep for a leader,
// Eligible and Yield for a follower) and draws the follower's retry.
func (e *Elector) view() view {
	v := view{
		timings: e.cfg.Timings, identity: e.cfg.Identity, leading: e.leading,
		exists: e.observed != nil, holder: holderOf(e.observed), ownRecord: e.ownRecord(),
		releaseSeen: e.releaseSeen, observedAt: e.observedAt, wait: e.followerWait(), stallNotBefore: e.stallNotBefore,
		renewStarted: e.renewStarted, lastAttempt: e.lastAttempt, renewLate: e.renewLate, renewAsked: e.renewAsked.Load(), stalled: e.stalled,
		resignedAt: e.resignedAt, ineligibleAt: e.ineligibleAt, holderSeenAt: e.holderSeenAt, earlyFailedAt: e.earlyFailedAt,
	}
	if e.observed != nil {
		v.offered = e.observed.Annotations[YieldAnnotation] == v.holder
		if a, ok := AcquisitionOf(e.observed); ok {
			v.holderMAC = a.HolderMAC
		}
	}
	if e.leading {
		v.mayKeep = e.cfg.MayKeep()
	} else {
		v.eligible, v.defers, v.retry = e.cfg.Eligible(), e.defers(), e.followerRetry()
		if e.cfg.VIPSilence != nil {
			v.vip = e.cfg.VIPSilence()
		}
	}
	return v
}

// step does what decide says: renew, give up, or try to acquire.
func (e *Elector) step(ctx context.Context) {
	now := e.clock.Now()
	v := e.view()
	if !e.leading {
		e.noteEligibility(v.eligible, now)
	}
	switch act, _ := decide(v, now); act {
	case stepDown:
		e.stopLeading(fmt.Sprintf("the Lease is held by %q now", v.holder), false)
	case resign:
		e.resignedAt, e.ineligibleAt = now, now
		e.stopLeading("not eligible any more", true)
	case expire:
		e.stopLeading("renewal deadline passed", true)
	case renew, acquire:
		e.tryAcquireOrRenew(ctx)
	case takeEarly:
		e.takeEarly(ctx)
	case takeOver:
		if e.confirmExpiry(ctx) {
			e.tryAcquireOrRenew(ctx)
		}
	}
}

// noteEligibility records when a candidate that had been eligible stopped being so
// (recentlyUnfit): the wait for the first probe at start is no crash.
func (e *Elector) noteEligibility(eligible bool, now time.Time) {
	switch {
	case eligible:
		e.wasEligible = true
	case e.wasEligible:
		e.ineligibleAt = now
	}
}

// nextWakeup is how long the loop may sleep before step has something to do.
func (e *Elector) nextWakeup() time.Duration {
	now := e.clock.Now()
	_, at := decide(e.view(), now)
	return max(at.Sub(now), 0)
}

// termEnd is when the current term ends unless renewed.
func (e *Elector) termEnd() time.Time { return termEnd(e.cfg.Timings, e.renewStarted, e.stalled) }
