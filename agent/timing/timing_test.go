// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package timing

import (
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
		"retry not below renew":    {func(t *Timings) { t.RetryPeriod = 1500 * time.Millisecond }, FieldRenewDeadline},
		"renew not below lease":    {func(t *Timings) { t.LeaseDuration = time.Second }, FieldLeaseDuration},
		"fractional lifetime":      {func(t *Timings) { t.VIPLifetime = 1500 * time.Millisecond }, FieldVIPLifetime},
		"lifetime fills the lease": {func(t *Timings) { t.VIPLifetime = 2 * time.Second }, FieldVIPLifetime},
		"no refresh window":        {func(t *Timings) { t.LeaseDuration = 1350 * time.Millisecond; t.RenewDeadline = 1200 * time.Millisecond }, FieldVIPLifetime},
		"renewal misses the tick":  {func(t *Timings) { t.RetryPeriod = 1200 * time.Millisecond }, FieldRetryPeriod},
		"zero retry":               {func(t *Timings) { t.RetryPeriod = 0 }, FieldRetryPeriod},
		"no takeover margin":       {func(t *Timings) { t.LeaseDuration = t.RenewDeadline + time.Millisecond }, FieldLeaseDuration},
		"no time to renew":         {func(t *Timings) { t.RetryPeriod = 1280 * time.Millisecond }, FieldRetryPeriod},
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
// earliest takeover, the planned lapse of a dead leader's VIP is not either (so that the
// next leader's guard normally finds it gone), and the refresh window is not empty.
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
					if tm.Lapse(term).After(term.EarliestTakeover) {
						t.Fatalf("%+v: a dead leader's VIP is planned to lapse at %v, after the earliest takeover %v", tm, tm.Lapse(term), term.EarliestTakeover)
					}
					if term.RefreshBy.Sub(term.Start) < MinRefreshWindow {
						t.Fatalf("%+v: refresh window %s", tm, term.RefreshBy.Sub(term.Start))
					}
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no timings accepted")
	}
}

// TestOldDefaultsBudgetWasShort shows the defect the budget fixes: the old rule let the
// leader refresh until S+0.25 and accept a write landing 50 ms later, so a crashed leader's
// VIP could stay until S+0.3+1s+KernelExpiryLateness, after the takeover at S+1.5.
func TestOldDefaultsBudgetWasShort(t *testing.T) {
	tm := Defaults()
	term := tm.TermFrom(time.Unix(1000, 0))
	oldLastRefresh := term.End.Add(-tm.VIPLifetime) // the old rule: refresh while now+lifetime(+slack) ≤ term end
	if !oldLastRefresh.Add(tm.VIPLifetime + KernelExpiryLateness).After(term.EarliestTakeover) {
		t.Fatal("the old refresh rule would have been safe; the budget is not needed")
	}
	if !term.RefreshBy.Before(oldLastRefresh) {
		t.Fatalf("RefreshBy %v is not earlier than the old rule's last refresh %v", term.RefreshBy, oldLastRefresh)
	}
}
