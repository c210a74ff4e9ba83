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
	"math"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
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

// Callbacks receive leadership changes. They run in the election's goroutine and must
// return quickly.
type Callbacks struct {
	// OnLeading is called after every successful acquisition or renewal with the term it
	// gives (timing.Timings.TermFrom): until when this candidate is leader unless renewed
	// again, and until when it may refresh the VIP. newTerm is true on the
	// acquisition that starts a term.
	OnLeading func(term timing.Term, newTerm bool)
	// OnStoppedLeading is called when a term ends, before the Lease is released. It
	// reports whether the leader's resources are gone; only then is the Lease released,
	// otherwise it is left to expire.
	OnStoppedLeading func(reason string) (released bool)
	// OnNewLeader is called when the holder seen in the Lease changes ("" when released).
	OnNewLeader func(identity string)
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
	// stalled: the renewals of the current term stall and the term is held through them
	// (Config.HoldThroughStall, timing.StalledTerm); lastAttempt is when the last renewal
	// attempt started, to pace the retries.
	// failedAcquisitions counts this follower's failed takeover writes since its last
	// success (followerRetry).
	failedAcquisitions int
	stalled            bool
	stalledAt          time.Time
	lastAttempt        time.Time
	// stallNotBefore: a follower's read before a takeover stalled; it does not take the
	// Lease for want of renewals before this (confirmExpiry).
	stallNotBefore time.Time
	// resignedAt is when this candidate last gave the lead up because it was not eligible
	// (see heldDown).
	resignedAt time.Time
	// ineligibleAt is when this candidate was last seen not eligible after it had been
	// eligible once (see recentlyIneligible): the wait for the first probe at start is no
	// crash.
	ineligibleAt time.Time
	wasEligible  bool
	lastHolder   string
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
	return &Elector{cfg: cfg, clock: cfg.Clock, log: cfg.Log, poke: make(chan struct{}, 1), rewatch: make(chan string, 1)}, nil
}

// Poke asks the election to re-evaluate at once, for example after the eligibility
// changed. It never blocks.
func (e *Elector) Poke() {
	select {
	case e.poke <- struct{}{}:
	default:
	}
}

// releaseTimeout bounds the release of the Lease on the way out; where other
// kube-apiservers can take the release, the local one gets localReleaseTimeout of it.
const (
	releaseTimeout      = 400 * time.Millisecond
	localReleaseTimeout = releaseTimeout / 2
)

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

// sync reads the Lease, creating it when it does not exist yet.
func (e *Elector) sync(ctx context.Context) error {
	for {
		lease, err := e.get(ctx)
		if err == nil {
			e.observe(lease, true)
			return nil
		}
		if !apierrors.IsNotFound(err) {
			e.log.Error(err, "Reading the Lease failed, retrying")
		} else if lease, err = e.create(ctx); err == nil {
			e.observe(lease, true)
			return nil
		} else if apierrors.IsAlreadyExists(err) {
			continue // another candidate created it a moment ago; read it
		} else {
			e.log.Error(err, "Creating the Lease failed, retrying")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.clock.After(e.cfg.Timings.RetryPeriod):
		}
	}
}

// create creates the Lease: held by this candidate if it leads (its term goes on after
// somebody deleted the Lease), else unheld, to be competed for through updates.
func (e *Elector) create(ctx context.Context) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.cfg.Name}}
	e.stamp(lease)
	if e.leading {
		now := storedTime(e.clock.Now())
		lease.Spec.HolderIdentity = &e.cfg.Identity
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	}
	if e.leading {
		e.lastWrite = lease.Spec.RenewTime
	}
	reqCtx, cancel := context.WithTimeout(ctx, e.cfg.Timings.RetryPeriod)
	defer cancel()
	return e.cfg.Leases.Create(reqCtx, lease, metav1.CreateOptions{})
}

// get reads the Lease, bounded by a retry period: an API server that hangs must not stall
// the state machine. Its result is authoritative (a linearizable read).
func (e *Elector) get(ctx context.Context) (*coordinationv1.Lease, error) {
	reqCtx, cancel := context.WithTimeout(ctx, e.cfg.Timings.RetryPeriod)
	defer cancel()
	return e.cfg.Leases.Get(reqCtx, e.cfg.Name, metav1.GetOptions{})
}

