// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// scriptedProbe answers its first drain with a holder, then fails its send once: the
// socket goes (the link went down and up) and the prober opens a new one.
type scriptedProbe struct {
	mu     sync.Mutex
	drains int
	failed *bool
}

func (p *scriptedProbe) drain() ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drains++
	if p.drains == 1 && !*p.failed {
		return []string{"02:00:00:00:00:01"}, nil
	}
	return nil, nil
}

func (p *scriptedProbe) send() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drains == 2 && !*p.failed {
		*p.failed = true
		return errors.New("network is down")
	}
	return nil
}

func (p *scriptedProbe) Close() error { return nil }

// What a follower heard before its probe's socket went away does not count after it opens
// a new one: it heard the holder, then its link flapped, and it hears nothing since. Taking
// the Lease on that old answer would move the VIP to a node that may not forward.
func TestProberForgetsWhatItHeardBeforeItReopened(t *testing.T) {
	failed := false
	var mu sync.Mutex
	opened := 0
	p := NewProber("eth0", netip.MustParseAddr("192.0.2.10"), nil, logr.Discard())
	p.listen = func(string, netip.Addr) (requests, error) { return &segment{}, nil }
	p.open = func(string, netip.Addr) (probe, error) {
		mu.Lock()
		defer mu.Unlock()
		opened++
		return &scriptedProbe{failed: &failed}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx, func() bool { return true }) }()
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		n := opened
		mu.Unlock()
		if heard, since := p.Silence(); n >= 2 && !since.IsZero() {
			cancel()
			<-done
			if !heard.IsZero() {
				t.Fatalf("after the probe's socket was opened again, the holder still counts as heard at %s (silence since %s)",
					heard.Format(time.StampMilli), since.Format(time.StampMilli))
			}
			return
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the prober opened %d sockets in 2 s, want 2", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// segment is a follower's view of its L2 segment: the holder answers each probe and a peer
// follower probes, until cut.
type segment struct {
	holderCut, peerCut *atomic.Bool
}

func (s *segment) drain() ([]string, error) { return s.heard(s.holderCut, "02:00:00:00:00:01"), nil }
func (s *segment) send() error              { return nil }
func (s *segment) Close() error             { return nil }
func (s *segment) claimed() []string        { return nil }

func (s *segment) heard(cut *atomic.Bool, mac string) []string {
	if cut == nil || cut.Load() {
		return nil
	}
	return []string{mac}
}

type peerProbes struct{ segment }

func (p *peerProbes) drain() ([]string, error) { return p.heard(p.peerCut, "02:00:00:00:00:02"), nil }

// A follower cut off at L2 hears neither the holder nor its peer. It must count itself
// deaf and forget the holder before its silence reaches EarlyTakeoverSilence, so that its
// early takeover never starts; a follower that still hears its peer while the holder falls
// silent keeps what it heard, and takes the Lease early.
func TestProberCutOffForgetsTheHolder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cutPeer   bool
		wantHeard bool
	}{
		{"the follower is cut: deaf, the holder forgotten", true, false},
		{"the holder is cut: the peer still heard, the holder's silence counts", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var holderCut, peerCut atomic.Bool
			seg := segment{holderCut: &holderCut, peerCut: &peerCut}
			p := NewProber("eth0", netip.MustParseAddr("192.0.2.10"), nil, logr.Discard())
			p.open = func(string, netip.Addr) (probe, error) { return &seg, nil }
			p.listen = func(string, netip.Addr) (requests, error) { return &peerProbes{seg}, nil }
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); p.Run(ctx, func() bool { return true }) }()
			defer func() { cancel(); <-done }()

			time.Sleep(5 * timing.FollowerProbeInterval)
			if heard, _ := p.Silence(); heard.IsZero() {
				t.Fatal("the holder was never heard")
			}
			cutAt := time.Now()
			holderCut.Store(true)
			peerCut.Store(tc.cutPeer)
			// The last answer was read at most an interval before the cut: the earliest
			// early takeover is EarlyTakeoverSilence after that.
			for _, at := range []time.Duration{timing.EarlyTakeoverSilence - timing.FollowerProbeInterval, timing.EarlyTakeoverSilence + timing.FollowerProbeInterval} {
				time.Sleep(time.Until(cutAt.Add(at)))
				heard, since := p.Silence()
				if !heard.IsZero() != tc.wantHeard {
					t.Fatalf("%s after the cut the holder counts as heard: %v, want %v", at, !heard.IsZero(), tc.wantHeard)
				}
				if tc.wantHeard && at > timing.EarlyTakeoverSilence && time.Since(since) < timing.EarlyTakeoverSilence {
					t.Fatalf("%s after the cut the silence is only %s", at, time.Since(since).Round(time.Millisecond))
				}
			}
			if got, want := p.CutOffs(), map[bool]int{true: 1, false: 0}[tc.cutPeer]; got != want {
				t.Errorf("CutOffs() = %d, want %d", got, want)
			}
		})
	}
}

// A follower cut off for less than the silence that makes it act, healed between two ticks
// of its prober: the tick that reads the first probe after the cut still finds the gap, and
// the follower forgets the holder. Counting that probe first hid the gap, while the
// holder's silence, which lasts until the next answer is read, reached
// timing.EarlyTakeoverSilence: a 0.26 s blip of a follower took a healthy holder's Lease in
// the election package's simulation.
func TestProberCountsACutThatHealedBetweenTicks(t *testing.T) {
	const peer = "02:00:00:00:00:02"
	p := NewProber("eth0", netip.MustParseAddr("192.0.2.10"), nil, logr.Discard())
	t0 := time.Unix(1000, 0)
	// tick n reads at n probe intervals.
	tick := func(n int, macs ...string) bool {
		return p.deafTick(t0.Add(time.Duration(n)*timing.FollowerProbeInterval), macs)
	}
	p.set(t0, true) // the holder answered
	for n := 0; n <= 5; n++ {
		if tick(n, peer) {
			t.Fatalf("deaf at tick %d while the peer was heard every tick", n)
		}
	}
	// The cut: nothing read at ticks 6 and 7; the peer's probe is read again at tick 8.
	if tick(6) || tick(7) {
		t.Fatal("deaf before the gap reached PeerSilence")
	}
	if !tick(8, peer) {
		t.Fatal("the gap of three intervals that ended at this tick did not count as a cut")
	}
	if !p.heardAt.IsZero() || p.CutOffs() != 1 {
		t.Fatalf("after the cut: heard at %v, %d cut-offs; want the holder forgotten, 1", p.heardAt, p.CutOffs())
	}
	// One probe lost (a gap of two intervals) is no cut.
	for _, n := range []int{9, 11, 12} {
		if tick(n, peer) {
			t.Fatalf("deaf at tick %d after a single lost probe", n)
		}
	}
}
