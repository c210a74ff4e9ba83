// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// A candidate whose etcd member leads (Yield) takes a release or an expired Lease
// YieldDelay after the others may, so that they win the race, and still takes it when
// nobody does.
func TestCandidateThatShouldYieldTakesOverLast(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, _ := h.candidate(t, "node-a", tm)
	b, _ := h.candidateWith(t, Config{Identity: "node-b", Timings: tm, Yield: func(bool) bool { return true }})
	c, _ := h.candidate(t, "node-c", tm)
	a.tryAcquireOrRenew(context.Background())
	b.observe(h.leases.current(), false)
	c.observe(h.leases.current(), false)
	if took := h.waitUntilAcquirable(c, 5*time.Second); took != tm.LeaseDuration {
		t.Fatalf("the other candidate may take an expired Lease after %s, want %s", took, tm.LeaseDuration)
	}
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("the candidate that should yield may take an expired Lease as early as the others")
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != YieldDelay {
		t.Fatalf("the candidate that should yield may take the expired Lease %s after the others, want %s", took, YieldDelay)
	}

	a.tryAcquireOrRenew(context.Background())
	a.stopLeading("test", true)
	b.observe(h.leases.current(), false)
	c.observe(h.leases.current(), false)
	if !c.canAcquire(h.clock.Now()) {
		t.Fatal("the other candidate may not take the release at once")
	}
	if d := b.nextWakeup(); d != YieldDelay {
		t.Fatalf("the yielding candidate sleeps %s after a release, want %s", d, YieldDelay)
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != YieldDelay {
		t.Fatalf("the yielding candidate may take a release after %s, want %s", took, YieldDelay)
	}
}

// A leader whose etcd member leads offers the lead in its renewals and keeps leading: an
// eligible follower that need not defer takes it at once, a deferring one does not, and
// the old leader stops (without a release) when it sees the new holder. The offer ends
// with the leadership of its etcd member.
func TestLeaderThatShouldYieldOffersTheLead(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	yield := false
	a, rec := h.candidateWith(t, Config{Identity: "node-a", Timings: tm, Yield: func(bool) bool { return yield }})
	b, _ := h.candidate(t, "node-b", tm)
	c, _ := h.candidateWith(t, Config{Identity: "node-c", Timings: tm, Yield: func(bool) bool { return true }})
	ctx := context.Background()
	a.tryAcquireOrRenew(ctx)
	b.observe(h.leases.current(), false)
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("a follower may take a Lease whose holder offers nothing")
	}
	yield = true
	h.clock.Step(tm.RetryPeriod)
	a.step(ctx)
	if !a.leading || len(rec.stopped) != 0 {
		t.Fatalf("leading=%v stopped=%v: the leader must keep leading while it offers the lead", a.leading, rec.stopped)
	}
	if got := h.leases.current().Annotations[YieldAnnotation]; got != "node-a" {
		t.Fatalf("renewal carries yield mark %q, want node-a", got)
	}
	b.observe(h.leases.current(), false)
	c.observe(h.leases.current(), false)
	if c.canAcquire(h.clock.Now()) {
		t.Fatal("a follower that should defer itself takes the offer")
	}
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("an eligible follower may not take the offered lead at once")
	}
	b.step(ctx)
	if !b.leading {
		t.Fatal("the follower did not take the offered lead")
	}
	if got := h.leases.current().Annotations[YieldAnnotation]; got != "" {
		t.Fatalf("the new holder's record carries yield mark %q", got)
	}
	a.observe(h.leases.current(), false)
	a.step(ctx)
	if a.leading || len(rec.stopped) != 1 || holderOf(h.leases.current()) != "node-b" {
		t.Fatalf("leading=%v stopped=%v holder=%s: the old leader must stop, without a release", a.leading, rec.stopped, holderOf(h.leases.current()))
	}

	// The offer ends with the etcd leadership.
	h2 := newHarness()
	d, _ := h2.candidateWith(t, Config{Identity: "node-d", Timings: tm, Yield: func(bool) bool { return yield }})
	d.tryAcquireOrRenew(ctx)
	yield = false
	h2.clock.Step(tm.RetryPeriod)
	d.step(ctx)
	if _, ok := h2.leases.current().Annotations[YieldAnnotation]; ok {
		t.Fatal("the yield mark outlives the etcd leadership")
	}
}

// A node whose kube-apiserver crash-loops must not take the holder's offer in each of its
// healthy moments (and give the VIP back at its next crash): it takes offers only after it
// stayed eligible for OfferHoldDown.
func TestCrashLoopingNodeTakesNoOffer(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	ctx := context.Background()
	a, _ := h.candidateWith(t, Config{Identity: "node-a", Timings: tm, Yield: func(bool) bool { return true }})
	eligible := true
	b, _ := h.candidateWith(t, Config{Identity: "node-b", Timings: tm, Eligible: func() bool { return eligible }})
	b.step(ctx) // b has been eligible
	a.tryAcquireOrRenew(ctx)
	h.clock.Step(tm.RetryPeriod)
	a.step(ctx) // renews with the offer

	eligible = false // b's kube-apiserver crashed...
	b.step(ctx)
	h.clock.Step(30 * time.Second)
	eligible = true // ...and answers again after its back-off
	b.observe(h.leases.current(), false)
	b.step(ctx)
	if b.leading {
		t.Fatal("a node that was not eligible 30s ago took the offered lead: a crash-looping node moves the VIP twice per crash")
	}
	h.clock.Step(OfferHoldDown)
	a.step(ctx) // a renews, still offering
	b.observe(h.leases.current(), false)
	b.step(ctx)
	if !b.leading {
		t.Fatal("a node that stayed eligible for the hold-down does not take the offered lead")
	}
}