// stamp writes this candidate's lease duration into a Lease it is about to write, and
// removes a release mark: only release writes one.
func (e *Elector) stamp(lease *coordinationv1.Lease) {
	lease.Spec.LeaseDurationSeconds = e.leaseSeconds()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[LeaseDurationAnnotation] = strconv.FormatInt(e.cfg.Timings.LeaseDuration.Milliseconds(), 10)
	delete(lease.Annotations, ReleasedByAnnotation)
	if e.offersLead() {
		lease.Annotations[YieldAnnotation] = e.cfg.Identity
	} else {
		delete(lease.Annotations, YieldAnnotation)
	}
}

// observation is one version of the Lease; authoritative when it is the result of a read
// or write of this candidate, not a watch event.
type observation struct {
	lease         *coordinationv1.Lease
	authoritative bool
}

// watch feeds every version of the Lease into events until ctx is done. The
// RetryWatcher re-establishes the watch from the last resourceVersion; when that version
// is too old, or too large ("Too large resource version", which the RetryWatcher would
// retry forever), the Lease is read again and the watch starts over; a read that finds a
// record the watch missed restarts it from there (rewatchIfBehind).
func (e *Elector) watch(ctx context.Context, resourceVersion string, events chan<- observation) {
	selector := fields.OneTermEqualSelector("metadata.name", e.cfg.Name).String()
	for ctx.Err() == nil {
		retryCtx, giveUp := context.WithCancel(ctx)
		lw := &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
				options.FieldSelector = selector
				w, err := e.cfg.Leases.Watch(ctx, options)
				if err != nil {
					if tooLargeResourceVersion(err) {
						giveUp()
					}
					return nil, err
				}
				return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
					if ev.Type == watch.Error && tooLargeResourceVersion(apierrors.FromObject(ev.Object)) {
						giveUp()
					}
					return ev, true
				}), nil
			},
		}
		w, err := watchtools.NewRetryWatcherWithContext(retryCtx, resourceVersion, lw)
		if err != nil {
			giveUp()
			e.log.Error(err, "Watching the Lease failed")
			return
		}
		rewatched := false
	receive:
		for {
			var ev watch.Event
			select {
			case rv := <-e.rewatch:
				// A read found a newer record than this watch delivered (rewatchIfBehind).
				resourceVersion, rewatched = rv, true
				break receive
			case got, ok := <-w.ResultChan():
				if !ok {
					break receive
				}
				ev = got
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if lease, ok := ev.Object.(*coordinationv1.Lease); ok {
					resourceVersion = lease.ResourceVersion
					select {
					case events <- observation{lease: lease}:
					case <-ctx.Done():
					}
				}
			case watch.Deleted:
				// An empty Lease without a resourceVersion tells the loop that it is gone.
				select {
				case events <- observation{lease: &coordinationv1.Lease{}}:
				case <-ctx.Done():
				}
			case watch.Error:
				e.log.V(1).Info("Lease watch ended", "status", apierrors.FromObject(ev.Object).Error())
			}
		}
		w.Stop()
		giveUp()
		if ctx.Err() != nil {
			return
		}
		if rewatched {
			e.log.Info("The Lease watch missed a newer record; watching again from it", "resourceVersion", resourceVersion)
			continue
		}
		// The watch gave up (typically: resourceVersion too old, after the API server
		// restarted, or too large). Wait a retry period, so that a watch that keeps failing does not spin,
		// then start from a fresh read.
		select {
		case <-ctx.Done():
			return
		case <-e.clock.After(e.cfg.Timings.RetryPeriod):
		}
		for ctx.Err() == nil {
			lease, err := e.get(ctx)
			if err == nil {
				resourceVersion = lease.ResourceVersion
				select {
				case events <- observation{lease: lease, authoritative: true}:
				case <-ctx.Done():
				}
				break
			}
			if apierrors.IsNotFound(err) {
				select {
				case events <- observation{lease: &coordinationv1.Lease{}, authoritative: true}:
				case <-ctx.Done():
				}
			}
			select {
			case <-ctx.Done():
			case <-e.clock.After(e.cfg.Timings.RetryPeriod):
			}
		}
	}
}

