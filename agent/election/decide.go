// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"strings"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// action is what the elector does at a step; decide returns it with the moment to look again.
type action int

const (
	// idle: nothing to do before wakeAt, a change of the Lease or a Poke.
	idle action = iota
	// renew: the leader renews, a retry period after its last renewal, or at once after a
	// late one or when the keeper asks (its VIP went missing).
	renew
	// stepDown: the Lease names another holder; the term ends and there is nothing to release.
	stepDown
	// resign: the leader may not keep leading (MayKeep); it ends its term and releases.
	resign
	// expire: the term ended without a renewal; the leader stops and releases.
	expire
	// acquire: a follower takes a release, its own record or an offer at once, by a write on
	// the observed resourceVersion.
	acquire
	// takeOver: nobody renewed the Lease for the follower's wait; it reads the Lease to
	// confirm (confirmExpiry), then takes it.
	takeOver
	// takeEarly: the holder's VIP fell silent (earlyAt); the follower takes the Lease with a
	// short write, and leaves the record to its expiry if that fails (takeEarly).
	takeEarly
)

func (a action) String() string {
	return [...]string{"idle", "renew", "stepDown", "resign", "expire", "acquire", "takeOver", "takeEarly"}[a]
}

// view is everything decide looks at: the elector's state and what its Config's functions
// said at one moment.
type view struct {
	timings  timing.Timings
	identity string
	leading  bool

	// The Lease as last seen: exists is false before the first read and after a deletion.
	exists      bool
	holder      string
	ownRecord   bool // it carries the record this process wrote last
	releaseSeen bool // it is a release record (isRelease)
	offered     bool // its holder offers the lead (YieldAnnotation)
	observedAt  time.Time
	// wait is the follower's wait after observedAt (followerWait); stallNotBefore delays a
	// takeover after a stalled read, or a prompt one while the VIP is answered (confirmExpiry).
	wait           time.Duration
	stallNotBefore time.Time

	// The leader's term.
	mayKeep      bool
	renewStarted time.Time
	lastAttempt  time.Time
	renewLate    bool
	renewAsked   bool // the keeper asked for a renewal at once (Elector.RenewNow)
	stalled      bool

	// The follower.
	eligible     bool
	defers       bool
	retry        time.Duration // after a failed takeover write (followerRetry)
	resignedAt   time.Time
	ineligibleAt time.Time
	// holderSeenAt is when this follower first saw the current holder's name in the Lease;
	// vip is what its prober heard of the VIP (Config.VIPSilence).
	holderSeenAt  time.Time
	holderMAC     string // the holder's NIC as its acquisition records it; "" unknown
	vip           Silence
	earlyFailedAt time.Time // when this follower's last early takeover write failed
}

// decide returns what the elector does now and when it looks again at the latest. The step
// acts on the action; the loop sleeps until the wakeAt of the view after the step (for
// stepDown, resign and expire that is a follower's: the step ends the term).
func decide(v view, now time.Time) (action, time.Time) {
	if v.leading {
		return v.leaderAction(now), v.leaderWake(now)
	}
	if !v.eligible {
		return idle, now.Add(v.timings.RetryPeriod) // re-check eligibility; Poke wakes us earlier
	}
	at := v.acquirableAt(now)
	switch {
	case now.Before(at):
		return idle, at
	case at.Before(v.expiry()) && v.isEarly(at):
		return takeEarly, now.Add(v.retry)
	case at.Before(v.expiry()):
		return acquire, now.Add(v.retry) // the retry, if this attempt fails
	default:
		return takeOver, now.Add(v.retry)
	}
}

func (v view) leaderAction(now time.Time) action {
	switch {
	case v.exists && v.holder != v.identity:
		return stepDown
	case !v.mayKeep:
		return resign
	case !now.Before(v.termEnd()):
		return expire
	case v.renewLate || v.renewAsked || !now.Before(v.renewStarted.Add(v.timings.RetryPeriod)):
		return renew
	}
	return idle
}

// leaderWake is when a leader looks again: at its next renewal, soon after a failed one.
func (v view) leaderWake(now time.Time) time.Time {
	switch {
	case v.renewLate, v.renewAsked:
		return now
	case v.stalled:
		// Retry as soon as the last attempt's own timeout would have passed: etcd may have a
		// leader again any moment. At most one attempt per StalledRetryTimeout.
		return minTime(v.lastAttempt.Add(timing.StalledRetryTimeout), v.termEnd())
	}
	at := v.renewStarted.Add(v.timings.RetryPeriod)
	if now.After(at) {
		// A renewal failed; retry soon, but wake up at the deadline at the latest.
		at = minTime(now.Add(v.timings.RetryPeriod/4), v.termEnd())
	}
	return at
}

func (v view) termEnd() time.Time { return termEnd(v.timings, v.renewStarted, v.stalled) }

