// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

func TestTermIsMeasuredFromTheStartOfTheWrite(t *testing.T) {
	h := newHarness()
	h.leases.writeDelay = 120 * time.Millisecond
	a, rec := h.candidate(t, "node-a", timing.Defaults())
	start := h.clock.Now()
	a.tryAcquireOrRenew(context.Background())
	if !a.leading || len(rec.terms) != 1 {
		t.Fatalf("leading=%v terms=%d; want a first term", a.leading, len(rec.terms))
	}
	if want := timing.Defaults().TermFrom(start); rec.terms[0] != want {
		t.Fatalf("term %+v, want %+v (from the start of the write, not its end)", rec.terms[0], want)
	}
}

// A renewal may commit although the leader dies before it learns so: the keeper hears of it
// before the write (the fake write takes time on the clock), so that the VIP lives a
// lifetime from the renewal's start. An acquisition has no VIP to refresh.
func TestRenewalIsAnnouncedBeforeItsWrite(t *testing.T) {
	h := newHarness()
	h.leases.writeDelay = 30 * time.Millisecond
	tm := timing.Defaults()
	a, rec := h.candidate(t, "node-a", tm)
	a.tryAcquireOrRenew(context.Background())
	if len(rec.terms) != 1 || len(rec.renewing) != 0 {
		t.Fatalf("acquisition: terms %d, OnRenewing at %v; want a term and no OnRenewing", len(rec.terms), rec.renewing)
	}
	h.clock.Step(tm.RetryPeriod)
	start := h.clock.Now()
	a.step(context.Background())
	if len(rec.terms) != 2 || len(rec.renewing) != 1 || !rec.renewing[0].Equal(start) {
		t.Fatalf("renewal started at %v: terms %d, OnRenewing at %v; want one OnRenewing before the write", start, len(rec.terms), rec.renewing)
	}
}

// A follower announces its acquisition before the write goes out, so that the keeper's
// takeover guard probes while the write is on the wire, and hears when the write failed, so
// that the probing is discarded. A renewal is no acquisition.
func TestAcquisitionIsAnnouncedBeforeItsWrite(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, rec := h.candidate(t, "node-a", tm)
	h.leases.updateErr = apierrors.NewServiceUnavailable("etcd has no leader")
	a.tryAcquireOrRenew(context.Background())
	if len(rec.acquiring) != 1 || rec.acquireFailed != 1 || len(rec.terms) != 0 {
		t.Fatalf("failed acquisition: OnAcquiring %d, OnAcquireFailed %d, terms %d; want 1, 1, 0",
			len(rec.acquiring), rec.acquireFailed, len(rec.terms))
	}
	h.leases.updateErr = nil
	a.tryAcquireOrRenew(context.Background())
	if len(rec.acquiring) != 2 || rec.acquiring[1] != "" || rec.acquireFailed != 1 || len(rec.terms) != 1 {
		t.Fatalf("acquisition: OnAcquiring saw holders %q, OnAcquireFailed %d, terms %d; want a second OnAcquiring "+
			"while the Lease was still unheld, no new failure and a term", rec.acquiring, rec.acquireFailed, len(rec.terms))
	}
	h.clock.Step(tm.RetryPeriod)
	a.step(context.Background())
	if len(rec.acquiring) != 2 || len(rec.renewing) != 1 {
		t.Fatalf("renewal: OnAcquiring %d, OnRenewing %d; want no OnAcquiring and one OnRenewing", len(rec.acquiring), len(rec.renewing))
	}
}

func TestReleaseIsTakenAtOnceAndExpiryAfterTheLeaseDuration(t *testing.T) {
	h := newHarness()
	a, _ := h.candidate(t, "node-a", timing.Defaults())
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	b.observe(h.leases.current(), false)
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("a follower may take a Lease that was just renewed")
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != timing.Defaults().LeaseDuration {
		t.Fatalf("a follower may take an unrenewed Lease after %s, want the lease duration", took)
	}

	// A graceful stop: the release is taken at once.
	a.stopLeading("shutting down", true)
	b.observe(h.leases.current(), false)
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("a released Lease is not taken at once")
	}
	b.tryAcquireOrRenew(context.Background())
	if !b.leading || holderOf(h.leases.current()) != "node-b" {
		t.Fatal("the follower did not take the released Lease")
	}
}

