// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"fmt"
	"testing"
	"time"
)

func TestDefaultsHaveNoProblems(t *testing.T) {
	if p := Defaults().Problems(); len(p) != 0 {
		t.Fatalf("defaults: %v", p)
	}
}

func TestProblems(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Timings)
		field  Field
	}{
		"retry not below renew": {func(t *Timings) { t.RetryPeriod = 1500 * time.Millisecond }, FieldRenewDeadline},
		"renew not below lease": {func(t *Timings) { t.LeaseDuration = time.Second }, FieldLeaseDuration},
		"fractional lifetime":   {func(t *Timings) { t.VIPLifetime = 1500 * time.Millisecond }, FieldVIPLifetime},
		"lifetime too short for the renewals": {func(t *Timings) {
			t.VIPLifetime, t.RetryPeriod = time.Second, 1300*time.Millisecond
		}, FieldRetryPeriod},
		"renewal misses the tick": {func(t *Timings) { t.VIPLifetime, t.RetryPeriod = time.Second, 1350*time.Millisecond }, FieldRetryPeriod},
		"zero retry":              {func(t *Timings) { t.RetryPeriod = 0 }, FieldRetryPeriod},
		"no takeover margin":      {func(t *Timings) { t.LeaseDuration = t.RenewDeadline + time.Millisecond }, FieldLeaseDuration},
		"no time to renew":        {func(t *Timings) { t.VIPLifetime, t.RetryPeriod = time.Second, 1280*time.Millisecond }, FieldRetryPeriod},
	} {
		t.Run(name, func(t *testing.T) {
			tm := Defaults()
			tc.mutate(&tm)
			found := false
			for _, p := range tm.Problems() {
				found = found || p.Field == tc.field
			}
			if !found {
				t.Fatalf("no problem on %s in %v", tc.field, tm.Problems())
			}
		})
	}
}

