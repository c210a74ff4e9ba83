// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// fakeHolder answers every request after delay, except the requests whose index lost says.
type fakeHolder struct {
	mu     sync.Mutex
	delay  time.Duration
	lost   func(i int) bool
	silent bool // nobody holds the VIP
	sent   []time.Time
	read   int // answers drained so far
}

func (f *fakeHolder) send() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, time.Now())
	return nil
}

func (f *fakeHolder) drain() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var holders []string
	for ; f.read < len(f.sent) && !time.Now().Before(f.sent[f.read].Add(f.delay)); f.read++ {
		if !f.silent && (f.lost == nil || !f.lost(f.read)) {
			holders = append(holders, "02:00:00:00:00:09")
		}
	}
	return holders, nil
}

func (f *fakeHolder) Close() error { return nil }

func freeWithin(t *testing.T, p probe, d time.Duration) (bool, string, time.Duration) {
	t.Helper()
	g := NewGuard("eth0", ip4)
	g.probe = p
	since := time.Now()
	g.since = since
	free, holder, err := g.Free(context.Background(), since, since.Add(d))
	if err != nil {
		t.Fatal(err)
	}
	return free, holder, time.Since(since)
}

var ip4 = netip.MustParseAddr("198.18.5.100")

// The verdict rule: free only after TakeoverProbes requests in a row went unanswered for
// TakeoverReplyBound each; answers up to that late, and TakeoverProbes-1 lost answers in a
// row, still find the holder (real time; the answers come from a fake).
func TestVerdictToleratesLateAndLostAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		holder   *fakeHolder
		wantFree bool
	}{
		"nobody answers":               {holder: &fakeHolder{silent: true}, wantFree: true},
		"answers 40 ms late":           {holder: &fakeHolder{delay: 40 * time.Millisecond}},
		"answers at the bound":         {holder: &fakeHolder{delay: timing.TakeoverReplyBound - 5*time.Millisecond}},
		"the first three answers lost": {holder: &fakeHolder{delay: 40 * time.Millisecond, lost: func(i int) bool { return i < timing.TakeoverProbes-1 }}},
		"every other answer lost":      {holder: &fakeHolder{delay: 10 * time.Millisecond, lost: func(i int) bool { return i%2 == 0 }}},
	} {
		t.Run(name, func(t *testing.T) {
			free, holder, took := freeWithin(t, tc.holder, 300*time.Millisecond)
			if free != tc.wantFree {
				t.Fatalf("free = %v after %s (holder %q), want %v", free, took, holder, tc.wantFree)
			}
			if free && took < timing.TakeoverSilence {
				t.Fatalf("free after %s, before TakeoverSilence (%s)", took, timing.TakeoverSilence)
			}
		})
	}
}

// Free wakes for the verdict as soon as the TakeoverProbes-th oldest silent request had its
// reply bound, not only on the next request's turn: on a busy machine late requests drift
// off the verdict's time.
func TestGuardWakesForTheVerdict(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	ms := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Millisecond) }
	verdict := func(silent []time.Time) time.Time {
		return silent[timing.TakeoverProbes-1].Add(timing.TakeoverReplyBound)
	}
	for name, tc := range map[string]struct {
		silent    []time.Time
		nextProbe time.Time
		want      time.Time
	}{
		"too few requests":              {silent: at(0, 10, 20), nextProbe: ms(30), want: ms(30)},
		"the next request comes first":  {silent: at(0, 10, 20, 30), nextProbe: ms(40), want: ms(40)},
		"verdict due before the next":   {silent: at(0, 12, 24, 36, 48, 60, 72, 84), nextProbe: ms(94), want: verdict(at(0, 12, 24, 36))},
		"verdict due with four exactly": {silent: at(0, 10, 20, 30, 40, 50, 60, 70), nextProbe: ms(81), want: ms(80)},
	} {
		t.Run(name, func(t *testing.T) {
			if got := wakeAt(tc.silent, tc.nextProbe); !got.Equal(tc.want) {
				t.Fatalf("wakes at %v, want %v", got.Sub(t0), tc.want.Sub(t0))
			}
		})
	}
}
