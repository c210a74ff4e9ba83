// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

var timingDefaults = timing.Defaults()

// termAt is the term that a renewal started at start gives with the default timings.
func termAt(start time.Time) timing.Term { return timingDefaults.TermFrom(start) }

// fakeAddress is a VIP on an imaginary NIC.
type fakeAddress struct {
	present    bool
	expiresAt  time.Time // when the kernel removes it: lifetime end plus the kernel's worst lateness
	clock      *clocktesting.FakeClock
	lifetime   time.Duration
	ensures    int
	removes    int
	failNext   error
	failAlways error
	failRemove error
}

func (f *fakeAddress) Ensure() (bool, error) {
	if f.failAlways != nil {
		return false, f.failAlways
	}
	if f.failNext != nil {
		err := f.failNext
		f.failNext = nil
		return false, err
	}
	f.expire()
	added := !f.present
	f.present = true
	f.expiresAt = f.clock.Now().Add(f.lifetime + timing.KernelExpiryLateness)
	f.ensures++
	return added, nil
}

func (f *fakeAddress) Refresh() (bool, error) {
	if f.expire(); !f.present {
		return false, nil
	}
	_, err := f.Ensure()
	return err == nil, err
}

func (f *fakeAddress) Present() (bool, error) {
	f.expire()
	return f.present, nil
}

func (f *fakeAddress) Remove() (bool, error) {
	f.removes++
	if f.failRemove != nil {
		return false, f.failRemove
	}
	f.expire()
	was := f.present
	f.present = false
	return was, nil
}

// expire plays the kernel at its slowest: the address vanishes KernelExpiryLateness after its
// lifetime is over.
func (f *fakeAddress) expire() {
	if f.present && !f.clock.Now().Before(f.expiresAt) {
		f.present = false
	}
}

type fakeAnnouncer struct {
	rounds []time.Time
	clock  *clocktesting.FakeClock
	closed int
}

func (f *fakeAnnouncer) Close() error { f.closed++; return nil }

func (f *fakeAnnouncer) Announce(context.Context) (int, error) {
	f.rounds = append(f.rounds, f.clock.Now())
	return 2, nil
}

func newTestKeeper(t *testing.T) (*keeper, *fakeAddress, *fakeAnnouncer, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	addr := &fakeAddress{clock: clk, lifetime: time.Second}
	ann := &fakeAnnouncer{clock: clk}
	k := newKeeper(keeperOptions{
		Address: addr, Announcer: ann, Clock: clk, Log: logr.Discard(),
		Metrics: newMetrics(prometheus.NewRegistry(), clk),
		Tick:    100 * time.Millisecond, ARPInterval: 5 * time.Second,
	})
	return k, addr, ann, clk
}

// advance moves the clock in ticks, reconciling after each, as Run does.
func advance(k *keeper, clk *clocktesting.FakeClock, d time.Duration) {
	for end := clk.Now().Add(d); clk.Now().Before(end); {
		clk.Step(k.tick)
		k.reconcile(context.Background())
	}
}

func TestTakeoverAddsAndAnnouncesAtOnce(t *testing.T) {
	k, addr, ann, clk := newTestKeeper(t)
	k.Leading(termAt(clk.Now()), true)
	if !addr.present {
		t.Fatal("the VIP is not on the NIC right after the takeover")
	}
	if len(ann.rounds) != 1 || !ann.rounds[0].Equal(clk.Now()) {
		t.Fatalf("want one announcement at the takeover, got %v", ann.rounds)
	}
	if got := testutil.ToFloat64(k.metrics.isLeader); got != 1 {
		t.Fatalf("is_leader = %v, want 1", got)
	}
	if got := testutil.ToFloat64(k.metrics.garpSent); got != 2 {
		t.Fatalf("gratuitous_arps_sent_total = %v, want 2", got)
	}
}

func TestBurstThenPeriodicRefresh(t *testing.T) {
	k, _, ann, clk := newTestKeeper(t)
	start := clk.Now()
	// Keep renewing every 900ms for 12s, as the election would.
	for i := 0; i < 14; i++ {
		k.Leading(termAt(clk.Now()), i == 0)
		advance(k, clk, 900*time.Millisecond)
	}
	var offsets []time.Duration
	for _, r := range ann.rounds {
		offsets = append(offsets, r.Sub(start))
	}
	want := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, time.Second, 6 * time.Second, 11 * time.Second}
	if len(offsets) != len(want) {
		t.Fatalf("announcements at %v, want %v", offsets, want)
	}
	for i := range want {
		if offsets[i] != want[i] {
			t.Fatalf("announcements at %v, want %v", offsets, want)
		}
	}
}

