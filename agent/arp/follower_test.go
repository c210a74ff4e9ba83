// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"errors"
	"net/netip"
	"slices"
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
		if heard, since, _ := p.Silence(); n >= 2 && !since.IsZero() {
			cancel()
			<-done
			if !heard.IsZero() {
				t.Fatalf("after the probe's socket was opened again, the holder still counts as heard at %s (silence since %s)",
					heard.Format(time.StampMilli), since.Format(time.StampMilli))
			}
			// A failed probe is this node's own cut: no offer for a while.
			if p.CutAt().IsZero() {
				t.Error("the failed probe left no cut (CutAt zero)")
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
			if heard, _, _ := p.Silence(); heard.IsZero() {
				t.Fatal("the holder was never heard")
			}
			cutAt := time.Now()
			holderCut.Store(true)
			peerCut.Store(tc.cutPeer)
			// The last answer was read at most an interval before the cut: the earliest
			// early takeover is EarlyTakeoverSilence after that, confirmed ConfirmSilence
			// later.
			for _, at := range []time.Duration{timing.EarlyTakeoverSilence - timing.FollowerProbeInterval, timing.EarlyTakeoverSilence + timing.FollowerProbeInterval} {
				time.Sleep(time.Until(cutAt.Add(at)))
				heard, since, confirmed := p.Silence()
				if !heard.IsZero() != tc.wantHeard {
					t.Fatalf("%s after the cut the holder counts as heard: %v, want %v", at, !heard.IsZero(), tc.wantHeard)
				}
				late := at > timing.EarlyTakeoverSilence
				if tc.wantHeard && late && time.Since(since) < timing.EarlyTakeoverSilence {
					t.Fatalf("%s after the cut the silence is only %s", at, time.Since(since).Round(time.Millisecond))
				}
				if want := tc.wantHeard && late; confirmed != want {
					t.Fatalf("%s after the cut the silence is confirmed: %v, want %v", at, confirmed, want)
				}
			}
			if got, want := p.CutOffs(), map[bool]int{true: 1, false: 0}[tc.cutPeer]; got != want {
				t.Errorf("CutOffs() = %d, want %d", got, want)
			}
			// A cut follower takes no offer for a while (election.OfferHoldDown); one that
			// still hears its peer may.
			if got := p.CutAt(); got.IsZero() == tc.cutPeer || (tc.cutPeer && got.Before(cutAt)) {
				t.Errorf("CutAt() = %v with the cut at %v, want it set only when the follower was cut", got, cutAt)
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
	p := NewProber("eth0", netip.MustParseAddr("192.0.2.10"), nil, logr.Discard())
	tick := func(n int, macs ...string) bool { return p.deafTick(tickAt(n), macs) }
	p.set(tick0, true) // the holder answered
	for n := 0; n <= 5; n++ {
		if tick(n, peerMAC) {
			t.Fatalf("deaf at tick %d while the peer was heard every tick", n)
		}
	}
	// The cut: nothing read at ticks 6 and 7; the peer's probe is read again at tick 8.
	if tick(6) || tick(7) {
		t.Fatal("deaf before the gap reached PeerSilence")
	}
	if !tick(8, peerMAC) {
		t.Fatal("the gap of three intervals that ended at this tick did not count as a cut")
	}
	if !p.heardAt.IsZero() || p.CutOffs() != 1 || !p.CutAt().Equal(tickAt(8)) {
		t.Fatalf("after the cut: heard at %v, %d cut-offs, cut at %v; want the holder forgotten, 1, tick 8",
			p.heardAt, p.CutOffs(), p.CutAt())
	}
	// One probe lost (a gap of two intervals) is no cut.
	for _, n := range []int{9, 11, 12} {
		if tick(n, peerMAC) {
			t.Fatalf("deaf at tick %d after a single lost probe", n)
		}
	}
}

// Two followers cut one after the other: the first one's cut makes the second count itself
// deaf (it hears no peer) and forget the holder; the second is cut right after the first
// heals, before it heard the first's probes again, so nothing tells it that the holder's
// silence is its own cut. It must not take the holder's silence as evidence until it hears
// its peer again (and then only the silence since), or until timing.PeerReturnWait passed.
// Before, its early write went out during its cut and committed after the heal: the VIP
// moved off a healthy holder.
func TestProberTrustsNoSilenceUntilItHearsItsPeersAgain(t *testing.T) {
	iv := timing.FollowerProbeInterval
	for _, tc := range []struct {
		name string
		// healAt is the tick at which this follower hears its peer again; 0: never.
		healAt int
	}{
		{"the peer is heard again", 30},
		{"the peer is gone for good", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := settledProber()
			// The peer's cut: this follower hears the holder, not the peer, and counts
			// itself deaf.
			deafAt := -1
			for n := 6; n <= 13; n++ {
				p.set(tickAt(n), true)
				if p.deafTick(tickAt(n), nil) {
					deafAt = n
				}
			}
			if deafAt < 0 {
				t.Fatal("the peer's cut did not make this follower count itself deaf")
			}
			// This follower's own cut at tick 14, right as the peer heals: it hears nothing,
			// well past the early takeover's silence.
			for n := 14; n < 14+int(timing.EarlyTakeoverSilence/iv)+10; n++ {
				p.deafTick(tickAt(n), nil)
				if heard, since, _ := p.silenceAt(tickAt(n)); !heard.IsZero() && tickAt(n).Sub(since) >= timing.EarlyTakeoverSilence {
					t.Fatalf("tick %d, cut since tick 14: the holder counts as heard at %v and silent since %v, which allows an early takeover",
						n, heard.Sub(tick0), since.Sub(tick0))
				}
			}
			if tc.healAt == 0 {
				// No peer ever again: once PeerReturnWait passed, the silence counts from then.
				trusted := tickAt(deafAt).Add(timing.PeerReturnWait)
				if heard, since, _ := p.silenceAt(trusted); heard.IsZero() || !since.Equal(trusted) {
					t.Fatalf("PeerReturnWait after the cut: heard %v, silent since %v; want the holder heard and the silence from %v",
						heard, since.Sub(tick0), trusted.Sub(tick0))
				}
				return
			}
			// Healed: the peer's probes are read at two ticks in a row; the holder's answer
			// only at the tick after (its probe went out at the first).
			p.deafTick(tickAt(tc.healAt), []string{peerMAC})
			p.deafTick(tickAt(tc.healAt+1), []string{peerMAC})
			if heard, since, _ := p.silenceAt(tickAt(tc.healAt + 1)); heard.IsZero() || tickAt(tc.healAt+1).Sub(since) >= timing.EarlyTakeoverSilence {
				t.Fatalf("the peer heard again at tick %d: heard %v, silent since %v; want the silence to start then",
					tc.healAt+1, heard, since.Sub(tick0))
			}
		})
	}
}

// Trust.From is when a silence counts again after the last cut: the first peer stream
// heard after it, or PeerReturnWait after it, whichever comes first; Apply moves a silence
// that began before then to then.
func TestTrust(t *testing.T) {
	ms := time.Millisecond
	stream := func(at time.Duration) Hearing { return Hearing{streamAt: tick0.Add(at)} }
	for _, tc := range []struct {
		name    string
		cuts    []time.Duration // Cut at each, Heard(stream) after each cut
		stream  []Hearing       // heard after the cuts, in order
		want    time.Duration   // From, since tick0; -1: zero
		silence time.Duration   // a silence that began then...
		applied time.Duration   // ...counts from then
	}{
		{name: "never cut", want: -1, silence: 100 * ms, applied: 100 * ms},
		{name: "cut, the peers not heard again", cuts: []time.Duration{0}, want: timing.PeerReturnWait,
			silence: 100 * ms, applied: timing.PeerReturnWait},
		{name: "cut, the peers heard again", cuts: []time.Duration{0}, stream: []Hearing{stream(700 * ms)}, want: 700 * ms,
			silence: 100 * ms, applied: 700 * ms},
		{name: "a stream at the instant of the cut is not a return", cuts: []time.Duration{0}, stream: []Hearing{stream(0)},
			want: timing.PeerReturnWait, silence: 100 * ms, applied: timing.PeerReturnWait},
		{name: "the peers back after the wait", cuts: []time.Duration{0}, stream: []Hearing{stream(timing.PeerReturnWait + ms)},
			want: timing.PeerReturnWait, silence: 100 * ms, applied: timing.PeerReturnWait},
		{name: "only the first return counts", cuts: []time.Duration{0}, stream: []Hearing{stream(700 * ms), stream(900 * ms)},
			want: 700 * ms, silence: 100 * ms, applied: 700 * ms},
		{name: "a silence that began after the return", cuts: []time.Duration{0}, stream: []Hearing{stream(700 * ms)},
			want: 700 * ms, silence: 800 * ms, applied: 800 * ms},
		{name: "a second cut after a return", cuts: []time.Duration{0, 2 * time.Second}, stream: []Hearing{stream(700 * ms)},
			want: 2*time.Second + timing.PeerReturnWait, silence: 100 * ms, applied: 2*time.Second + timing.PeerReturnWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr Trust
			for _, c := range tc.cuts {
				tr.Cut(tick0.Add(c))
				tr.Heard(Hearing{})
			}
			for _, h := range tc.stream {
				tr.Heard(h)
			}
			want := time.Time{}
			if tc.want >= 0 {
				want = tick0.Add(tc.want)
			}
			if got := tr.From(); !got.Equal(want) {
				t.Errorf("From() = %v, want %v", got, want)
			}
			if got := tr.Apply(tick0.Add(tc.silence)); !got.Equal(tick0.Add(tc.applied)) {
				t.Errorf("Apply(%s) = %v, want %s", tc.silence, got.Sub(tick0), tc.applied)
			}
			if got := tr.Apply(time.Time{}); !got.IsZero() {
				t.Errorf("Apply(zero) = %v, want zero (not probing)", got)
			}
		})
	}
}