// M1: a follower with shorter timings must wait for the leader's longer lease duration.
func TestFollowerWaitsTheLeadersLongerLeaseDuration(t *testing.T) {
	h := newHarness()
	loose := timing.Timings{LeaseDuration: 2400 * time.Millisecond, RenewDeadline: 2200 * time.Millisecond,
		RetryPeriod: 1600 * time.Millisecond, VIPLifetime: 2 * time.Second}
	a, rec := h.candidate(t, "node-a", loose)
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	b.observe(h.leases.current(), false)
	took := h.waitUntilAcquirable(b, 5*time.Second)
	if latest := loose.LatestHold(rec.terms[0]); h.clock.Now().Before(latest) {
		t.Fatalf("the follower (lease duration 1.5s) may take over %s after the renewal, while the leader may hold the VIP until %s",
			took, latest.Sub(rec.terms[0].Start))
	}
	if took != loose.LeaseDuration {
		t.Fatalf("the follower waits %s, want the leader's exact lease duration %s", took, loose.LeaseDuration)
	}

	// A Lease written without the exact figure: the whole seconds count.
	h2 := newHarness()
	c, _ := h2.candidate(t, "node-c", timing.Defaults())
	l := heldBy("node-x", h2.clock.Now())
	l.Spec.LeaseDurationSeconds = ptr.To[int32](3)
	h2.leases.set(l)
	c.observe(h2.leases.current(), false)
	if took := h2.waitUntilAcquirable(c, 5*time.Second); took != 3*time.Second {
		t.Fatalf("the follower waits %s for a Lease with leaseDurationSeconds 3, want 3s", took)
	}
}

// H2: after an etcd restore the revision goes backwards; a read or write result must still
// be adopted, or the leader conflicts forever.
func TestRevisionThatWentBackwardsIsAdoptedFromReads(t *testing.T) {
	h := newHarness()
	a, rec := h.candidate(t, "node-a", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	h.leases.rv = 1000 // many writes happen...
	h.clock.Step(900 * time.Millisecond)
	a.tryAcquireOrRenew(context.Background())
	restored := h.leases.current()
	h.leases.rv = 3 // ...and etcd is restored from a backup taken before them
	h.leases.set(restored)

	for i := 0; i < 3; i++ {
		h.clock.Step(200 * time.Millisecond)
		a.tryAcquireOrRenew(context.Background())
	}
	if len(rec.terms) < 3 {
		t.Fatalf("after the restore the leader renewed %d times in 3 attempts; it ignores the restored Lease (resourceVersion %s, it last saw %s)",
			len(rec.terms)-2, h.leases.current().ResourceVersion, a.observed.ResourceVersion)
	}
	// A watch event that trails a newer version is still ignored.
	old := h.leases.current()
	old.ResourceVersion = "1"
	old.Spec.HolderIdentity = ptr.To("node-z")
	a.observe(old, false)
	if holderOf(a.observed) != "node-a" {
		t.Fatal("an older watch event replaced a newer version")
	}
}

// M2: a holder cleared by hand is not a release.
func TestHandClearedHolderIsNotARelease(t *testing.T) {
	h := newHarness()
	a, _ := h.candidate(t, "node-a", timing.Defaults())
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	edited := h.leases.current()
	edited.Spec.HolderIdentity = ptr.To("") // kubectl edit, acquireTime kept
	h.leases.set(edited)
	b.observe(h.leases.current(), false)
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("a follower takes a hand-cleared Lease at once, while the leader may still hold the VIP")
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != timing.Defaults().LeaseDuration {
		t.Fatalf("took %s, want the lease duration", took)
	}
}

// M2: a Lease that names this node but that this process did not write is waited for.
func TestLeaseNamingThisNodeIsOwnOnlyIfThisProcessWroteIt(t *testing.T) {
	h := newHarness()
	h.leases.set(heldBy("node-b", h.clock.Now())) // from a backup, or edited by hand
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("a Lease that names this node but was written elsewhere is taken at once")
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != 2*time.Second {
		t.Fatalf("took %s, want the Lease's 2s", took)
	}
	b.tryAcquireOrRenew(context.Background())
	b.stopLeading("renewal deadline passed", false) // the Lease still names node-b, written by this process
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("this process may not take back its own record")
	}
}