// TestAcceptedTimingsNeverHaveTwoHolders walks a grid of timings: whatever Problems accepts,
// the latest moment a living leader can hold the VIP (active removal) is not after the
// earliest takeover; a lifetime shorter than the lease runs out, by the kernel's clock, by
// the earliest takeover, and one that is not starts at the term's start (so the dead
// holder's VIP lapses as early as the lifetime allows); the kernel is expected to remove it
// no earlier than the earliest takeover (so a dead holder's node serves until a follower can
// take over, whose guard then waits for the removal); and the last refresh lasts until the
// next renewal has had MinRenewBudget.
func TestAcceptedTimingsNeverHaveTwoHolders(t *testing.T) {
	accepted := 0
	start := time.Unix(1000, 0)
	for l := 1000 * time.Millisecond; l <= 5*time.Second; l += 50 * time.Millisecond {
		for d := 500 * time.Millisecond; d < l; d += 50 * time.Millisecond {
			for r := 100 * time.Millisecond; r < d; r += 100 * time.Millisecond {
				for life := time.Second; life <= 3*time.Second; life += time.Second {
					tm := Timings{LeaseDuration: l, RenewDeadline: d, RetryPeriod: r, VIPLifetime: life}
					if len(tm.Problems()) != 0 {
						continue
					}
					accepted++
					term := tm.TermFrom(start)
					if tm.LatestHold(term).After(term.EarliestTakeover) {
						t.Fatalf("%+v: the VIP may be held until %v, after the earliest takeover %v", tm, tm.LatestHold(term), term.EarliestTakeover)
					}
					if runsOut := term.RefreshBy.Add(tm.VIPLifetime); tm.VIPLifetime < l && runsOut.After(term.EarliestTakeover) {
						t.Fatalf("%+v: the last refresh runs out at %v, after the earliest takeover %v", tm, runsOut, term.EarliestTakeover)
					}
					if tm.VIPLifetime >= l && !term.RefreshBy.Equal(term.Start) {
						t.Fatalf("%+v: a lifetime that outlives the lease is refreshed until %v, want only at the start %v", tm, term.RefreshBy, term.Start)
					}
					if tm.Lapse(term).Before(term.EarliestTakeover) {
						t.Fatalf("%+v: a dead leader's VIP is expected to lapse at %v, before the earliest takeover %v", tm, tm.Lapse(term), term.EarliestTakeover)
					}
					lastRefresh := term.RefreshBy.Add(-KeeperTick)
					if lastRefresh.Before(term.Start) {
						lastRefresh = term.Start
					}
					earliestLapse := lastRefresh.Add(tm.VIPLifetime - KernelExpiryEarliness)
					if earliestLapse.Before(term.Start.Add(tm.RetryPeriod + MinRenewBudget)) {
						t.Fatalf("%+v: the last refresh may lapse at %v, before the next renewal had %s", tm, earliestLapse, MinRenewBudget)
					}
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no timings accepted")
	}
}

// TestContinuityNeedsTickEarlinessAndBudget pins the continuity rule at its bound: the lease
// duration must exceed the retry period by KeeperTick + KernelExpiryEarliness +
// MinRenewBudget (0.22 s), no more. The rule before this one also subtracted
// KernelExpiryLateness from RefreshBy and asked for 0.52 s; it refused these timings, and
// today's defaults.
func TestContinuityNeedsTickEarlinessAndBudget(t *testing.T) {
	margin := KeeperTick + KernelExpiryEarliness + MinRenewBudget
	lease := 1470 * time.Millisecond
	at := Timings{LeaseDuration: lease, RenewDeadline: 1360 * time.Millisecond, RetryPeriod: lease - margin, VIPLifetime: time.Second}
	if p := at.Problems(); len(p) != 0 {
		t.Fatalf("%+v: a lease %s above the retry period is refused: %v", at, margin, p)
	}
	below := at
	below.RetryPeriod += time.Millisecond
	p := below.Problems()
	if len(p) != 1 || p[0].Field != FieldRetryPeriod {
		t.Fatalf("%+v: want one problem on %s, got %v", below, FieldRetryPeriod, p)
	}
	if want := fmt.Sprintf("must be at most %s, so that a renewal can refresh the VIP before it expires", at.RetryPeriod); p[0].Message != want {
		t.Errorf("message %q, want %q", p[0].Message, want)
	}
}

// The follower's wait for a stalled holder's retry applies only where a dead holder's VIP
// outlives it, so that it never lengthens a crash takeover.
func TestAnsweredTakeoverDelay(t *testing.T) {
	if d := Defaults().AnsweredTakeoverDelay(); d != StalledRetryWait {
		t.Errorf("defaults: %s, want %s", d, StalledRetryWait)
	}
	short := Defaults()
	short.VIPLifetime = time.Second
	if d := short.AnsweredTakeoverDelay(); d != 0 {
		t.Errorf("a lifetime below the lease duration: %s, want none", d)
	}
	long := Defaults()
	long.LeaseDuration = long.VIPLifetime - StalledRetryWait - TakeoverRoom + time.Millisecond
	if d := long.AnsweredTakeoverDelay(); d != 0 {
		t.Errorf("L + the wait + room beyond V: %s, want none", d)
	}
}

// The early takeover's silence must be a run of follower probes as long as the guard's, and
// leave a new holder time between its guard's verdict and its first answer: one netlink
// add, so three verdicts' worth covers a scheduling stall of the new holder's agent too.
func TestEarlyTakeoverSilence(t *testing.T) {
	if EarlyTakeoverSilence < TakeoverProbes*FollowerProbeInterval {
		t.Errorf("EarlyTakeoverSilence %s is shorter than %d follower probes (%s)",
			EarlyTakeoverSilence, TakeoverProbes, TakeoverProbes*FollowerProbeInterval)
	}
	if room := EarlyTakeoverSilence - TakeoverSilence; room < 3*TakeoverSilence {
		t.Errorf("EarlyTakeoverSilence leaves a new holder %s after its guard's verdict, want at least %s", room, 3*TakeoverSilence)
	}
	if d := Defaults(); EarlyTakeoverSilence+FollowerProbeInterval+ConfirmSilence >= d.LeaseDuration {
		t.Errorf("EarlyTakeoverSilence %s and its confirmation (%s) do not beat the expiry of a lease (%s)", EarlyTakeoverSilence, ConfirmSilence, d.LeaseDuration)
	}
}

// The confirmation burst ends before the prober's next tick, so that it never costs a
// regular probe, and asks at least as often as the silence did: a false silence then needs
// at least twice the losses.
func TestConfirmationFitsBetweenTwoProbes(t *testing.T) {
	if ConfirmSilence >= FollowerProbeInterval {
		t.Errorf("ConfirmSilence %s does not end before the next probe (%s)", ConfirmSilence, FollowerProbeInterval)
	}
	if silent := int(EarlyTakeoverSilence / FollowerProbeInterval); ConfirmProbes < silent {
		t.Errorf("ConfirmProbes %d asks less often than the %d probes of the silence", ConfirmProbes, silent)
	}
	if SilenceTickSlack >= ConfirmSilence || SilenceTickSlack >= FollowerProbeInterval/2 {
		t.Errorf("SilenceTickSlack %s must stay below ConfirmSilence (%s), so that a confirmed silence is a full EarlyTakeoverSilence, and well below a probe interval, so that it never saves a lost answer", SilenceTickSlack, ConfirmSilence)
	}
}

// The holder's fence: it tolerates two probes in a row lost from a single follower, with
// jitter to spare, and it removes the VIP (checked at most FenceCheckInterval late, removed
// within ActiveRemovalLateness) before the earliest add of a follower that took the Lease
// on its silence. Each follower probes every FollowerProbeInterval, so the holder heard its
// last probe no more than an interval before it last heard anybody, and the follower's
// silence starts when it reads that probe's answer, an interval after it sent it: no
// earlier than the holder's last hearing. It writes EarlyTakeoverSilence later at the
// earliest, and its guard adds TakeoverSilence after the write's start.
func TestFenceComesBeforeTheEarlyTakeover(t *testing.T) {
	if gap := 3 * FollowerProbeInterval; FenceSilence-gap < FollowerProbeInterval/2 {
		t.Errorf("FenceSilence %s leaves less than %s above the gap of two lost probes (%s)", FenceSilence, FollowerProbeInterval/2, gap)
	}
	fenced := FenceSilence + FenceCheckInterval + ActiveRemovalLateness
	if earliestAdd := EarlyTakeoverSilence + TakeoverSilence; fenced > earliestAdd {
		t.Errorf("the holder may hold the VIP until %s after it last heard a follower, after the earliest early taker's add (%s)", fenced, earliestAdd)
	}
}

// A follower cut off at L2 reads its peers' last probe at most one probe interval after
// the holder's last answer (that answer may be the one to the probe before the cut) and
// notices its deafness PeerSilence after that: before its early takeover, which comes
// EarlyTakeoverSilence after the holder's last answer.
func TestDeafFollowerKnowsBeforeItsEarlyTakeover(t *testing.T) {
	if deaf := FollowerProbeInterval + PeerSilence; deaf >= EarlyTakeoverSilence {
		t.Errorf("a cut follower knows it is deaf %s after the holder's last answer, not before its early takeover (%s)", deaf, EarlyTakeoverSilence)
	}
	if gap := 2 * FollowerProbeInterval; PeerSilence-gap < FollowerProbeInterval/2 {
		t.Errorf("PeerSilence %s leaves less than %s above the gap of one lost probe (%s)", PeerSilence, FollowerProbeInterval/2, gap)
	}
}

// A follower that went deaf trusts no silence of the holder until it hears its peers again,
// or for PeerReturnWait: its deafness may have been another follower's cut, and its own cut
// may follow that one's heal. The wait must outlast such a cut of the other follower (1 s
// in the bench's follower-cut-1s and the steady soak; 2.5 s is the longest cut of any
// node the bench makes) with room to spare; meanwhile a follower whose peers are gone for
// good takes over by expiry, so it stays well under a minute.
func TestPeerReturnWaitOutlastsACut(t *testing.T) {
	const longestCut = 2500 * time.Millisecond
	if PeerReturnWait < 2*longestCut {
		t.Errorf("PeerReturnWait %s does not cover a cut of %s twice over", PeerReturnWait, longestCut)
	}
	if PeerReturnWait > time.Minute {
		t.Errorf("PeerReturnWait %s keeps a follower whose peers are gone from the early takeover for over a minute", PeerReturnWait)
	}
}