// observe records a version of the Lease. A watch event older than the version already
// seen (one that trails our own update) is ignored; the result of a read or write is
// adopted whatever its resourceVersion, so that revisions that went backwards (an etcd
// restore) cannot make every candidate ignore the real Lease.
func (e *Elector) observe(lease *coordinationv1.Lease, authoritative bool) {
	if lease.ResourceVersion == "" {
		// Deleted. Who held it is unknown now, so the deletion counts as a change of the
		// record: nobody takes over before a lease duration has passed. A repeated
		// notice of a deletion already known does not restart that wait.
		if e.observed != nil || e.observedAt.IsZero() {
			e.observedAt = e.clock.Now()
		}
		e.observed = nil
		e.noteHolder("")
		return
	}
	if !authoritative && e.observed != nil && olderThan(lease.ResourceVersion, e.observed.ResourceVersion) {
		return
	}
	if e.observed == nil || !sameRecord(&e.observed.Spec, &lease.Spec) {
		e.observedAt = e.clock.Now()
		e.releaseSeen = isRelease(lease)
	}
	e.observed = lease
	e.noteHolder(holderOf(lease))
}

func (e *Elector) noteHolder(holder string) {
	if holder == e.lastHolder {
		return
	}
	e.lastHolder = holder
	if e.cfg.Callbacks.OnNewLeader != nil {
		e.cfg.Callbacks.OnNewLeader(holder)
	}
}

// step acts on the current state: renew, give up, or try to acquire.
func (e *Elector) step(ctx context.Context) {
	now := e.clock.Now()
	if e.leading {
		switch holder := holderOf(e.observed); {
		case e.observed != nil && holder != e.cfg.Identity:
			e.stopLeading(fmt.Sprintf("the Lease is held by %q now", holder), false)
		case !e.cfg.MayKeep():
			e.resignedAt, e.ineligibleAt = now, now
			e.stopLeading("not eligible any more", true)
		case !now.Before(e.termEnd()):
			e.stopLeading("renewal deadline passed", true)
		case e.renewLate || !now.Before(e.renewStarted.Add(e.cfg.Timings.RetryPeriod)):
			e.tryAcquireOrRenew(ctx)
		}
		return
	}
	eligible := e.cfg.Eligible()
	switch {
	case eligible:
		e.wasEligible = true
	case e.wasEligible:
		e.ineligibleAt = now
	}
	if eligible && e.canAcquire(now) {
		if !e.acquirableAt(now).Before(e.expiry()) && !e.confirmExpiry(ctx) {
			return
		}
		e.tryAcquireOrRenew(ctx)
	}
}

// confirmExpiry reads the Lease before a follower takes it for want of renewals, and
// reports whether it may still do so. A read that fails or takes longer than
// timing.StalledReadThreshold shows that etcd could not serve (an election): the holder may
// be holding its term through the stall (Config.HoldThroughStall), and a takeover write
// queued now would race its renewals when etcd has a leader again. The follower then gives
// the holder timing.StalledTakeoverDelay to renew first. A read queues no write, so it
// cannot win that race.
func (e *Elector) confirmExpiry(ctx context.Context) bool {
	start := e.clock.Now()
	lease, err := e.get(ctx)
	switch {
	case err == nil:
		e.rewatchIfBehind(lease)
		e.observe(lease, true)
	case apierrors.IsNotFound(err):
		e.observe(&coordinationv1.Lease{}, true)
	}
	if now := e.clock.Now(); (err != nil && !apierrors.IsNotFound(err)) || now.Sub(start) > timing.StalledReadThreshold {
		e.stallNotBefore = now.Add(timing.StalledTakeoverDelay)
		e.log.Info("Reading the Lease before taking it over stalled; leaving its holder time to renew",
			"took", now.Sub(start).String(), "error", fmt.Sprint(err))
		return false
	}
	return e.canAcquire(e.clock.Now())
}