// L3: every API call of the state machine has a deadline.
func TestEveryCallHasADeadline(t *testing.T) {
	h := newHarness()
	a, _ := h.candidate(t, "node-a", timing.Defaults()) // creates the Lease
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	h.clock.Step(2 * time.Second)
	b.tryAcquireOrRenew(context.Background()) // takes the expired Lease
	a.tryAcquireOrRenew(context.Background()) // conflicts and reads again
	h.leases.lease = nil
	a.observe(&coordinationv1.Lease{}, true)
	a.leading = true
	a.tryAcquireOrRenew(context.Background()) // re-creates the deleted Lease
	a.stopLeading("shutting down", true)
	if h.leases.calls < 6 || len(h.leases.noDeadline) != 0 {
		t.Fatalf("%d calls, these without a deadline: %v", h.leases.calls, h.leases.noDeadline)
	}
}

// L4(a): repeated notices of a deletion already known do not restart the wait.
func TestRepeatedDeletionNoticeDoesNotRestartTheWait(t *testing.T) {
	h := newHarness()
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	b.observe(&coordinationv1.Lease{}, false)
	for range 4 {
		h.clock.Step(500 * time.Millisecond)
		b.observe(&coordinationv1.Lease{}, true) // the watch's re-read keeps finding nothing
	}
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("a Lease deleted 2s ago is never re-created while the deletion keeps being reported")
	}
}

// M3: a write that completes after the term's RefreshBy gives a term in which the VIP
// cannot be refreshed. Where the lifetime is shorter than the lease (the refresh at the
// write's start does not last until the next renewal), the leader must renew again at once
// rather than a retry period later, or the VIP lapses (and a takeover adds no VIP) for most
// of a retry period.
func TestSlowWriteIsRenewedAtOnce(t *testing.T) {
	for _, acquiring := range []bool{true, false} {
		h := newHarness()
		tm := timing.Defaults()
		tm.VIPLifetime = time.Second
		a, rec := h.candidate(t, "node-a", tm)
		if !acquiring {
			a.tryAcquireOrRenew(context.Background())
			h.clock.Step(tm.RetryPeriod)
		}
		// Past the refresh window (lease − lifetime), well inside the renew deadline.
		h.leases.writeDelay = tm.LeaseDuration - tm.VIPLifetime + 50*time.Millisecond
		if acquiring {
			a.tryAcquireOrRenew(context.Background())
		} else {
			a.step(context.Background())
		}
		if n := len(rec.terms); n == 0 || h.clock.Now().Before(rec.terms[n-1].RefreshBy) {
			t.Fatalf("acquiring=%v: the write was not slow enough for the test: terms %+v", acquiring, rec.terms)
		}
		h.leases.writeDelay = 10 * time.Millisecond
		if wait := a.nextWakeup(); wait != 0 {
			t.Fatalf("acquiring=%v: after a write that outlived the refresh window the next renewal is %s away, want at once", acquiring, wait)
		}
		before := len(rec.terms)
		a.step(context.Background())
		if len(rec.terms) != before+1 {
			t.Fatalf("acquiring=%v: no renewal at once after a slow write", acquiring)
		}
		if last := rec.terms[len(rec.terms)-1]; h.clock.Now().After(last.RefreshBy) {
			t.Fatalf("acquiring=%v: the fresh term allows no refresh either", acquiring)
		}
		// Back to the regular pace after a timely write.
		if wait := a.nextWakeup(); wait < tm.RetryPeriod-20*time.Millisecond {
			t.Fatalf("acquiring=%v: next renewal in %s after a timely one, want about the retry period", acquiring, wait)
		}
	}
}