// termEnd is when a term ends unless renewed: RenewDeadline after the start of the last
// successful write, StalledWriteHold later while the term is held through a stall.
func termEnd(t timing.Timings, renewStarted time.Time, stalled bool) time.Time {
	term := t.TermFrom(renewStarted)
	if stalled {
		term = t.StalledTerm(term)
	}
	return term.End
}

// acquirableAt is the earliest moment at which a follower may try to take the Lease as
// last seen: at once for a release or its own record, after the wait for an expiry
// otherwise, and YieldDelay (EarlyYieldDelay for an early takeover) later for a candidate
// that should yield.
func (v view) acquirableAt(now time.Time) time.Time {
	expiry := v.expiry()
	at, delay := expiry, YieldDelay
	if v.exists {
		switch v.holder {
		case v.identity:
			if v.ownRecord {
				return v.observedAt
			}
		case "":
			if v.releaseSeen {
				at = v.observedAt
				if v.heldDown(now) {
					at = minTime(v.resignedAt.Add(v.healthHoldDown()), expiry)
				}
			}
		default:
			if v.offered && !v.defers && !v.heldDown(now) && !v.recentlyUnfit(now) {
				return v.observedAt // the holder offers the lead
			}
			if early, ok := v.earlyAt(); ok && early.Before(at) {
				at, delay = early, EarlyYieldDelay
			}
		}
	}
	if v.defers {
		at = at.Add(delay)
	}
	return at
}

// earlyAt is when a follower may take the Lease of a holder whose VIP fell silent, before
// its term expires: every family of the VIP went unanswered for timing.EarlyTakeoverSilence
// while this follower probed it, and through the confirmation burst that followed (the
// prober then pokes the election), and it heard the VIP answer, from the holder's own MAC
// where its acquisition records one, after it first saw this holder's name, so that a
// holder whose answers never reach the followers (a fresh holder in its guard, a network
// that filters ARP replies, a port whose VIP pair Neutron has not applied yet) is only ever
// taken over by expiry.
// The takeover guard of the new holder still waits while anybody answers (package timing).
// After an early write failed, only a silence that began after the failure counts: a record
// that arrives after it (this follower's own connection came back) is no new evidence, and
// the holder may have answered all along where this follower could not hear.
func (v view) earlyAt() (time.Time, bool) {
	if !v.earlyFailedAt.IsZero() && !v.vip.SilentSince.After(v.earlyFailedAt) {
		return time.Time{}, false
	}
	if v.vip.SilentSince.IsZero() || !v.vip.Confirmed || v.holderSeenAt.IsZero() || !v.vip.HeardAt.After(v.holderSeenAt) {
		return time.Time{}, false
	}
	// The answer must be the holder's own: right after a handover the previous holder's
	// late answer arrives too, and a new holder's answers may not get through yet (Neutron
	// drops them until its L2 agent applies the VIP pair to the port).
	if v.holderMAC != "" && !strings.EqualFold(v.vip.HeardFrom, v.holderMAC) {
		return time.Time{}, false
	}
	return v.vip.SilentSince.Add(timing.EarlyTakeoverSilence), true
}

// isEarly reports whether at, a moment before the expiry, is the early takeover's.
func (v view) isEarly(at time.Time) bool {
	early, ok := v.earlyAt()
	return ok && v.exists && v.holder != "" && v.holder != v.identity && !at.Before(early)
}

// expiry is when the Lease as last seen expires for this follower: its wait after the last
// change it saw, and not before a stalled read allows (confirmExpiry).
func (v view) expiry() time.Time {
	at := v.observedAt.Add(v.wait)
	if at.Before(v.stallNotBefore) {
		return v.stallNotBefore
	}
	return at
}

// heldDown reports whether this candidate resigned for lack of eligibility less than
// healthHoldDown ago. Such a candidate does not take a release at once, whoever released:
// the other candidates get it first, so that a flapping node (an API server in a restart
// loop) does not win its own release back and move the VIP again and again. It still
// takes a Lease that nobody renewed for a lease duration.
func (v view) heldDown(now time.Time) bool {
	return !v.resignedAt.IsZero() && now.Before(v.resignedAt.Add(v.healthHoldDown()))
}

// healthHoldDown is how long a candidate that resigned for lack of eligibility leaves
// releases to the others: two lease durations.
func (v view) healthHoldDown() time.Duration { return 2 * v.timings.LeaseDuration }

// recentlyUnfit reports whether this candidate was not eligible, or was cut off on L2
// itself, less than OfferHoldDown ago: an offer moves the VIP on purpose, and should not
// move it onto a node whose network just failed.
func (v view) recentlyUnfit(now time.Time) bool {
	last := v.ineligibleAt
	if v.vip.CutAt.After(last) {
		last = v.vip.CutAt
	}
	return !last.IsZero() && now.Before(last.Add(OfferHoldDown))
}