// rewatchIfBehind restarts the watch from lease when a follower's read finds a record it
// has not seen: the follower reached the end of its wait, so the watch delivered no change
// for a lease duration, yet the Lease changed. An API server whose data is behind the
// resourceVersion watched (after an etcd restore, or an API server whose cache lags) keeps
// such a watch open without events (kube-apiserver 1.36) or fails it with "Too large
// resource version", which the RetryWatcher retries forever; either way the follower would
// see the Lease only through its own takeover attempts.
func (e *Elector) rewatchIfBehind(lease *coordinationv1.Lease) {
	if e.observed == nil || sameRecord(&e.observed.Spec, &lease.Spec) {
		return
	}
	select {
	case e.rewatch <- lease.ResourceVersion:
	default:
	}
}

// expiry is when the Lease as last seen expires for this follower: a lease duration after
// the last change it saw, and not before a stalled read allows (confirmExpiry).
func (e *Elector) expiry() time.Time {
	at := e.observedAt.Add(e.followerWait())
	if at.Before(e.stallNotBefore) {
		return e.stallNotBefore
	}
	return at
}

// followerWait is how long a follower waits after the last change of the Lease it saw: its
// own lease duration, or the one the holder published if that is longer, so that agents
// with different timings (a rolling update of the timings) never take over early.
func (e *Elector) followerWait() time.Duration {
	wait := e.cfg.Timings.LeaseDuration
	if published := min(leaseDurationOf(e.observed), maxPublishedLeaseDuration); published > wait {
		wait = published
	}
	return wait
}

