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

func (f *fakeHolder) drain() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	holder := ""
	for ; f.read < len(f.sent) && !time.Now().Before(f.sent[f.read].Add(f.delay)); f.read++ {
		if !f.silent && (f.lost == nil || !f.lost(f.read)) {
			holder = "02:00:00:00:00:09"
		}
	}
	return holder, nil
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