// A follower that stops hearing its peer knows whether it was cut itself by the holder:
// still heard at the last ticks, the peer is the one gone (a cut, or it became the holder),
// and only the trust is reset; not heard, this node counts the cut as its own, which keeps
// it from offers (CutAt). The peers' last probe is read at tick 5 each time; the follower
// goes deaf at tick 8.
func TestProberTellsItsOwnCutFromAPeers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		holderHeard []int // the ticks from 6 at which the holder's answer is read
		own         bool
	}{
		{"the peer's cut: the holder answers", []int{6, 7, 8}, false},
		{"the peer's cut: the holder's last answer lost", []int{6, 7}, false},
		{"its own cut: the holder's answer to the probe before it read a tick late", []int{6}, true},
		{"its own cut: the holder's last answer read with the peer's last probe", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := settledProber()
			for n := 6; n <= 7; n++ {
				if slices.Contains(tc.holderHeard, n) {
					p.set(tickAt(n), true)
				}
				if p.deafTick(tickAt(n), nil) {
					t.Fatalf("deaf at tick %d, before PeerSilence", n)
				}
			}
			if slices.Contains(tc.holderHeard, 8) {
				p.set(tickAt(8), true)
			}
			if !p.deafTick(tickAt(8), nil) {
				t.Fatal("the peer's silence did not make this follower deaf at tick 8")
			}
			if got := p.CutAt(); got.IsZero() == tc.own {
				t.Errorf("CutAt() = %v; want it set: %v", got, tc.own)
			}
		})
	}
}