// leaseDurationOf is the lease duration the Lease's writer published: exactly, in the
// annotation, or rounded up to whole seconds in spec.leaseDurationSeconds.
func leaseDurationOf(lease *coordinationv1.Lease) time.Duration {
	if lease == nil {
		return 0
	}
	if ms, err := strconv.ParseInt(lease.Annotations[LeaseDurationAnnotation], 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	if lease.Spec.LeaseDurationSeconds != nil {
		return time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	return 0
}

// canAcquire says whether a follower may try to take the Lease now.
func (e *Elector) canAcquire(now time.Time) bool {
	return !now.Before(e.acquirableAt(now))
}

// acquirableAt is the earliest moment at which a follower may try to take the Lease as
// last seen: at once for a release or its own record, after the wait for an expiry
// otherwise, and YieldDelay later for a candidate that should yield.
func (e *Elector) acquirableAt(now time.Time) time.Time {
	expiry := e.expiry()
	at := expiry
	if e.observed != nil {
		switch holderOf(e.observed) {
		case e.cfg.Identity:
			if e.ownRecord() {
				return e.observedAt
			}
		case "":
			if e.releaseSeen {
				at = e.observedAt
				if e.heldDown(now) {
					at = minTime(e.resignedAt.Add(e.healthHoldDown()), expiry)
				}
			}
		default:
			if e.observed.Annotations[YieldAnnotation] == holderOf(e.observed) && !e.defers() && !e.heldDown(now) && !e.recentlyIneligible(now) {
				return e.observedAt // the holder offers the lead
			}
		}
	}
	if e.defers() {
		at = at.Add(YieldDelay)
	}
	return at
}

// YieldDelay is how much later than the others a candidate that should yield (Config.Yield)
// tries to take a released or expired Lease: enough for another candidate's write, which
// starts when it sees the same release or expiry, to usually win (both carry the same
// resourceVersion, so the later one fails), and short, because it is added to the outage
// whenever no other candidate can take over (a soak with 250 ms put graceful handovers at
// up to 0.38 s while the other follower was held down). When the yielding candidate wins
// anyway, it offers the lead once it holds the VIP.
const YieldDelay = 50 * time.Millisecond

// followerRetry is how long a follower waits after a failed takeover write before the
// next: a quarter of a retry period after the first failure, doubling up to two retry
// periods, each stretched by up to half at random, so that followers whose writes keep
// failing (an API server that rejects them, etcd out of space) stay within one request per
// second each (a takeover for want of renewals costs a read and a write) and do not retry
// in step.
func (e *Elector) followerRetry() time.Duration {
	d := e.cfg.Timings.RetryPeriod / 4 << min(max(e.failedAcquisitions-1, 0), 3)
	return wait.Jitter(d, 0.5)
}

// offersLead reports whether this candidate, as leader, should offer the lead.
func (e *Elector) offersLead() bool { return e.cfg.Yield != nil && e.cfg.Yield(true) }

// defers reports whether this candidate, as follower, should let the others take over first.
func (e *Elector) defers() bool { return e.cfg.Yield != nil && e.cfg.Yield(false) }

// heldDown reports whether this candidate resigned for lack of eligibility less than
// healthHoldDown ago. Such a candidate does not take a release at once, whoever released:
// the other candidates get it first, so that a flapping node (an API server in a restart
// loop) does not win its own release back and move the VIP again and again. It still
// takes a Lease that nobody renewed for a lease duration.
func (e *Elector) heldDown(now time.Time) bool {
	return !e.resignedAt.IsZero() && now.Before(e.resignedAt.Add(e.healthHoldDown()))
}

// OfferHoldDown is how long a candidate must have stayed eligible before it takes a
// holder's offer (Config.Yield). An offer moves the VIP on purpose, for a benefit that only
// counts when a node fails later; a node whose kube-apiserver crash-loops would take each
// offer in its healthy moments and give the VIP back when it crashed again, two moves per
// crash. Five minutes is kubelet's longest crash-loop back-off, so a node in such a loop
// never takes an offer. A release or an expired Lease is still taken at once.
const OfferHoldDown = 5 * time.Minute

// recentlyIneligible reports whether this candidate was not eligible less than
// OfferHoldDown ago.
func (e *Elector) recentlyIneligible(now time.Time) bool {
	return !e.ineligibleAt.IsZero() && now.Before(e.ineligibleAt.Add(OfferHoldDown))
}

// healthHoldDown is how long a candidate that resigned for lack of eligibility leaves
// releases to the others: two lease durations.
func (e *Elector) healthHoldDown() time.Duration { return 2 * e.cfg.Timings.LeaseDuration }

// nextWakeup is how long the loop may sleep before step has something to do.
func (e *Elector) nextWakeup() time.Duration {
	now := e.clock.Now()
	var at time.Time
	switch {
	case e.leading && e.renewLate:
		return 0
	case e.leading && e.stalled:
		// Retry as soon as the last attempt's own timeout would have passed: etcd may have a
		// leader again any moment. At most one attempt per StalledRetryTimeout.
		at = minTime(e.lastAttempt.Add(timing.StalledRetryTimeout), e.termEnd())
	case e.leading:
		at = e.renewStarted.Add(e.cfg.Timings.RetryPeriod)
		if deadline := e.termEnd(); now.After(at) {
			// A renewal failed; retry soon, but wake up at the deadline at the latest.
			at = minTime(now.Add(e.cfg.Timings.RetryPeriod/4), deadline)
		}
	case !e.cfg.Eligible():
		return e.cfg.Timings.RetryPeriod // re-check eligibility; Poke wakes us earlier
	case e.canAcquire(now):
		at = now.Add(e.followerRetry()) // the last attempt failed
	default:
		at = e.acquirableAt(now)
	}
	if d := at.Sub(now); d > 0 {
		return d
	}
	return 0
}

// tryAcquireOrRenew writes this candidate into the Lease, based on the version last seen.
func (e *Elector) tryAcquireOrRenew(ctx context.Context) {
	start := e.clock.Now()
	e.renewLate = false // a failed write is retried at the usual pace
	if e.observed == nil {
		lease, err := e.create(ctx)
		if apierrors.IsAlreadyExists(err) {
			// Somebody recreated it first: read it and decide again in step, which also
			// ends a term if the new Lease names another holder.
			if lease, err = e.get(ctx); err == nil {
				e.observe(lease, true)
			}
			return
		}
		if err != nil {
			e.log.Error(err, "Creating the Lease failed")
			return
		}
		e.observe(lease, true)
	}

	deadline := start.Add(e.cfg.Timings.RetryPeriod)
	e.lastAttempt = start
	if e.leading {
		deadline = e.renewDeadline(start)
	}
	reqCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	lease := e.observed.DeepCopy()
	renewing := holderOf(lease) == e.cfg.Identity
	now := storedTime(start)
	lease.Spec.HolderIdentity = &e.cfg.Identity
	e.stamp(lease)
	lease.Spec.RenewTime = &now
	if !renewing || lease.Spec.AcquireTime == nil {
		lease.Spec.AcquireTime = &now
		transitions := int32(0)
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions
		}
		if holderOf(e.observed) != "" || transitions > 0 {
			transitions++
		}
		lease.Spec.LeaseTransitions = &transitions
	}

	e.lastWrite = lease.Spec.RenewTime
	updated, err := e.cfg.Leases.Update(reqCtx, lease, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) {
			// Somebody else wrote first; read what they wrote. (During a stalled hold that
			// may be an earlier attempt of this leader that committed after its timeout: the
			// Lease then still names this node, and step keeps the term.)
			if fresh, gerr := e.get(ctx); gerr == nil {
				if !e.leading {
					e.rewatchIfBehind(fresh)
				}
				e.observe(fresh, true)
			}
		}
		if e.leading {
			e.log.V(1).Info("Renewing the Lease failed", "error", err.Error())
			e.noteRenewalFailure(err)
		} else {
			e.failedAcquisitions++
			e.log.V(1).Info("Acquiring the Lease failed", "error", err.Error())
		}
		return
	}
	e.failedAcquisitions = 0
	e.observe(updated, true)
	if e.stalled {
		e.stalled = false
		e.log.Info("Renewed the Lease after a stall", "heldThroughStallFor", e.clock.Since(e.stalledAt).String())
	}
	e.renewStarted = start
	term := e.cfg.Timings.TermFrom(start)
	// A write that took longer than the refresh window (an etcd leader change, a loaded
	// API server) gives a term in which the VIP may not be refreshed; renewing again at
	// once costs one write and gives a fresh term, instead of a VIP that lapses until the
	// next regular renewal (a takeover would add no VIP for a whole retry period).
	e.renewLate = e.clock.Now().After(term.RefreshBy)
	newTerm := !e.leading
	if newTerm {
		e.leading = true
		e.log.Info("Became leader", "reason", acquireReason(renewing))
	}
	if e.cfg.Callbacks.OnLeading != nil {
		e.cfg.Callbacks.OnLeading(term, newTerm)
	}
}

