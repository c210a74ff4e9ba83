// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns_test

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

func TestTwoAnswerers(t *testing.T) {
	a := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	b := net.HardwareAddr{2, 0, 0, 0, 0, 2}
	t0 := time.Unix(1000, 0)
	at := func(ms int, mac net.HardwareAddr) netns.Answer {
		return netns.Answer{At: t0.Add(time.Duration(ms) * time.Millisecond), MAC: mac}
	}
	every := func(from, to int, mac net.HardwareAddr) []netns.Answer {
		var out []netns.Answer
		for ms := from; ms <= to; ms += 10 {
			out = append(out, at(ms, mac))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		answers []netns.Answer
		want    time.Duration
		after   []string // Answerers from 1000 ms on
	}{
		{"none", nil, 0, nil},
		{"one MAC", every(0, 2000, a), 0, []string{a.String()}},
		{"clean handover", append(every(0, 500, a), every(900, 2000, b)...), 0, []string{b.String()}},
		{"handover in one gap", append(every(0, 500, a), every(500, 2000, b)...), 0, []string{b.String()}},
		{"the old holder answers again after the heal", slices.Concat(every(0, 300, a), every(700, 2000, b), every(1200, 1500, a)), 300 * time.Millisecond, []string{b.String(), a.String()}},
		{"a single stray answer", slices.Concat(every(0, 2000, b), []netns.Answer{at(1205, a)}), 0, []string{b.String(), a.String()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slices.SortFunc(tc.answers, func(x, y netns.Answer) int { return x.At.Compare(y.At) })
			if got := netns.TwoAnswerers(tc.answers, 50*time.Millisecond); got != tc.want {
				t.Errorf("TwoAnswerers = %s, want %s", got, tc.want)
			}
			if got := netns.Answerers(tc.answers, t0.Add(time.Second)); !slices.Equal(got, tc.after) {
				t.Errorf("Answerers = %v, want %v", got, tc.after)
			}
		})
	}
}
