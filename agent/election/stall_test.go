// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

func always() bool { return true }

// An etcd election stalls every write for 1-2 s, longer than RenewDeadline leaves a
// renewal: the leader holds its term through the stall, up to StalledWriteHold, and renews
// as soon as a write goes through.
func TestRenewalThatStallsHoldsTheTermUntilTheBound(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, rec := h.candidateWith(t, Config{Identity: "node-a", Timings: tm, HoldThroughStall: always})
	start := h.clock.Now()
	a.tryAcquireOrRenew(context.Background())

	h.clock.Step(tm.RetryPeriod)
	h.leases.updateErr = apierrors.NewTimeoutError("etcdserver: request timed out", 0)
	a.step(context.Background())
	held := rec.terms[len(rec.terms)-1]
	if want := tm.StalledTerm(tm.TermFrom(start)); held != want {
		t.Fatalf("after a stalled renewal the term is %+v, want %+v (held through the stall)", held, want)
	}
	for h.clock.Now().Before(held.End) {
		a.step(context.Background())
		if !a.leading {
			t.Fatalf("stopped leading %s after the term's start, during the hold that ends at %s",
				h.clock.Since(start), held.End.Sub(start))
		}
		h.clock.Step(a.nextWakeup())
	}
	a.step(context.Background())
	if a.leading {
		t.Fatal("still leading after the hold ended")
	}

	// The same stall where the hold is not allowed (no takeover guard): the term ends as
	// always, RenewDeadline after its start.
	h2 := newHarness()
	b, rec2 := h2.candidateWith(t, Config{Identity: "node-b", Timings: tm})
	b.tryAcquireOrRenew(context.Background())
	h2.clock.Step(tm.RetryPeriod)
	h2.leases.updateErr = apierrors.NewTimeoutError("etcdserver: request timed out", 0)
	b.step(context.Background())
	h2.clock.Step(tm.RenewDeadline - tm.RetryPeriod)
	b.step(context.Background())
	if b.leading || len(rec2.terms) != 1 {
		t.Fatalf("leading=%v terms=%d at the end of the term without a hold", b.leading, len(rec2.terms))
	}
}

// A rejection is a verdict, not a stall: no hold.
func TestRejectedRenewalIsNotHeld(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, rec := h.candidateWith(t, Config{Identity: "node-a", Timings: tm, HoldThroughStall: always})
	a.tryAcquireOrRenew(context.Background())
	h.clock.Step(tm.RetryPeriod)
	h.leases.updateErr = apierrors.NewForbidden(leases, "kube-vip-agent", nil)
	a.step(context.Background())
	if len(rec.terms) != 1 {
		t.Fatalf("a forbidden renewal changed the term: %+v", rec.terms)
	}
	h.clock.Step(tm.RenewDeadline - tm.RetryPeriod)
	a.step(context.Background())
	if a.leading {
		t.Fatal("still leading at the end of the term after a rejected renewal")
	}
}

// A follower whose read of an expired Lease stalls does not queue a takeover write that
// would race the holder's renewals once etcd has a leader again; it gives the holder
// StalledTakeoverDelay first.
func TestFollowerWhoseReadStallsLeavesTheHolderTimeToRenew(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, b := h.leaderAndFollower(t, tm)
	h.clock.Step(tm.LeaseDuration)

	h.leases.readDelay = 2 * timing.StalledReadThreshold
	writes := h.leases.calls
	b.step(context.Background())
	if b.leading || h.leases.calls != writes+1 {
		t.Fatalf("leading=%v after %d calls: a follower whose read stalled went on to write", b.leading, h.leases.calls-writes)
	}
	if wait := b.nextWakeup(); wait != timing.StalledTakeoverDelay {
		t.Fatalf("the follower tries again after %s, want %s", wait, timing.StalledTakeoverDelay)
	}

	// etcd has a leader again and the holder renewed meanwhile: the wait starts over.
	h.leases.readDelay = 0
	h.clock.Step(timing.StalledRetryTimeout)
	a.tryAcquireOrRenew(context.Background())
	h.clock.Step(timing.StalledRetryTimeout)
	b.step(context.Background())
	if b.leading {
		t.Fatal("the follower took the Lease its holder had just renewed")
	}

	// Without a renewal, a prompt read lets the follower take it, one of the holder's
	// retries later where the VIP is answered (VIPAnswered nil: always).
	h.clock.Step(tm.LeaseDuration)
	b.step(context.Background())
	h.clock.Step(b.nextWakeup())
	b.step(context.Background())
	if !b.leading {
		t.Fatal("the follower did not take an expired Lease after a prompt read")
	}
}

