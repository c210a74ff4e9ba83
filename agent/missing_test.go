// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// A VIP that went missing while this node leads (removed by hand) comes back only through
// the takeover guard: a follower may have taken the Lease early on its silence and be
// adding the VIP now, and a refresh that re-added it blindly would put it on two nodes
// until this node learned of the takeover.
func TestMissingVIPComesBackOnlyThroughTheGuard(t *testing.T) {
	k, addr, ann, clk := newTestKeeper(t)
	g := &fakeGuard{clock: clk}
	k.guard = g
	k.Leading(termAt(clk.Now()), true)
	advance(k, clk, 2*time.Second)
	k.Leading(termAt(clk.Now()), false)
	addr.present = false // somebody ran `ip addr del`
	// Meanwhile another host answers for the VIP (a follower took the Lease on the silence).
	g.freeAt = clk.Now().Add(time.Second)
	for clk.Now().Add(k.tick).Before(g.freeAt) {
		clk.Step(k.tick)
		k.reconcile(context.Background())
		if addr.present {
			t.Fatalf("a tick re-added the missing VIP while another host answers for it (%d probes)", g.probes)
		}
		k.Renewing(clk.Now())
		if addr.present {
			t.Fatalf("a renewal's refresh re-added the missing VIP while another host answers for it (%d probes)", g.probes)
		}
	}
	k.Leading(termAt(clk.Now()), false)
	before := len(ann.rounds)
	clk.Step(g.freeAt.Sub(clk.Now()))
	k.reconcile(context.Background())
	if !addr.present {
		t.Fatal("the VIP was not added back once the guard found it free")
	}
	if len(ann.rounds) != before+1 {
		t.Fatalf("adding the VIP back sent %d announcements, want a new burst", len(ann.rounds)-before)
	}
}

// The health gate's path: a link that goes down removes the VIP, and when it comes back up
// during the term the VIP returns through the guard, not before another host stops
// answering for it.
func TestVIPBackAfterTheHealthGateGoesThroughTheGuard(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	g := &fakeGuard{clock: clk}
	k.guard = g
	k.Leading(termAt(clk.Now()), true)
	k.SetHealthy(false) // the link went down
	if addr.present {
		t.Fatal("the VIP stayed on while the health gate was closed")
	}
	g.freeAt = clk.Now().Add(500 * time.Millisecond) // a follower took over meanwhile
	clk.Step(k.tick)
	k.SetHealthy(true)
	k.Renewing(clk.Now())
	for clk.Now().Add(k.tick).Before(g.freeAt) {
		clk.Step(k.tick)
		k.reconcile(context.Background())
		if addr.present {
			t.Fatalf("the VIP came back while another host answers for it (%d probes)", g.probes)
		}
	}
	clk.Step(g.freeAt.Sub(clk.Now()))
	k.reconcile(context.Background())
	if !addr.present {
		t.Fatal("the VIP did not come back once the guard found it free")
	}
}

// A VIP found missing at a renewal goes back on only once that renewal's write succeeded:
// while it is on the wire a follower's early write, on the record this node wrote last, may
// win the compare-and-swap, and that follower's guard hears the same silence as this one.
// The write fails here, so the VIP never comes back in this term.
func TestAVIPMissingAtARenewalWhoseWriteFailsIsNotAdded(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	k.guard = &fakeGuard{clock: clk} // nobody answers: the guard finds the VIP free at once
	term := termAt(clk.Now())
	k.Leading(term, true)
	advance(k, clk, timingDefaults.RetryPeriod)
	addr.present = false  // somebody ran `ip addr del`
	k.Renewing(clk.Now()) // the renewal's write goes out, and fails: no Leading follows
	for clk.Now().Before(term.End.Add(timing.ActiveRemovalLateness)) {
		clk.Step(10 * time.Millisecond)
		k.reconcile(context.Background())
		if addr.present {
			t.Fatalf("at S+%v the VIP was added back although the renewal begun after its loss had not succeeded",
				clk.Now().Sub(term.Start))
		}
	}
}

