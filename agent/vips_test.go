// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/arp"
)

// newDualStackKeeper returns a keeper holding one VIP per family, each with its own guard.
func newDualStackKeeper(t *testing.T) (*keeper, [2]*fakeAddress, [2]*fakeGuard) {
	t.Helper()
	k, v4, _, clk := newTestKeeper(t)
	v6 := &fakeAddress{clock: clk, lifetime: time.Second}
	g4, g6 := &fakeGuard{clock: clk}, &fakeGuard{clock: clk}
	k.addr = addresses{v4, v6}
	k.guard = arp.Guards{g4, g6}
	return k, [2]*fakeAddress{v4, v6}, [2]*fakeGuard{g4, g6}
}

// The VIPs of an exposure go on together: while another host still answers for one family's
// VIP, neither is added, and the guard that found its VIP free starts over, so that the
// verdict that adds both rests on the same call's requests.
func TestDualStackTakeoverWaitsForEveryFamily(t *testing.T) {
	k, addrs, gs := newDualStackKeeper(t)
	clk := gs[0].clock
	term := termAt(clk.Now())
	gs[1].freeAt = clk.Now().Add(350 * time.Millisecond)
	k.Leading(term, true)
	for clk.Now().Before(gs[1].freeAt) {
		if addrs[0].present || addrs[1].present {
			t.Fatalf("at %v a VIP was added while another host still answers for the IPv6 VIP (IPv4 on: %t, IPv6 on: %t)",
				clk.Now().Sub(term.Start), addrs[0].present, addrs[1].present)
		}
		clk.Step(k.tick)
		k.reconcile(context.Background())
	}
	if !addrs[0].present || !addrs[1].present {
		t.Fatalf("once both families were free, IPv4 on: %t, IPv6 on: %t; want both", addrs[0].present, addrs[1].present)
	}
	if gs[0].closed < 4 {
		t.Errorf("the IPv4 guard, free while IPv6 was held, started over %d times in 4 rounds, want every round", gs[0].closed)
	}
}

// One family's failed removal does not keep the other family's VIP on the NIC, and the
// VIPs do not count as gone: the Lease is not released (it runs out instead, and with it the
// kernel lifetime of the VIP whose removal failed).
func TestDualStackRemovalFailureKeepsTheLease(t *testing.T) {
	k, addrs, _ := newDualStackKeeper(t)
	clk := addrs[0].clock
	k.Leading(termAt(clk.Now()), true)
	if !addrs[0].present || !addrs[1].present {
		t.Fatalf("after the takeover IPv4 on: %t, IPv6 on: %t; want both", addrs[0].present, addrs[1].present)
	}
	addrs[0].failRemove = errors.New("rtnl busy")
	if released := k.Following("test"); released {
		t.Error("Following reported the VIPs gone while the IPv4 removal failed")
	}
	if addrs[1].present {
		t.Error("the IPv6 VIP stayed on the NIC because the IPv4 removal failed")
	}
	addrs[0].failRemove = nil
	advance(k, clk, k.tick)
	if addrs[0].present {
		t.Error("the IPv4 VIP is still on the NIC a tick after its removal works again")
	}
}

// One family's failed add leaves neither VIP counted as held: the keeper retries, and gives
// the lead up after failureGrace as for a single VIP.
func TestDualStackAddFailureCountsForTheExposure(t *testing.T) {
	k, addrs, _ := newDualStackKeeper(t)
	clk := addrs[0].clock
	addrs[1].failAlways = errors.New("no IPv6 on this link")
	k.Leading(termAt(clk.Now()), true)
	if k.Holding() {
		t.Fatal("Holding() while the IPv6 VIP could not be added")
	}
	if addrs[0].present {
		t.Error("the IPv4 VIP stayed on the NIC, unannounced, while the IPv6 VIP could not be added")
	}
	advance(k, clk, failureGrace+k.tick)
	if k.fit() {
		t.Errorf("still fit to lead %s after the IPv6 VIP kept failing", failureGrace+k.tick)
	}
}

// One family's VIP removed by hand sends the exposure back as a whole: the keeper asks for
// a renewal and puts the missing VIP back with the other after it, as after a takeover.
func TestDualStackOneFamilyMissingComesBackAfterARenewal(t *testing.T) {
	k, addrs, _ := newDualStackKeeper(t)
	clk := addrs[0].clock
	asked := 0
	k.onMissing = func() { asked++ }
	k.Leading(termAt(clk.Now()), true)
	advance(k, clk, 300*time.Millisecond)
	addrs[1].present = false
	k.VIPRemoved()
	if asked != 1 || k.Holding() || addrs[1].present {
		t.Fatalf("IPv6 VIP removed: %d renewals asked, holding %t, IPv6 on %t; want 1, false, false", asked, k.Holding(), addrs[1].present)
	}
	clk.Step(10 * time.Millisecond)
	k.Leading(termAt(clk.Now()), false)
	if !addrs[0].present || !addrs[1].present || !k.Holding() {
		t.Fatalf("after the renewal IPv4 on: %t, IPv6 on: %t, holding %t; want both on and held", addrs[0].present, addrs[1].present, k.Holding())
	}
}
