// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"errors"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

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
			e.noteCreateFailure(err)
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

// noteCreateFailure logs a failed create of the missing Lease. The Role the controller
// deploys grants no create (it cannot be limited to one name): the agent waits for the
// controller to create the Lease again, and says so once rather than on every retry.
func (e *Elector) noteCreateFailure(err error) {
	if !apierrors.IsForbidden(err) {
		e.log.Error(err, "Creating the Lease failed, retrying")
		return
	}
	if !e.createRefused {
		e.log.Info("The Lease is missing and this agent may not create it; waiting for it to be created", "error", err.Error())
	}
	e.createRefused = true
}

// get reads the Lease, bounded by a retry period: an API server that hangs must not stall
// the state machine. Its result is authoritative (a linearizable read).
func (e *Elector) get(ctx context.Context) (*coordinationv1.Lease, error) {
	reqCtx, cancel := context.WithTimeout(ctx, e.cfg.Timings.RetryPeriod)
	defer cancel()
	return e.cfg.Leases.Get(reqCtx, e.cfg.Name, metav1.GetOptions{})
}

// tryAcquireOrRenew writes this candidate into the Lease, based on the version last seen.
func (e *Elector) tryAcquireOrRenew(ctx context.Context) { e.writeLease(ctx, 0) }

// takeEarly takes the Lease of a holder whose VIP fell silent (view.earlyAt). The write may
// take until the record's expiry (timing.StalledRetryTimeout at least): where the silent
// node led etcd, a proposal sent before etcd elected anew is lost and never answered. A
// write that fails leaves the record to the expiry, whose read waits for etcd's election
// (confirmExpiry); a failed early write is not retried on the same silence, so it costs one
// request more at most.
func (e *Elector) takeEarly(ctx context.Context) {
	untilExpiry := e.observedAt.Add(e.followerWait()).Sub(e.clock.Now())
	e.takingEarly = true
	e.writeLease(ctx, max(untilExpiry, timing.StalledRetryTimeout))
	e.takingEarly = false
	if !e.leading {
		e.earlyFailedAt = e.clock.Now()
		e.log.Info("Taking the Lease of a silent holder early failed; waiting for its expiry", "holder", holderOf(e.observed))
	}
}

// writeLease is tryAcquireOrRenew with a follower's write bounded by timeout (0: a retry
// period).
func (e *Elector) writeLease(ctx context.Context, timeout time.Duration) {
	start := e.clock.Now()
	e.renewLate = false       // a failed write is retried at the usual pace
	e.renewAsked.Store(false) // this write answers RenewNow; a request made during it asks again
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
			e.noteCreateFailure(err)
			if !e.leading {
				e.failedAcquisitions++ // back off as after a refused takeover
			}
			return
		}
		e.observe(lease, true)
	}

	deadline := start.Add(e.cfg.Timings.RetryPeriod)
	if timeout > 0 {
		deadline = start.Add(timeout)
	}
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

	var acquired Acquisition
	if !e.leading {
		acquired = e.acquisition(start)
		acquired.record(lease)
	}

	e.lastWrite = lease.Spec.RenewTime
	if e.leading && renewing && e.cfg.Callbacks.OnRenewing != nil {
		e.cfg.Callbacks.OnRenewing(start)
	}
	if !e.leading && e.cfg.Callbacks.OnAcquiring != nil {
		e.cfg.Callbacks.OnAcquiring()
	}
	updated, err := e.cfg.Leases.Update(reqCtx, lease, metav1.UpdateOptions{})
	if err != nil {
		if !e.leading && e.cfg.Callbacks.OnAcquireFailed != nil {
			e.cfg.Callbacks.OnAcquireFailed()
		}
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
		e.stalledSince.Store(0)
		e.log.Info("Renewed the Lease after a stall", "heldThroughStallFor", e.clock.Since(e.stalledAt).String())
	}
	e.renewStarted = start
	term := e.cfg.Timings.TermFrom(start)
	// A write that took longer than the refresh window (an etcd leader change, a loaded
	// API server) gives a term in which the VIP may not be refreshed; renewing again at
	// once costs one write and gives a fresh term, instead of a VIP that lapses until the
	// next regular renewal (a takeover would add no VIP for a whole retry period). Not
	// needed where the refresh at the write's start lasts until the next renewal.
	e.renewLate = e.clock.Now().After(term.RefreshBy) && !e.cfg.Timings.RenewalRefreshLasts()
	newTerm := !e.leading
	if newTerm {
		e.leading = true
		e.log.Info("Became leader", "reason", acquired.Reason, "previousHolder", acquired.PreviousHolder,
			"silenceMs", acquired.SilenceMillis, "lastHeardMAC", acquired.LastHeardMAC)
	}
	if e.cfg.Callbacks.OnLeading != nil {
		e.cfg.Callbacks.OnLeading(term, newTerm)
	}
	if newTerm && e.cfg.Callbacks.OnAcquired != nil {
		e.cfg.Callbacks.OnAcquired(updated, acquired)
	}
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

// StalledHold is how long the leader has held its term through stalled renewals (0 when
// it does not); the hold ends by timing.StalledWriteHold after the term. Safe from any
// goroutine.
func (e *Elector) StalledHold() time.Duration {
	if at := e.stalledSince.Load(); at != 0 {
		return e.clock.Since(time.Unix(0, at))
	}
	return 0
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
	e.stalledSince.Store(0)
	if hold {
		e.stalledAt = e.clock.Now()
		e.stalledSince.Store(e.stalledAt.UnixNano())
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
