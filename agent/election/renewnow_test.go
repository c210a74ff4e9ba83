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

// A leader whose keeper found the VIP missing renews at once when asked, with one write,
// and then keeps its usual pace; the new term starts after the request.
func TestRenewNowRenewsOnceAtOnce(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, rec := h.candidate(t, "node-a", tm)
	a.tryAcquireOrRenew(context.Background())
	h.clock.Step(300 * time.Millisecond)
	asked := h.clock.Now()
	a.RenewNow()
	a.step(context.Background())
	if len(rec.renewing) != 1 || len(rec.terms) != 2 || rec.terms[1].Start.Before(asked) {
		t.Fatalf("after RenewNow: OnRenewing %d, terms %d; want one renewal whose term starts at or after the request (%v)",
			len(rec.renewing), len(rec.terms), asked)
	}
	if wait := a.nextWakeup(); wait != tm.RetryPeriod {
		t.Fatalf("next wakeup in %v after the asked renewal, want a retry period (%v)", wait, tm.RetryPeriod)
	}
	calls := h.leases.calls
	h.clock.Step(100 * time.Millisecond)
	a.step(context.Background())
	if h.leases.calls != calls {
		t.Fatalf("%d more requests after the asked renewal, want none before the next regular one", h.leases.calls-calls)
	}
}
