// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// TestKeeperState takes each state of the keeper once, with the default timings (D =
// 1360 ms, RefreshBy = max(0, L − lifetime) = 0: a 2 s lifetime outlives the lease, so only
// the renewal's start refreshes it); times are milliseconds after the term's start.
func TestKeeperState(t *testing.T) {
	tm := timing.Defaults()
	const ms = time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	term := tm.TermFrom(t0)
	refreshBy := term.RefreshBy.Sub(t0)
	for _, tc := range []struct {
		name      string
		term      timing.Term
		suspended bool
		present   bool
		now       time.Duration
		want      state
	}{
		{"following", timing.Term{}, false, false, 0, off},
		{"following with the health gate closed", timing.Term{}, true, false, 0, off},
		{"leading with the health gate closed", term, true, true, 100 * ms, suspended},
		{"leading, the VIP not on yet", term, false, false, 100 * ms, probing},
		{"leading, the VIP on", term, false, true, refreshBy, held},
		{"leading past RefreshBy", term, false, true, refreshBy + ms, lapsing},
		{"leading past RefreshBy, the VIP not on", term, false, false, refreshBy + ms, probing},
		{"the term ended", term, false, true, tm.RenewDeadline, over},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &keeper{term: tc.term, suspended: tc.suspended, present: tc.present}
			if got := k.stateLocked(t0.Add(tc.now)); got != tc.want {
				t.Errorf("state at %v = %v, want %v", tc.now, got, tc.want)
			}
		})
	}
}
