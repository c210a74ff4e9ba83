// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"testing"
	"time"
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
		k.Renewing()
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
	k.Renewing()
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
