// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// TestDecide takes each branch of the elector once, with the default timings (R = 1060 ms,
// D = 1360 ms, L = 1470 ms); times are milliseconds after the start of the last write
// (a leader) or after the follower saw the last change of the Lease.
func TestDecide(t *testing.T) {
	tm := timing.Defaults()
	const ms = time.Millisecond
	r, d, l := tm.RetryPeriod, tm.RenewDeadline, tm.LeaseDuration
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const retry = 300 * ms // a follower's drawn retry after a failed takeover write

	leader := func(change func(*view)) view {
		v := view{timings: tm, identity: "a", leading: true, exists: true, holder: "a", ownRecord: true,
			observedAt: t0, wait: l, mayKeep: true, renewStarted: t0, lastAttempt: t0}
		if change != nil {
			change(&v)
		}
		return v
	}
	follower := func(change func(*view)) view {
		v := view{timings: tm, identity: "b", exists: true, holder: "a", observedAt: t0, wait: l,
			eligible: true, retry: retry}
		if change != nil {
			change(&v)
		}
		return v
	}
	released := func(v *view) { v.holder, v.releaseSeen = "", true }
	offered := func(v *view) { v.offered = true }
	// silent: the follower saw the holder at 0, heard the VIP answer at 200 ms, and nothing
	// since 300 ms (its last answered probe), through its prober's confirmation burst.
	silent := func(v *view) {
		v.holderSeenAt = t0
		v.vip = Silence{HeardAt: at(200 * ms), SilentSince: at(300 * ms), Confirmed: true}
	}
	early := 300*ms + timing.EarlyTakeoverSilence

	for _, tc := range []struct {
		name string
		v    view
		now  time.Duration
		want action
		wake time.Duration
	}{
		// The leader.
		{"leader between renewals waits for the next", leader(nil), 500 * ms, idle, r},
		{"leader renews a retry period after its last renewal", leader(nil), r, renew, r},
		{"leader whose renewal failed retries a quarter period later", leader(nil), r + 20*ms, renew, r + 20*ms + r/4},
		{"leader retries at the end of its term at the latest", leader(nil), d - 100*ms, renew, d},
		{"leader whose write came late renews at once", leader(func(v *view) { v.renewLate = true }), 300 * ms, renew, 300 * ms},
		{"leader whose keeper asks renews at once", leader(func(v *view) { v.renewAsked = true }), 300 * ms, renew, 300 * ms},
		{"leader ends its term at the deadline", leader(nil), d, expire, d},
		{"leader steps down when the Lease names another holder", leader(func(v *view) { v.holder = "b" }), 500 * ms, stepDown, r},
		{"leader that may not keep leading resigns", leader(func(v *view) { v.mayKeep = false }), 500 * ms, resign, r},
		{"leader holding through a stall retries after the attempt's timeout",
			leader(func(v *view) { v.stalled, v.lastAttempt = true, at(d) }), d + 100*ms, renew, d + timing.StalledRetryTimeout},
		{"leader holding through a stall keeps its term past the deadline",
			leader(func(v *view) { v.stalled, v.lastAttempt = true, at(d+timing.StalledWriteHold-100*ms) }),
			d + timing.StalledWriteHold - 50*ms, renew, d + timing.StalledWriteHold},
		{"leader whose stall outlasts the hold ends its term",
			leader(func(v *view) { v.stalled, v.lastAttempt = true, at(d+timing.StalledWriteHold-100*ms) }),
			d + timing.StalledWriteHold, expire, d + timing.StalledWriteHold},

		// The follower.
		{"follower that is not eligible looks again a retry period later", follower(func(v *view) { v.eligible = false; released(v) }),
			500 * ms, idle, 500*ms + r},
		{"follower waits for a held Lease to expire", follower(nil), 500 * ms, idle, l},
		{"follower takes an expired Lease after a read", follower(nil), l, takeOver, l + retry},
		{"follower waits the longer lease duration the holder published", follower(func(v *view) { v.wait = 3 * time.Second }),
			l, idle, 3 * time.Second},
		{"follower waits for a deleted Lease as for an expiry", follower(func(v *view) { v.exists, v.holder = false, "" }),
			l, takeOver, l + retry},
		{"follower takes a release at once", follower(released), 0, acquire, retry},
		{"follower takes back its own record at once", follower(func(v *view) { v.holder, v.ownRecord = "b", true }), 0, acquire, retry},
		{"follower waits for its own name in a record it did not write", follower(func(v *view) { v.holder = "b" }), 0, idle, l},
		{"follower takes an offer at once", follower(offered), 0, acquire, retry},
		{"follower that resigned leaves a release to the others", follower(func(v *view) { released(v); v.resignedAt = at(-100 * ms) }),
			0, idle, l},
		{"follower that resigned takes an unclaimed release once held down no longer",
			follower(func(v *view) { released(v); v.resignedAt = at(-2*l + 500*ms) }), 500 * ms, acquire, 500*ms + retry},
		{"follower that resigned ignores an offer", follower(func(v *view) { offered(v); v.resignedAt = t0 }), 0, idle, l},
		{"follower that was recently not eligible ignores an offer",
			follower(func(v *view) { offered(v); v.ineligibleAt = at(-OfferHoldDown + ms) }), 0, idle, l},
		{"follower takes an offer once it stayed eligible for the hold-down",
			follower(func(v *view) { offered(v); v.ineligibleAt = at(-OfferHoldDown) }), 0, acquire, retry},
		{"follower recently cut off from its peers ignores an offer",
			follower(func(v *view) { offered(v); v.vip.CutAt = at(-OfferHoldDown + ms) }), 0, idle, l},
		{"follower cut off long ago takes an offer",
			follower(func(v *view) { offered(v); v.ineligibleAt, v.vip.CutAt = at(-2*OfferHoldDown), at(-OfferHoldDown) }), 0, acquire, retry},
		{"follower recently cut off, though eligible all along, still takes a release",
			follower(func(v *view) { released(v); v.vip.CutAt = at(-ms) }), 0, acquire, retry},
		{"follower that should yield takes a release YieldDelay later", follower(func(v *view) { released(v); v.defers = true }),
			0, idle, YieldDelay},
		{"follower that should yield takes a release after YieldDelay", follower(func(v *view) { released(v); v.defers = true }),
			YieldDelay, acquire, YieldDelay + retry},
		{"follower that should yield ignores an offer", follower(func(v *view) { offered(v); v.defers = true }),
			0, idle, l + YieldDelay},
		{"follower that should yield takes an expired Lease after the others", follower(func(v *view) { v.defers = true }),
			l + YieldDelay, takeOver, l + YieldDelay + retry},
		{"follower waits for a silent VIP to stay silent", follower(silent), 500 * ms, idle, early},
		{"follower takes the Lease of a holder whose VIP fell silent", follower(silent), early, takeEarly, early + retry},
		{"follower whose prober has not confirmed the silence waits for its poke or the expiry",
			follower(func(v *view) { silent(v); v.vip.Confirmed = false }), early + 30*ms, idle, l},
		{"follower whose early write failed leaves the record to its expiry",
			follower(func(v *view) { silent(v); v.earlyFailedAt = at(early + 5*ms) }), early + 10*ms, idle, l},
		{"follower whose early write failed does not try again on a newer record in the same silence",
			follower(func(v *view) { silent(v); v.earlyFailedAt, v.observedAt = at(early+5*ms), at(early+50*ms) }),
			early + 60*ms, idle, early + 50*ms + l},
		{"follower whose early write failed tries again on a silence that began after the failure",
			follower(func(v *view) { silent(v); v.earlyFailedAt = at(250 * ms) }), early, takeEarly, early + retry},
		{"follower that never heard the holder's VIP waits for the expiry",
			follower(func(v *view) { silent(v); v.vip.HeardAt = time.Time{} }), early, idle, l},
		{"follower that heard only the previous holder waits for the expiry",
			follower(func(v *view) { silent(v); v.holderSeenAt = at(250 * ms) }), early, idle, l},
		{"follower that heard the previous holder's MAC after the handover waits for the expiry",
			follower(func(v *view) {
				silent(v)
				v.holderMAC, v.vip.HeardFrom = "fa:16:3e:00:00:02", "fa:16:3e:00:00:01"
			}), early, idle, l},
		{"follower that heard the holder's own MAC takes its silent Lease early",
			follower(func(v *view) {
				silent(v)
				v.holderMAC, v.vip.HeardFrom = "fa:16:3e:00:00:02", "FA:16:3E:00:00:02"
			}), early, takeEarly, early + retry},
		{"follower whose VIP answers waits for the expiry",
			follower(func(v *view) { silent(v); v.vip.SilentSince = time.Time{} }), early, idle, l},
		{"follower whose VIP answered lately waits for a silence from then",
			follower(func(v *view) { silent(v); v.vip.HeardAt, v.vip.SilentSince = at(early), at(early) }),
			early, idle, early + timing.EarlyTakeoverSilence},
		{"follower that is not eligible does not take a silent holder's Lease",
			follower(func(v *view) { silent(v); v.eligible = false }), early, idle, early + r},
		{"follower that should yield takes a silent holder's Lease EarlyYieldDelay later",
			follower(func(v *view) { silent(v); v.defers = true }), early + YieldDelay, idle, early + EarlyYieldDelay},
		{"follower that should yield takes a silent holder's Lease after EarlyYieldDelay",
			follower(func(v *view) { silent(v); v.defers = true }), early + EarlyYieldDelay, takeEarly, early + EarlyYieldDelay + retry},
		{"follower that resigned still takes a silent holder's Lease",
			follower(func(v *view) { silent(v); v.resignedAt = t0 }), early, takeEarly, early + retry},
		{"follower takes its own record at once, silent or not",
			follower(func(v *view) { silent(v); v.holder, v.ownRecord = "b", true }), 0, acquire, retry},
		{"follower does not take a released Lease early when held down",
			follower(func(v *view) { silent(v); released(v); v.resignedAt = t0 }), early, idle, l},
		{"follower whose silence outlasts the expiry takes over after a read",
			follower(func(v *view) { silent(v); v.vip.SilentSince = at(l) }), l, takeOver, l + retry},
		{"follower whose read stalled leaves the holder time to renew",
			follower(func(v *view) { v.stallNotBefore = at(l + timing.StalledTakeoverDelay) }), l, idle, l + timing.StalledTakeoverDelay},
		{"follower whose prompt read found the VIP answered leaves the holder a retry",
			follower(func(v *view) { v.stallNotBefore = at(l + timing.StalledRetryWait) }), l + 10*ms, idle, l + timing.StalledRetryWait},
		{"follower reads again for a takeover after the holder's retry",
			follower(func(v *view) { v.stallNotBefore = at(l + timing.StalledRetryWait) }), l + timing.StalledRetryWait,
			takeOver, l + timing.StalledRetryWait + retry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, wake := decide(tc.v, at(tc.now))
			if got != tc.want || !wake.Equal(at(tc.wake)) {
				t.Errorf("decide at %v = %v, wake at %v; want %v, wake at %v",
					tc.now, got, wake.Sub(t0), tc.want, tc.wake)
			}
		})
	}
}