// termEnd is when the current term ends unless renewed: RenewDeadline after the start of
// the last successful write, StalledWriteHold later while the term is held through a stall.
func (e *Elector) termEnd() time.Time {
	term := e.cfg.Timings.TermFrom(e.renewStarted)
	if e.stalled {
		term = e.cfg.Timings.StalledTerm(term)
	}
	return term.End
}

// renewDeadline is the deadline of a renewal that starts at start. A renewal that may turn
// into a stalled hold ends StalledDecisionMargin before the term, so that the keeper learns
// of the hold before it would remove the VIP at the end of the term; during the hold each
// attempt has StalledRetryTimeout.
func (e *Elector) renewDeadline(start time.Time) time.Time {
	end := e.termEnd()
	switch {
	case e.stalled:
		return minTime(start.Add(timing.StalledRetryTimeout), end)
	case e.mayHoldThroughStall():
		return end.Add(-timing.StalledDecisionMargin)
	}
	return end
}

func (e *Elector) mayHoldThroughStall() bool {
	return e.cfg.HoldThroughStall != nil && e.cfg.HoldThroughStall()
}

// noteRenewalFailure starts or ends a stalled hold after a failed renewal. A failure that
// gives no verdict on the Lease (a timeout, a server error, etcd without a leader) starts
// one where HoldThroughStall allows; a definite rejection, a refused connection (the local
// kube-apiserver is gone) or a closed health gate ends it. A conflict changes nothing here:
// the re-read decides in step whether another node holds the Lease now.
func (e *Elector) noteRenewalFailure(err error) {
	if apierrors.IsConflict(err) {
		return
	}
	hold := stallError(err) && e.mayHoldThroughStall()
	if hold == e.stalled {
		return
	}
	e.stalled = hold
	term := e.cfg.Timings.TermFrom(e.renewStarted)
	if hold {
		e.stalledAt = e.clock.Now()
		term = e.cfg.Timings.StalledTerm(term)
		e.log.Info("Renewals stall; holding the term through the stall", "until", term.End.Format(time.RFC3339Nano), "error", err.Error())
	} else {
		e.log.Info("Not holding the term through the stall any more", "error", err.Error())
	}
	if e.cfg.Callbacks.OnLeading != nil {
		e.cfg.Callbacks.OnLeading(term, false)
	}
}

