// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// When the holder fences: only after a follower's stream of probes, and only once nothing
// has continued it for timing.FenceSilence.
func TestHearingFencesOnlyAfterAStreamFellSilent(t *testing.T) {
	const f1, f2, client = "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:99"
	iv := int(timing.FollowerProbeInterval / time.Millisecond)
	fence := int(timing.FenceSilence / time.Millisecond)
	if iv%20 != 0 || fence%10 != 0 || 30*iv+fence > 3000 {
		t.Fatalf("the cases below need a probe interval (%d ms) of whole 20 ms and a fence (%d ms) of whole 10 ms, within the 3 s run", iv, fence)
	}
	// requests lists (ms, MAC); deafAt is the first check (every FenceCheckInterval) that
	// finds the holder deaf, -1 for none within the run.
	type req struct {
		ms  int
		mac string
	}
	probes := func(mac string, from, to int) []req {
		var out []req
		for ms := from; ms <= to; ms += iv {
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
		{"two followers, then the cut", append(probes(f1, 0, 10*iv), probes(f2, iv/2, 10*iv+iv/2)...), 10*iv + iv/2 + fence},
		{"one follower, then the cut", probes(f1, 0, 10*iv), 10*iv + fence},
		{"one follower, two probes lost, then the cut", append(probes(f1, 0, 10*iv), probes(f1, 13*iv, 30*iv)...), 30*iv + fence},
		{"one follower, three probes lost", append(probes(f1, 0, 10*iv), probes(f1, 14*iv, 30*iv)...), 10*iv + fence},
		{"a single request after the fence does not re-arm", append(probes(f1, 0, 10*iv), req{10*iv + fence + 150, f1}), 10*iv + fence},
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

// runListener runs a Listener of one VIP on feed until the test ends.
func runListener(t *testing.T, feed *requestFeed, active, onDeaf func() bool) {
	t.Helper()
	l := NewListener("eth0", []netip.Addr{netip.MustParseAddr("192.0.2.10")}, onDeaf, logr.Discard())
	l.open = func(string, netip.Addr) (requests, error) { return feed, nil }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx, active) }()
	t.Cleanup(func() { cancel(); <-done })
}

// requestFeed is a request socket fed by the test.
type requestFeed struct {
	mu     sync.Mutex
	macs   []string
	claims []string // announcements of the VIP, for the next drain
	last   []string // the claims the last drain read
}

func (f *requestFeed) claim(mac string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims = append(f.claims, mac)
}

func (f *requestFeed) claimed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *requestFeed) add(mac string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.macs = append(f.macs, mac)
}

func (f *requestFeed) drain() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.macs
	f.macs, f.last, f.claims = nil, f.claims, nil
	return out, nil
}

func (f *requestFeed) Close() error { return nil }

// A node that takes the Lease starts its term armed by the followers' stream it heard while
// it followed: cut off right after its acquisition, it fences once the stream has been
// silent for timing.FenceSilence, and until the keeper holds a VIP to remove the silence
// stands. A listener that only began to listen with the term never armed, and held the VIP
// unfenced through its stalled hold (the election package's simulation). A stream that fell
// silent while the node followed (its peer became the holder) does not fence the new term.
func TestListenerStartsATermArmedByWhatItHeardAsAFollower(t *testing.T) {
	for _, tc := range []struct {
		name string
		// quietBefore: the peer stops probing this long before the term starts; zero: at
		// the start of the term (the cut).
		quietBefore time.Duration
		wantFence   bool
	}{
		{"cut right after the acquisition", 0, true},
		{"the peer stopped probing long before the term", 3 * timing.FenceSilence, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var leading, flowing atomic.Bool
			flowing.Store(true)
			feed := &requestFeed{}
			var mu sync.Mutex
			var calls, fences int
			var fencedAt time.Time
			runListener(t, feed, leading.Load, func() bool {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls < 3 {
					return false // the keeper's guard still probes: no VIP to remove yet
				}
				fences++
				if fencedAt.IsZero() {
					fencedAt = time.Now()
				}
				return true
			})
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			wg.Go(func() {
				tk := time.NewTicker(timing.FollowerProbeInterval)
				defer tk.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tk.C:
						if flowing.Load() {
							feed.add("02:00:00:00:00:02")
						}
					}
				}
			})

			time.Sleep(5 * timing.FollowerProbeInterval)
			flowing.Store(false)
			time.Sleep(tc.quietBefore)
			cutAt := time.Now()
			leading.Store(true)
			time.Sleep(timing.FenceSilence + 5*timing.FollowerProbeInterval)

			mu.Lock()
			defer mu.Unlock()
			if !tc.wantFence {
				if calls > 0 {
					t.Fatalf("asked to fence %d times; the stream had stopped before the term", calls)
				}
				return
			}
			if fences != 1 {
				t.Fatalf("fenced %d times (%d asks), want once after the asks that found no VIP", fences, calls)
			}
			if d := fencedAt.Sub(cutAt); d > timing.FenceSilence+2*timing.FollowerProbeInterval {
				t.Errorf("fenced %s after the cut, want about %s", d.Round(time.Millisecond), timing.FenceSilence)
			}
		})
	}
}

// A holder whose frames out are dropped still hears its followers, so its fence never
// finds silence; the follower that took its Lease early announces the VIP once its guard
// passed. The holder fences on that announcement while it leads, and a follower ignores it.
func TestListenerFencesOnAnotherHostsAnnouncement(t *testing.T) {
	for _, leading := range []bool{true, false} {
		t.Run(map[bool]string{true: "leading", false: "following"}[leading], func(t *testing.T) {
			feed := &requestFeed{}
			var mu sync.Mutex
			fences := 0
			runListener(t, feed, func() bool { return leading }, func() bool {
				mu.Lock()
				defer mu.Unlock()
				fences++
				return true
			})

			// The followers' probes go on; one announcement of another host comes in.
			for i := range 6 {
				feed.add("02:00:00:00:00:02")
				if i == 3 {
					feed.claim("02:00:00:00:00:03")
				}
				time.Sleep(timing.FollowerProbeInterval)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := map[bool]int{true: 1, false: 0}[leading]; fences != want {
				t.Fatalf("fenced %d times, want %d", fences, want)
			}
		})
	}
}