// A follower whose read of an expired Lease stalled, where nobody answers for the VIP (the
// holder's node lost its link, and led etcd), takes the Lease at once: there is no holder
// to leave time to. Where one answers, it waits as before.
func TestFollowerWhoseReadStallsTakesAnUnansweredVIPAtOnce(t *testing.T) {
	for _, answered := range []bool{false, true} {
		tm := timing.Defaults()
		h, _, b, probes := expiredWithVIP(t, tm, answered)

		h.leases.readDelay = 2 * timing.StalledReadThreshold
		b.step(context.Background())
		if *probes != 1 {
			t.Fatalf("answered=%v: the follower probed the VIP %d times after a stalled read, want once", answered, *probes)
		}
		if b.leading == answered {
			t.Fatalf("answered=%v: leading=%v after a stalled read", answered, b.leading)
		}
	}
}

// Under persistent write errors a follower that may take the Lease retries with a growing,
// jittered pause: at most one request per second, and not in step with the others.
func TestFollowerRetriesUnderWriteErrorsBackOffWithJitter(t *testing.T) {
	h := newHarness()
	ctx := context.Background()
	a, b := h.leaderAndFollower(t, timing.Defaults())
	a.stopLeading("shutting down", true)
	b.observe(h.leases.current(), false)
	h.leases.updateErr = apierrors.NewInternalError(errors.New("etcdserver: mvcc: database space exceeded"))

	const window = 20 * time.Second
	start, calls := h.clock.Now(), h.leases.calls
	pauses := map[time.Duration]bool{}
	for h.clock.Since(start) < window {
		b.step(ctx)
		wait := b.nextWakeup()
		pauses[wait] = true
		h.clock.Step(wait)
	}
	rate := float64(h.leases.calls-calls) / window.Seconds()
	t.Logf("%.2f requests/s, %d distinct pauses", rate, len(pauses))
	if rate > 1 {
		t.Errorf("a follower whose writes keep failing sends %.2f requests/s, want at most 1", rate)
	}
	if len(pauses) < 3 {
		t.Errorf("the follower retries at %d distinct intervals: no jitter", len(pauses))
	}
}

// expiredWithVIP returns node-a, which took the Lease, and node-b, which saw it do so and
// whose probe of the VIP says answered (probes counts its calls), one lease duration later.
func expiredWithVIP(t *testing.T, tm timing.Timings, answered bool) (h *harness, holder, follower *Elector, probes *int) {
	t.Helper()
	h, probes = newHarness(), new(int)
	holder, _ = h.candidate(t, "node-a", tm)
	follower, _ = h.candidateWith(t, Config{Identity: "node-b", Timings: tm,
		VIPAnswered: func(context.Context) bool { *probes++; return answered }})
	holder.tryAcquireOrRenew(context.Background())
	follower.observe(h.leases.current(), false)
	h.clock.Step(tm.LeaseDuration)
	return h, holder, follower, probes
}

// leaderAndFollower returns node-a, which holds the Lease, and node-b, which saw it do so.
func (h *harness) leaderAndFollower(t *testing.T, tm timing.Timings) (leader, follower *Elector) {
	t.Helper()
	leader, _ = h.candidate(t, "node-a", tm)
	follower, _ = h.candidate(t, "node-b", tm)
	leader.tryAcquireOrRenew(context.Background())
	follower.observe(h.leases.current(), false)
	return leader, follower
}

// A holder in a stalled hold retries every StalledRetryTimeout; a follower whose read of the
// expired Lease was prompt (etcd has a leader again) may be ahead of that retry. Where
// another host answers for the VIP, the follower reads again StalledRetryWait later and
// takes the Lease only if it is unchanged; where nobody answers, it takes it at once.
func TestFollowerWhosePromptReadFindsTheVIPAnsweredLeavesTheHolderARetry(t *testing.T) {
	tm := timing.Defaults()
	for _, answered := range []bool{false, true} {
		h, a, b, probes := expiredWithVIP(t, tm, answered)

		b.step(context.Background())
		if b.leading != !answered {
			t.Fatalf("answered=%v: leading=%v after a prompt read of the expired Lease", answered, b.leading)
		}
		if !answered {
			continue
		}
		if wait := b.nextWakeup(); wait != timing.StalledRetryWait {
			t.Fatalf("the follower reads again after %s, want %s", wait, timing.StalledRetryWait)
		}

		// The holder's retry goes through meanwhile: the follower keeps following.
		h.clock.Step(timing.StalledRetryTimeout)
		a.tryAcquireOrRenew(context.Background())
		h.clock.Step(b.nextWakeup())
		b.step(context.Background())
		if b.leading {
			t.Fatal("the follower took the Lease its holder had just renewed")
		}

		// The holder stops renewing: the follower waits once more, then takes it.
		h.clock.Step(b.nextWakeup())
		b.step(context.Background())
		if b.leading || b.nextWakeup() != timing.StalledRetryWait {
			t.Fatalf("leading=%v, next look after %s: the follower did not leave the holder a retry", b.leading, b.nextWakeup())
		}
		h.clock.Step(b.nextWakeup())
		b.step(context.Background())
		if !b.leading {
			t.Fatal("the follower did not take a Lease left unchanged for a retry")
		}
		if *probes != 2 {
			t.Fatalf("the follower probed the VIP %d times for two expired records, want once per record", *probes)
		}
	}
}
