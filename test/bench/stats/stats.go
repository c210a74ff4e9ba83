// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package stats summarises benchmark samples: nearest-rank percentiles over durations.
package stats

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of duration samples.
type Summary struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50"`
	P95 time.Duration `json:"p95"`
	Max time.Duration `json:"max"`
}

// Summarize returns the nearest-rank p50, p95 and the maximum of samples. An empty input
// gives the zero Summary.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Summary{
		N:   len(s),
		P50: Percentile(s, 50),
		P95: Percentile(s, 95),
		Max: s[len(s)-1],
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted, which
// must be sorted in ascending order and not empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Ratio returns a/b, or NaN when b is zero.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}
