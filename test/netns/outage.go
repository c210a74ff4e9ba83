// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"testing"
	"time"
)

// CheckOutage fails the test if an outage the prober saw did not end, or if the longest
// one exceeded bound (bound <= 0: not bounded, only measured); it logs the longest outage.
func CheckOutage(t testing.TB, scenario string, res ProbeResult, bound time.Duration) {
	t.Helper()
	for _, o := range res.Outages {
		if o.Open() {
			t.Errorf("%s: the target was still unreachable when probing ended (%d probes since %s: %s)", scenario, o.Failed, o.Start.Format(time.StampMilli), o.FirstError)
		}
	}
	limit := "not bounded"
	if bound > 0 {
		limit = "bound " + bound.String()
	}
	t.Logf("%s: longest outage %s (%s), %d outages, %d of %d probes failed", scenario, res.Longest().Round(time.Millisecond), limit, len(res.Outages), res.Failures, res.Probes)
	if bound > 0 && res.Longest() > bound {
		t.Errorf("%s: longest outage %s exceeds the bound %s", scenario, res.Longest().Round(time.Millisecond), bound)
	}
}