func TestVIPNeverOutlivesTheTerm(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	term := termAt(clk.Now())
	k.Leading(term, true)
	// No renewal comes (the agent is partitioned or its API server died). At every moment,
	// had the process died then, the kernel at its slowest would remove the VIP by the
	// planned lapse (the earliest takeover plus KernelExpiryLateness, which the next
	// leader's guard waits for); and the living keeper removes it at the end of the term.
	for clk.Now().Before(term.End.Add(500 * time.Millisecond)) {
		clk.Step(10 * time.Millisecond)
		k.reconcile(context.Background())
		addr.expire()
		if lapse := timing.Defaults().Lapse(term); addr.present && addr.expiresAt.After(lapse) {
			t.Fatalf("at %v the kernel would keep the VIP until %v, after the planned lapse (%v)", clk.Now(), addr.expiresAt, lapse)
		}
		if !clk.Now().Before(term.End) && addr.present {
			t.Fatalf("at %v the VIP is still on the NIC after the term ended at %v", clk.Now(), term.End)
		}
	}
}

// A renewal on the wire may commit although this process dies before it learns so; followers
// then take over a lease duration after the renewal's start, and the VIP must last a
// lifetime from there, past RefreshBy too. Not once the term is over or the gate closed.
func TestARenewalOnTheWireRefreshesTheVIP(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	term := termAt(clk.Now())
	k.Leading(term, true)
	advance(k, clk, timingDefaults.RetryPeriod)
	if !addr.present || !clk.Now().After(term.RefreshBy) {
		t.Fatalf("at the renewal (%v): VIP present %v, RefreshBy %v; want a lapsing VIP", clk.Now(), addr.present, term.RefreshBy)
	}
	k.Renewing(clk.Now())
	if want := clk.Now().Add(addr.lifetime + timing.KernelExpiryLateness); !addr.expiresAt.Equal(want) {
		t.Fatalf("the VIP runs out at %v, want a lifetime from the renewal's start (%v)", addr.expiresAt, want)
	}
	clk.SetTime(term.End)
	ensures := addr.ensures
	k.Renewing(clk.Now())
	k.SetHealthy(false)
	k.Renewing(clk.Now())
	if addr.ensures != ensures {
		t.Fatalf("%d refreshes at a renewal after the term ended or with the gate closed, want none", addr.ensures-ensures)
	}
}

func TestNoRefreshAfterRefreshBy(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	term := termAt(clk.Now())
	k.Leading(term, true)
	// A tick just after RefreshBy (S+0.47 with the defaults) must not stretch the kernel
	// lifetime past the planned lapse.
	clk.SetTime(term.RefreshBy.Add(time.Millisecond))
	before := addr.ensures
	k.reconcile(context.Background())
	if addr.ensures != before {
		t.Fatalf("refreshed the VIP at %v, after RefreshBy %v", clk.Now().Sub(term.Start), term.RefreshBy.Sub(term.Start))
	}
	if !addr.present {
		t.Fatal("the VIP refreshed within the window vanished before the term ended")
	}
}

func TestRenewalsKeepTheVIPWithoutGaps(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	k.Leading(termAt(clk.Now()), true)
	for i := 0; i < 20; i++ {
		renewAt := clk.Now().Add(900 * time.Millisecond)
		for clk.Now().Before(renewAt) {
			clk.Step(100 * time.Millisecond)
			k.reconcile(context.Background())
			addr.expire()
			if !addr.present {
				t.Fatalf("the VIP vanished at %v although the leader renews on time", clk.Now())
			}
		}
		// The renewal refreshes the VIP as it starts (OnRenewing) and takes 50ms.
		k.Renewing(clk.Now())
		clk.Step(50 * time.Millisecond)
		k.Leading(termAt(renewAt), false)
	}
}

func TestFollowingRemovesTheVIP(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	k.Leading(termAt(clk.Now()), true)
	k.Following("lost the Lease")
	if addr.present {
		t.Fatal("the VIP is still on the NIC after the term ended")
	}
	advance(k, clk, time.Second)
	if addr.present {
		t.Fatal("a follower re-added the VIP")
	}
	if got := testutil.ToFloat64(k.metrics.transitions); got != 2 {
		t.Fatalf("leader_transitions_total = %v, want 2", got)
	}
	if got := testutil.ToFloat64(k.metrics.isLeader); got != 0 {
		t.Fatalf("is_leader = %v, want 0", got)
	}
}