// stallError reports whether a failed write gave no verdict on the Lease: it timed out, or
// the API server or etcd could not serve it for now. A rejection (forbidden, invalid, not
// found, conflict) or a refused connection is a verdict.
func stallError(err error) bool {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return false
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsTooManyRequests(err):
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false // another answer of the API server
	}
	return true // the transport failed after the connection was made
}

func acquireReason(renewing bool) string {
	if renewing {
		return "the Lease already named this node"
	}
	return "the Lease was free or expired"
}

// stopLeading ends the term; with release, the Lease is handed back so that a follower
// takes over without waiting for it to expire.
func (e *Elector) stopLeading(reason string, release bool) {
	e.leading, e.renewLate = false, false
	e.log.Info("Stopped leading", "reason", reason)
	if e.cfg.Callbacks.OnStoppedLeading != nil && !e.cfg.Callbacks.OnStoppedLeading(reason) {
		e.log.Info("Not releasing the Lease: the leader's resources could not be removed; it will expire")
		return
	}
	if release {
		e.release()
	}
}

// release hands the Lease back, bounded in time: an unreachable API server must not hold
// up a shutdown, and the Lease then simply expires. A conflict means the Lease changed
// since it was last seen, typically because a renewal that was cut short by the shutdown
// still reached the API server; the Lease is read again and released if it still names
// this candidate.
//
// When the write through the local kube-apiserver fails otherwise (it died: the usual
// reason to step down), the release goes through each of Config.Fallbacks in turn, within
// the same time bound.
func (e *Elector) release() {
	if e.observed == nil || holderOf(e.observed) != e.cfg.Identity {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	var fallbacks []LeaseClient
	if e.cfg.Fallbacks != nil {
		fallbacks = e.cfg.Fallbacks()
	}
	local, cancelLocal := ctx, context.CancelFunc(func() {})
	if len(fallbacks) > 0 {
		// A local kube-apiserver that hangs (its etcd is gone) must leave the others time.
		local, cancelLocal = context.WithTimeout(ctx, localReleaseTimeout)
	}
	err := e.releaseVia(local, e.cfg.Leases)
	cancelLocal()
	via := "the local kube-apiserver"
	for i := 0; err != nil && !errors.Is(err, errNotHolder) && !apierrors.IsConflict(err) && i < len(fallbacks) && ctx.Err() == nil; i++ {
		e.log.V(1).Info("Releasing the Lease failed; trying another kube-apiserver", "error", err.Error())
		err = e.releaseVia(ctx, fallbacks[i])
		via = fmt.Sprintf("kube-apiserver %d of %d", i+1, len(fallbacks))
	}
	switch {
	case err == nil:
		e.log.Info("Released the Lease", "via", via)
	case errors.Is(err, errNotHolder):
		e.log.Info("Not releasing the Lease: it names another holder now", "holder", holderOf(e.observed))
	default:
		e.log.Info("Releasing the Lease failed; it will expire", "error", err.Error())
	}
}

// releaseVia writes the release record through leases.
func (e *Elector) releaseVia(ctx context.Context, leases LeaseClient) error {
	current := e.observed
	// The result of the last attempt, not RetryOnConflict's: that reports a timed-out
	// attempt (context.DeadlineExceeded) as success when no conflict came before it.
	var last error
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		last = e.releaseOnce(ctx, leases, &current)
		return last
	})
	return last
}

