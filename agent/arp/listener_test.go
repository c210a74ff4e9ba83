// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// When the holder fences: only after a follower's stream of probes, and only once nothing
// has continued it for timing.FenceSilence.
func TestHearingFencesOnlyAfterAStreamFellSilent(t *testing.T) {
	const f1, f2, client = "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:99"
	iv := timing.FollowerProbeInterval
	// requests lists (ms, MAC); deafAt is the first check (every FenceCheckInterval) that
	// finds the holder deaf, -1 for none within the run.
	type req struct {
		ms  int
		mac string
	}
	probes := func(mac string, from, to int) []req {
		var out []req
		for ms := from; ms <= to; ms += int(iv / time.Millisecond) {
			out = append(out, req{ms, mac})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		requests []req
		deafAt   int
	}{
		{"nothing heard: never armed", nil, -1},
		{"a client asks once a second: never armed", []req{{0, client}, {1000, client}, {2000, client}}, -1},
		{"two followers, then the cut", append(probes(f1, 0, 1000), probes(f2, 50, 1050)...), 1050 + 350},
		{"one follower, then the cut", probes(f1, 0, 1000), 1000 + 350},
		{"one follower, two probes lost, then the cut", append(probes(f1, 0, 1000), probes(f1, 1300, 2500)...), 2500 + 350},
		{"one follower, three probes lost", append(probes(f1, 0, 1000), probes(f1, 1400, 2500)...), 1000 + 350},
		{"a single request after the fence does not re-arm", append(probes(f1, 0, 1000), req{1500, f1}), 1000 + 350},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			var h Hearing
			got := -1
			for ms := 0; ms <= 3000; ms += int(timing.FenceCheckInterval / time.Millisecond) {
				now := t0.Add(time.Duration(ms) * time.Millisecond)
				for _, r := range tc.requests {
					if at := r.ms; at > ms-int(timing.FenceCheckInterval/time.Millisecond) && at <= ms {
						h.Heard(r.mac, now)
					}
				}
				if h.Deaf(now) {
					if got < 0 {
						got = ms
					}
					h = Hearing{} // as Run: disarmed until a stream is heard again
				}
			}
			if got != tc.deafAt {
				t.Errorf("deaf at %d ms, want %d", got, tc.deafAt)
			}
		})
	}
}