func TestAddFailureIsRetried(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	addr.failNext = errors.New("netlink: operation not permitted")
	k.Leading(termAt(clk.Now()), true)
	if addr.present {
		t.Fatal("the fake did not fail")
	}
	clk.Step(100 * time.Millisecond)
	k.reconcile(context.Background())
	if !addr.present {
		t.Fatal("the VIP was not added on the next tick after a failure")
	}
}

func TestFailedRemovalKeepsTheLeaseAndIsRetried(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	k.Leading(termAt(clk.Now()), true)
	addr.failRemove = errors.New("netlink: resource busy")
	if k.Following("lost the Lease") {
		t.Fatal("Following reported the VIP gone although removing it failed; the Lease would be released early")
	}
	addr.failRemove = nil
	clk.Step(100 * time.Millisecond)
	k.reconcile(context.Background())
	if addr.present {
		t.Fatal("the failed removal was not retried on the next tick")
	}
}

func TestUnhealthyDropsTheVIPAtOnceAndHealthyBringsItBack(t *testing.T) {
	k, addr, ann, clk := newTestKeeper(t)
	k.Leading(termAt(clk.Now()), true)
	k.SetHealthy(false)
	if addr.present {
		t.Fatal("the VIP stayed on an unhealthy node")
	}
	clk.Step(100 * time.Millisecond)
	k.reconcile(context.Background())
	if addr.present {
		t.Fatal("the VIP came back while the node is unhealthy")
	}
	before := len(ann.rounds)
	k.SetHealthy(true)
	k.reconcile(context.Background())
	if !addr.present {
		t.Fatal("the VIP did not come back on a healthy leader within its term")
	}
	if len(ann.rounds) == before {
		t.Fatal("coming back was not announced")
	}
}

func TestFollowerRemovesAVIPItMustNotHold(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	addr.present, addr.expiresAt = true, clk.Now().Add(time.Hour) // put there by hand
	clk.Step(100 * time.Millisecond)
	k.reconcile(context.Background())
	if addr.present {
		t.Fatal("a follower kept a VIP")
	}
}

// slowAddress takes time to write, as netlink does on a loaded host.
type slowAddress struct {
	*fakeAddress
	delay time.Duration
}

func (s *slowAddress) Ensure() (bool, error) {
	s.clock.Step(s.delay)
	return s.fakeAddress.Ensure()
}

// A refresh whose write completes past RefreshBy but inside the term keeps the VIP: the
// next leader's guard covers a lifetime that may now end after the earliest takeover, and
// dropping the VIP here would only blank the front door. (Before the guard, this dropped it.)
func TestAWriteThatEndsAfterRefreshByKeepsTheVIP(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	k.addr = &slowAddress{fakeAddress: addr, delay: 30 * time.Millisecond}
	term := termAt(clk.Now())
	k.Leading(term, true)
	clk.SetTime(term.RefreshBy.Add(-10 * time.Millisecond))
	k.reconcile(context.Background())
	if !addr.present {
		t.Fatal("a refresh that completed just past RefreshBy blanked the VIP inside the term")
	}
	advance(k, clk, term.End.Sub(clk.Now()))
	if addr.present {
		t.Fatal("the VIP outlived the term")
	}
}

func TestAWriteAfterAFreezeDropsTheVIP(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	k.addr = &slowAddress{fakeAddress: addr, delay: 2 * time.Second} // frozen between check and write
	k.Leading(termAt(clk.Now()), true)
	if addr.present {
		t.Fatal("a write that landed after a freeze left the VIP beyond the term")
	}
}

// L8: a follower does not send a netlink delete on every tick; it still clears a VIP put
// on its NIC by hand within a second.
func TestFollowerSweepsOncePerSecond(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	advance(k, clk, 3*time.Second)
	if addr.removes > 4 {
		t.Fatalf("%d netlink deletes in 3s on a follower, want about one a second", addr.removes)
	}
	addr.present, addr.expiresAt = true, clk.Now().Add(time.Hour) // put there by hand
	advance(k, clk, followerSweep)
	if addr.present {
		t.Fatal("a follower kept a VIP put there by hand for more than a second")
	}
}