// releaseOnce is one attempt of releaseVia; after a conflict it reads the Lease into
// current for the next attempt.
func (e *Elector) releaseOnce(ctx context.Context, leases LeaseClient, current **coordinationv1.Lease) error {
	lease := (*current).DeepCopy()
	now := metav1.NewMicroTime(e.clock.Now())
	empty := ""
	one := int32(1)
	lease.Spec.HolderIdentity = &empty
	lease.Spec.LeaseDurationSeconds = &one
	lease.Spec.RenewTime = &now
	lease.Spec.AcquireTime = &now
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	delete(lease.Annotations, LeaseDurationAnnotation)
	delete(lease.Annotations, YieldAnnotation)
	lease.Annotations[ReleasedByAnnotation] = e.cfg.Identity
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err == nil {
		e.observe(updated, true)
		return nil
	}
	if !apierrors.IsConflict(err) {
		return err
	}
	fresh, gerr := leases.Get(ctx, e.cfg.Name, metav1.GetOptions{})
	if gerr != nil {
		return gerr
	}
	e.observe(fresh, true)
	if holderOf(fresh) != e.cfg.Identity {
		return errNotHolder
	}
	*current = fresh
	return err
}

// errNotHolder ends a release when the Lease no longer names this candidate.
var errNotHolder = errors.New("the Lease names another holder")

func (e *Elector) shutdown() {
	if e.leading {
		e.stopLeading("shutting down", true)
	}
}

// leaseSeconds is LeaseDuration rounded up to whole seconds, as the Lease stores it.
func (e *Elector) leaseSeconds() *int32 {
	s := int32(math.Ceil(e.cfg.Timings.LeaseDuration.Seconds()))
	return &s
}

// isRelease reports whether the Lease is a release record: no holder, and the release mark
// that only release writes (a holder, after its VIP is gone). A holder cleared by hand, or
// an unheld Lease that create made, is not one. The record itself tells, so a candidate
// whose view jumped from the unheld Lease it created straight to the release (a conflict's
// re-read that skipped the short term in between) does not wait for an expiry.
func isRelease(lease *coordinationv1.Lease) bool {
	return holderOf(lease) == "" && lease.Annotations[ReleasedByAnnotation] != ""
}

// ownRecord reports whether the Lease as last seen carries the record this process wrote
// last.
func (e *Elector) ownRecord() bool {
	return e.observed != nil && e.lastWrite != nil && microEq(e.observed.Spec.RenewTime, e.lastWrite)
}

// storedTime is t as the API server stores a MicroTime: to the microsecond. lastWrite
// must compare equal to the renewTime the API server returns, or this process never
// recognises its own record.
func storedTime(t time.Time) metav1.MicroTime {
	return metav1.NewMicroTime(t.Truncate(time.Microsecond))
}

func holderOf(lease *coordinationv1.Lease) string {
	if lease == nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// sameRecord reports whether two versions of the Lease carry the same election record.
func sameRecord(a, b *coordinationv1.LeaseSpec) bool {
	return ptrEq(a.HolderIdentity, b.HolderIdentity) && microEq(a.RenewTime, b.RenewTime) &&
		microEq(a.AcquireTime, b.AcquireTime) && ptrEq(a.LeaseTransitions, b.LeaseTransitions)
}

func ptrEq[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func microEq(a, b *metav1.MicroTime) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(b))
}

// tooLargeResourceVersion reports whether err says that the resourceVersion asked for is
// newer than what the API server has (k8s.io/apiserver's storage.IsTooLargeResourceVersion,
// which the agent does not link).
func tooLargeResourceVersion(err error) bool {
	return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// olderThan compares resourceVersions. They are opaque to clients in general, but the
// kube-apiserver serves etcd revisions; anything that is not a number is never "older".
func olderThan(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