// With the default lifetime, which outlives the lease, the refresh at the write's start
// lasts until the next renewal: a slow write (every write completes after RefreshBy = S)
// keeps the regular pace instead of renewing at once.
func TestSlowWriteKeepsThePaceWhenTheLifetimeOutlivesTheLease(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, rec := h.candidate(t, "node-a", tm)
	h.leases.writeDelay = 300 * time.Millisecond
	a.tryAcquireOrRenew(context.Background())
	if n := len(rec.terms); n == 0 || !h.clock.Now().After(rec.terms[n-1].RefreshBy) {
		t.Fatalf("the write did not end past RefreshBy: terms %+v", rec.terms)
	}
	if wait := a.nextWakeup(); wait < tm.RetryPeriod-h.leases.writeDelay-20*time.Millisecond {
		t.Fatalf("next renewal in %s after a slow write, want the regular pace", wait)
	}
}

// A failed renewal after a slow one must not turn into a tight loop of writes.
func TestFailedRenewalAfterSlowWriteKeepsThePace(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, _ := h.candidate(t, "node-a", tm)
	h.leases.writeDelay = 450 * time.Millisecond
	a.tryAcquireOrRenew(context.Background())
	h.leases.set(h.leases.current()) // a foreign write: the next renewal conflicts
	h.leases.writeDelay = 0
	a.observed.ResourceVersion = "1"
	a.step(context.Background())
	if wait := a.nextWakeup(); wait == 0 {
		t.Fatal("a failed renewal is retried at once, in a tight loop")
	}
}

// M5: a leader that may keep the lead (the hold after its API server turned unready) goes
// on renewing although it could not take the lead now; once it may not keep it, it ends
// the term and releases the Lease.
func TestLeaderMayKeepWhatItCouldNotTake(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	eligible, mayKeep := true, true
	a, rec := h.candidateWith(t, Config{Identity: "node-a", Timings: tm,
		Eligible: func() bool { return eligible }, MayKeep: func() bool { return mayKeep }})
	a.tryAcquireOrRenew(context.Background())
	eligible = false
	h.clock.Step(tm.RetryPeriod)
	a.step(context.Background())
	if !a.leading || len(rec.terms) != 2 || len(rec.stopped) != 0 {
		t.Fatalf("leading=%v terms=%d stopped=%v: a leader in its hold must renew", a.leading, len(rec.terms), rec.stopped)
	}
	mayKeep = false
	a.step(context.Background())
	if a.leading || len(rec.stopped) != 1 || !isRelease(h.leases.current()) {
		t.Fatalf("leading=%v stopped=%v: a leader whose hold ended must stop and release", a.leading, rec.stopped)
	}
}

// M5 (flapping): a leader that resigned because it was not eligible any more does not win
// its own release back the moment it is eligible again; the others take it at once, and it
// takes the Lease only once nobody renewed it for a lease duration.
func TestResignedLeaderIsHeldDown(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	eligible := true
	a, _ := h.candidateWith(t, Config{Identity: "node-a", Timings: tm, Eligible: func() bool { return eligible }})
	b, _ := h.candidate(t, "node-b", tm)
	a.tryAcquireOrRenew(context.Background())
	eligible = false
	a.step(context.Background())
	if a.leading || !isRelease(h.leases.current()) {
		t.Fatal("the ineligible leader did not resign and release")
	}
	eligible = true // healthy again one probe later
	b.observe(h.leases.current(), false)
	if a.canAcquire(h.clock.Now()) {
		t.Fatal("the node that just resigned may win its own release back: a flapping node moves the VIP again and again")
	}
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("the other candidates may not take the release at once")
	}
	if took := h.waitUntilAcquirable(a, 5*time.Second); took != tm.LeaseDuration {
		t.Fatalf("with nobody else taking it, the resigned node may take the Lease after %s, want the lease duration", took)
	}
}