// The address watch reports a removal mid-term (the VIP lapsing between renewals, as it
// does with the defaults): the keeper asks for a renewal at once, keeps the VIP off while
// that write is on the wire, and puts it back, announced, once the write succeeded.
func TestAVIPMissingMidTermAsksForARenewalAndComesBackAfterIt(t *testing.T) {
	k, addr, ann, clk := newTestKeeper(t)
	asked := 0
	k.onMissing = func() { asked++ }
	k.guard = &fakeGuard{clock: clk}
	term := termAt(clk.Now())
	k.Leading(term, true)
	advance(k, clk, 300*time.Millisecond)
	if !clk.Now().After(term.RefreshBy) {
		t.Fatalf("at S+%v the VIP is not lapsing (RefreshBy S+%v)", clk.Now().Sub(term.Start), term.RefreshBy.Sub(term.Start))
	}
	addr.present = false
	k.VIPRemoved()
	if asked != 1 {
		t.Fatalf("the keeper asked for %d renewals when the VIP went missing mid-term, want 1", asked)
	}
	clk.Step(5 * time.Millisecond)
	writeStart := clk.Now()
	k.Renewing(writeStart)
	advance(k, clk, 2*k.tick) // a slow write: the guard has long found the VIP free
	if addr.present {
		t.Fatal("the VIP went back on while the renewal begun after its loss was still on the wire")
	}
	before := len(ann.rounds)
	k.Leading(termAt(writeStart), false)
	if !addr.present {
		t.Fatal("the VIP did not come back when the renewal begun after its loss succeeded")
	}
	if len(ann.rounds) != before+1 {
		t.Fatalf("adding the VIP back sent %d announcements, want a new burst", len(ann.rounds)-before)
	}
	advance(k, clk, timingDefaults.RetryPeriod)
	if asked != 1 || !addr.present {
		t.Fatalf("after the VIP came back: %d renewals asked, VIP present %v; want 1 and true", asked, addr.present)
	}
}

// Something keeps deleting the VIP: the keeper asks for one extra renewal per
// missingRenewalGap at most, and leaves the rest to the regular renewals.
func TestAVIPDeletedAgainAndAgainAsksForOneRenewalPerGap(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	asked := 0
	k.onMissing = func() { asked++ }
	k.guard = &fakeGuard{clock: clk}
	start := clk.Now()
	for i := 0; clk.Now().Sub(start) < 2*missingRenewalGap+missingRenewalGap/2; i++ {
		term := termAt(clk.Now())
		k.Renewing(term.Start)
		k.Leading(term, i == 0)
		if !addr.present {
			t.Fatalf("round %d: the VIP did not come back after a successful renewal", i)
		}
		addr.present = false
		k.VIPRemoved()
		advance(k, clk, 100*time.Millisecond)
	}
	if want := 3; asked != want {
		t.Fatalf("over %v of deletions every 100 ms the keeper asked for %d renewals, want %d (one per %v)", clk.Now().Sub(start), asked, want, missingRenewalGap)
	}
}

// The health gate closes mid-term (a carrier flap) and opens again before the election's
// next step, which may sit in a renewal write meanwhile: the VIP goes back only after a
// write of this node's own that began after the drop, as a VIP removed by hand does. A
// follower may have taken the Lease early on the silence, and its guard and this node's
// would both pass while neither answers.
func TestAVIPDroppedByTheHealthGateMidTermWaitsForAWriteOfItsOwn(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	asked := 0
	k.onMissing = func() { asked++ }
	k.guard = &fakeGuard{clock: clk} // nobody answers: the guard finds the VIP free at once
	term := termAt(clk.Now())
	k.Leading(term, true)
	advance(k, clk, 300*time.Millisecond)
	k.SetHealthy(false)
	clk.Step(200 * time.Millisecond)
	k.SetHealthy(true)
	for range 5 {
		clk.Step(k.tick)
		k.reconcile(context.Background())
		if addr.present {
			t.Fatalf("at S+%v the VIP went back on through the guard alone, with no write of this node's own since the gate dropped it",
				clk.Now().Sub(term.Start))
		}
	}
	if asked != 1 {
		t.Fatalf("the gate's reopening asked for %d renewals, want 1", asked)
	}
	writeStart := clk.Now()
	k.Renewing(writeStart)
	k.Leading(termAt(writeStart), false)
	if !addr.present {
		t.Fatal("the VIP did not come back after a renewal begun after the drop succeeded")
	}
}

// The holder's listener stops hearing its followers: the keeper removes the VIP at once,
// asks for a renewal, and puts the VIP back only once a write of its own that began after
// the fence succeeded (a follower may be taking the Lease on the same silence).
func TestAFencedVIPGoesBackOnlyAfterAWriteOfItsOwn(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	asked := 0
	k.onMissing = func() { asked++ }
	k.guard = &fakeGuard{clock: clk}
	k.Leading(termAt(clk.Now()), true)
	advance(k, clk, 300*time.Millisecond)
	if !k.Fence() {
		t.Fatal("Fence reported nothing removed while the VIP was held")
	}
	if addr.present || asked != 1 {
		t.Fatalf("after the fence: VIP present %v, %d renewals asked; want off and 1", addr.present, asked)
	}
	advance(k, clk, 300*time.Millisecond)
	if addr.present {
		t.Fatal("the fenced VIP went back on through the guard alone")
	}
	writeStart := clk.Now()
	k.Renewing(writeStart)
	k.Leading(termAt(writeStart), false)
	if !addr.present {
		t.Fatal("the fenced VIP did not come back after a renewal begun after the fence succeeded")
	}
	k.Following("held by another node")
	if k.Fence() { // not holding: nothing to do
		t.Fatal("Fence reported a removal while following")
	}
	if asked != 1 {
		t.Fatalf("a fence while following asked for a renewal")
	}
}
