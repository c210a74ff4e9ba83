// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package stats

import (
	"math"
	"testing"
	"time"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name          string
		in            []time.Duration
		p50, p95, max time.Duration
	}{
		{"one", ms(7), 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{"ten unsorted", ms(10, 1, 9, 2, 8, 3, 7, 4, 6, 5), 5 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond},
		{"twenty", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 100), 10 * time.Millisecond, 19 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.in)
			if got.N != len(tc.in) || got.P50 != tc.p50 || got.P95 != tc.p95 || got.Max != tc.max {
				t.Fatalf("Summarize(%v) = %+v, want p50 %v p95 %v max %v", tc.in, got, tc.p50, tc.p95, tc.max)
			}
		})
	}
	if got := Summarize(nil); got != (Summary{}) {
		t.Fatalf("Summarize(nil) = %+v", got)
	}
}

func TestSummarizeKeepsInput(t *testing.T) {
	in := ms(3, 1, 2)
	Summarize(in)
	if in[0] != 3*time.Millisecond {
		t.Fatalf("input reordered: %v", in)
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(time.Second, 4*time.Second); got != 0.25 {
		t.Fatalf("Ratio = %v", got)
	}
	if got := Ratio(time.Second, 0); !math.IsNaN(got) {
		t.Fatalf("Ratio by zero = %v", got)
	}
}