// tick0 and tickAt number a prober's ticks for the tests that drive deafTick by hand;
// peerMAC is another follower's.
var tick0 = time.Unix(1000, 0)

func tickAt(n int) time.Time { return tick0.Add(time.Duration(n) * timing.FollowerProbeInterval) }

const peerMAC = "02:00:00:00:00:02"

// settledProber returns a prober that heard the holder and its peer at ticks 0 to 5.
func settledProber() *Prober {
	p := NewProber("eth0", netip.MustParseAddr("192.0.2.10"), nil, logr.Discard())
	for n := 0; n <= 5; n++ {
		p.set(tickAt(n), true)
		p.deafTick(tickAt(n), []string{peerMAC})
	}
	return p
}

// lossyProbe answers every request at the next read, but for the requests (numbered from
// 1) that lost says are lost.
type lossyProbe struct {
	mu      sync.Mutex
	sent    int
	pending bool
	lost    func(n int) bool
}

func (p *lossyProbe) send() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent++
	p.pending = p.pending || !p.lost(p.sent)
	return nil
}

func (p *lossyProbe) drain() ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.pending {
		return nil, nil
	}
	p.pending = false
	return []string{"02:00:00:00:00:01"}, nil
}

func (p *lossyProbe) Close() error { return nil }

// A silence that reaches EarlyTakeoverSilence counts only once ConfirmProbes more requests
// went unanswered: the holder's answers to requests 10 to 16 are lost (the four ticks'
// worth of the silence, the request of the tick that reaches it and two of the burst),
// and the third request of the burst is answered. Before, the prober poked the election on
// the first four losses and the VIP moved off a healthy holder. A holder that stays silent
// is confirmed and poked within the burst.
func TestProberConfirmsASilenceBeforeItCounts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lost          func(n int) bool
		wantConfirmed bool
	}{
		{"answered within the burst", func(n int) bool { return n >= 10 && n <= 16 }, false},
		{"silent through the burst", func(n int) bool { return n >= 10 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pokes atomic.Int32
			pr := &lossyProbe{lost: tc.lost}
			p := NewProber("eth0", netip.MustParseAddr("192.0.2.10"), func() { pokes.Add(1) }, logr.Discard())
			p.open = func(string, netip.Addr) (probe, error) { return pr, nil }
			p.listen = func(string, netip.Addr) (requests, error) { return &segment{}, nil }
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); p.Run(ctx, func() bool { return true }) }()
			defer func() { cancel(); <-done }()

			// Request n goes out at tick n; the silence reaches EarlyTakeoverSilence (less
			// SilenceTickSlack) at tick 14, and the burst ends before tick 15.
			time.Sleep(17 * timing.FollowerProbeInterval)
			heard, _, confirmed := p.Silence()
			if heard.IsZero() {
				t.Fatal("the holder was never heard")
			}
			if got := pokes.Load() > 0; got != tc.wantConfirmed || confirmed != tc.wantConfirmed {
				t.Fatalf("the election poked: %v, the silence confirmed: %v; want %v", got, confirmed, tc.wantConfirmed)
			}
			pr.mu.Lock()
			sent := pr.sent
			pr.mu.Unlock()
			if least := 13 + timing.ConfirmProbes; tc.wantConfirmed && sent < least {
				t.Errorf("%d requests sent, want at least %d (the ticks and the burst)", sent, least)
			}
		})
	}
}
