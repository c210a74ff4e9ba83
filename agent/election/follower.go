// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// confirmExpiry reads the Lease before a follower takes it for want of renewals, and
// reports whether it may still do so. A read that fails or takes longer than
// timing.StalledReadThreshold shows that etcd could not serve (an election): the holder may
// be holding its term through the stall (Config.HoldThroughStall), and a takeover write
// queued now would race its renewals when etcd has a leader again. The follower then gives
// the holder timing.StalledTakeoverDelay to renew first. A read queues no write, so it
// cannot win that race. A prompt read may still be ahead of such a holder's next retry; the
// follower then gives it Timings.AnsweredTakeoverDelay, once per record. Where nobody
// answers for the VIP, there is no holder to leave time to, and the follower takes the
// Lease at once.
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
		// A slow read that returned means etcd has a leader again; nobody answering for the
		// VIP means nobody to leave time to (Config.VIPAnswered).
		if err == nil && e.cfg.VIPAnswered != nil && !e.cfg.VIPAnswered(ctx) {
			e.log.Info("Reading the Lease before taking it over stalled, and nobody answers for the VIP; taking it over",
				"took", now.Sub(start).String())
			return e.canAcquire(e.clock.Now())
		}
		e.stallNotBefore, e.gaveTimeTo = e.clock.Now().Add(timing.StalledTakeoverDelay), e.observedAt
		e.log.Info("Reading the Lease before taking it over stalled; leaving its holder time to renew",
			"took", now.Sub(start).String(), "error", fmt.Sprint(err))
		return false
	}
	readAt := e.clock.Now()
	if !e.canAcquire(readAt) {
		return false // the read found a renewal
	}
	delay := e.cfg.Timings.AnsweredTakeoverDelay()
	if err != nil || delay == 0 || e.gaveTimeTo.Equal(e.observedAt) || (e.cfg.VIPAnswered != nil && !e.cfg.VIPAnswered(ctx)) {
		return e.canAcquire(e.clock.Now())
	}
	// From the read: etcd had a leader by then, so the holder's retry is due within the
	// wait whatever the probe took.
	e.stallNotBefore, e.gaveTimeTo = readAt.Add(delay), e.observedAt
	e.log.Info("The Lease expired and another host answers for the VIP; leaving its holder a retry before taking it over",
		"wait", delay.String())
	return false
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

// canAcquire says whether a follower may try to take the Lease now.
func (e *Elector) canAcquire(now time.Time) bool {
	return !now.Before(e.view().acquirableAt(now))
}

// YieldDelay is how much later than the others a candidate that should yield (Config.Yield)
// tries to take a released or expired Lease: enough for another candidate's write, which
// starts when it sees the same release or expiry, to usually win (both carry the same
// resourceVersion, so the later one fails), and short, because it is added to the outage
// whenever no other candidate can take over (a soak with 250 ms put graceful handovers at
// up to 0.38 s while the other follower was held down). When the yielding candidate wins
// anyway, it offers the lead once it holds the VIP.
const YieldDelay = 50 * time.Millisecond

// EarlyYieldDelay is YieldDelay for the early takeover. The followers probe at phases of
// their own, so another follower reaches the same silence up to a probe interval (and the
// tick slack) later; a candidate that should yield waits that long, so that a follower
// whose member does not lead wins. With YieldDelay the etcd leader's node won some of these
// races, and its offer moved the VIP a second time about a second later.
const EarlyYieldDelay = timing.FollowerProbeInterval + timing.SilenceTickSlack

// followerRetry is how long a follower waits after a failed takeover write before the
// next: a quarter of a retry period after the first failure, doubling up to two retry
// periods, each stretched by up to half at random, so that followers whose writes keep
// failing (an API server that rejects them, etcd out of space) stay within one request per
// second each (a takeover for want of renewals costs a read and a write) and do not retry
// in step.
func (e *Elector) followerRetry() time.Duration {
	d := e.cfg.Timings.RetryPeriod / 4 << min(max(e.failedAcquisitions-1, 0), 3)
	return e.jitter(d)
}

// offersLead reports whether this candidate, as leader, should offer the lead.
func (e *Elector) offersLead() bool { return e.cfg.Yield != nil && e.cfg.Yield(true) }

// defers reports whether this candidate, as follower, should let the others take over first.
func (e *Elector) defers() bool { return e.cfg.Yield != nil && e.cfg.Yield(false) }

// OfferHoldDown is how long a candidate must have stayed eligible, and not cut off on L2
// itself (Silence.CutAt), before it takes a holder's offer (Config.Yield). An offer
// moves the VIP on purpose, for a benefit that only counts when a node fails later; a node
// whose kube-apiserver crash-loops would take each offer in its healthy moments and give
// the VIP back when it crashed again, two moves per crash. Five minutes is kubelet's
// longest crash-loop back-off, so a node in such a loop never takes an offer. A node whose
// link flaps is the likelier next failure, and the flap of the etcd leader's link is what
// often hands etcd's lead to the holder: the offer that followed went to the flapped node.
// A release or an expired Lease is still taken at once.
const OfferHoldDown = 5 * time.Minute
