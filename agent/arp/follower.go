// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// Prober is a follower's ear on the VIP: while it is active it asks for the VIP every
// timing.FollowerProbeInterval, with the takeover guard's request (ARP, or neighbour
// solicitation for IPv6), and records when another host last answered. A holder whose
// link or node is gone falls silent long before its term runs out; the election takes its
// Lease early on that silence (election.Config.VIPSilence). It sends no API request.
//
// It also hears the other followers' probes, as the holder's Listener does: a follower that
// heard a peer's stream and then hears none for timing.PeerSilence is cut off itself (a
// switch or flow-table fault with its carrier up), and forgets the holder it heard, so
// that it does not take the Lease of a holder that its peers still hear.
type Prober struct {
	iface    string
	vip      netip.Addr
	onSilent func()
	log      logr.Logger
	open     func(iface string, vip netip.Addr) (probe, error)    // openReplyProbe; a fake in tests
	listen   func(iface string, vip netip.Addr) (requests, error) // openRequests; a fake in tests

	mu          sync.Mutex
	heardAt     time.Time
	silentSince time.Time
	// peers is what this follower heard of the other followers' probes.
	peers Hearing
	// answers is when each MAC last answered, for Heard; only the last AnswerersWindow
	// is kept.
	answers   map[string]time.Time
	heardFrom string
	// cutOffs counts the times this follower went deaf to its peers (deafTick); trust
	// remembers the last such time, or the last time its probe failed. ownCutAt is the last
	// time this follower itself was cut off, as far as it can tell: its probe failed, or it
	// went deaf with the holder silent too (a peer's cut leaves the holder heard).
	cutOffs  int
	trust    Trust
	ownCutAt time.Time
	// confirmed is the silentSince that a confirmation burst found standing (confirm).
	confirmed time.Time
}

// NewProber returns the prober of vip on the named interface. onSilent is called once per
// silence, when it reached timing.EarlyTakeoverSilence and outlasted the confirmation burst
// (never, if the burst is answered), so that the election decides then.
func NewProber(iface string, vip netip.Addr, onSilent func(), log logr.Logger) *Prober {
	return &Prober{iface: iface, vip: vip.Unmap(), onSilent: onSilent, log: log, open: openReplyProbe, listen: openRequests}
}

// Silence returns when another host last answered for the VIP (zero for never, and while
// this follower is deaf to its peers), since when it has been silent while probed (zero
// while the prober does not probe), and whether a burst of timing.ConfirmProbes found that
// silence standing once it reached timing.EarlyTakeoverSilence. After a cut the silence
// counts only from when this follower trusts its ears again (Trust), which may lie ahead.
func (p *Prober) Silence() (heardAt, silentSince time.Time, confirmed bool) {
	return p.silenceAt(time.Now())
}

// SilentSince is since when the VIP has gone unanswered while probed, whatever this
// follower trusts (zero while the prober does not probe): for the metrics.
func (p *Prober) SilentSince() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.silentSince
}

func (p *Prober) silenceAt(now time.Time) (heardAt, silentSince time.Time, confirmed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	confirmed = !p.silentSince.IsZero() && p.confirmed.Equal(p.silentSince)
	// Between the onset and the next tick, which forgets the holder (deafTick).
	if p.peers.SilentFor(now, timing.PeerSilence) {
		return time.Time{}, p.silentSince, confirmed
	}
	return p.heardAt, p.trust.Apply(p.silentSince), confirmed
}

// Trust is what a follower remembers of its last cut (it went deaf to its peers, or its
// probe failed): until it hears its peers' stream again, or for timing.PeerReturnWait, it
// cannot tell its own next cut from the holder's silence, so no silence is evidence. Its
// deafness may have been a peer's cut, not its own.
type Trust struct {
	cutAt     time.Time
	rearmedAt time.Time // when a peer's stream was first heard again after cutAt
}

// Cut records a cut at now.
func (t *Trust) Cut(now time.Time) { t.cutAt = now }

// Heard notes what the follower heard of its peers so far.
func (t *Trust) Heard(peers Hearing) {
	if !t.rearmedAt.After(t.cutAt) && peers.streamAt.After(t.cutAt) {
		t.rearmedAt = peers.streamAt
	}
}

// From is when a silence of the holder is evidence again after the last cut: when the
// peers' stream was heard again, or timing.PeerReturnWait after the cut, whichever came
// first; zero for never cut.
func (t Trust) From() time.Time {
	if t.cutAt.IsZero() {
		return time.Time{}
	}
	end := t.cutAt.Add(timing.PeerReturnWait)
	if t.rearmedAt.After(t.cutAt) && t.rearmedAt.Before(end) {
		return t.rearmedAt
	}
	return end
}

// Apply returns when a silence that began at silentSince counts from: not before From (the
// holder may have answered all along where this follower could not hear), so that the
// early takeover's threshold runs from there; zero stays zero (not probing).
func (t Trust) Apply(silentSince time.Time) time.Time {
	if from := t.From(); !silentSince.IsZero() && from.After(silentSince) {
		return from
	}
	return silentSince
}

// Run probes while active reports true, until ctx is done. A socket that fails is opened
// again on the next tick; the silence counts from then, and what was heard before does not
// count: the link may have gone down and up meanwhile, and a follower that hears nothing
// since must not take the Lease on a holder it heard before.
func (p *Prober) Run(ctx context.Context, active func() bool) {
	t := time.NewTicker(timing.FollowerProbeInterval)
	defer t.Stop()
	var (
		pr    probe
		peers requests // nil where it cannot be opened: never deaf, as before a peer is heard
	)
	closeProbe := func() {
		if pr != nil {
			_ = pr.Close()
			pr = nil
		}
		if peers != nil {
			_ = peers.Close()
			peers = nil
		}
		p.set(time.Time{}, false)
	}
	defer closeProbe()
	poked := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !active() {
			closeProbe()
			continue
		}
		if pr == nil {
			var err error
			if pr, err = p.open(p.iface, p.vip); err != nil {
				p.log.Error(err, "Opening the follower's probe of the VIP failed", "vip", p.vip)
				continue
			}
			if peers, err = p.listen(p.iface, p.vip); err != nil {
				p.log.Error(err, "Opening the follower's ear on the other followers failed", "vip", p.vip)
			}
			p.reopened(time.Now())
			poked = false
		}
		// Drain first: an answer to the last request, however late, ends the silence.
		who, err := pr.drain()
		if err == nil {
			err = pr.send()
		}
		if err != nil {
			p.log.Error(err, "Probing the VIP as a follower failed", "vip", p.vip)
			closeProbe()
			p.cut(time.Now())
			continue
		}
		now := time.Now()
		if len(who) > 0 {
			p.set(now, true)
			p.noteAnswers(now, who)
			poked = false
		}
		if peers != nil {
			macs, err := peers.drain()
			if err != nil {
				p.log.Error(err, "Reading the other followers' probes failed", "vip", p.vip)
				_ = peers.Close()
				peers = nil
			}
			if p.deafTick(now, macs) {
				poked = false
			}
		}
		if _, since, _ := p.Silence(); !poked && now.Sub(since) >= timing.EarlyTakeoverSilence-timing.SilenceTickSlack && p.confirm(ctx, pr) {
			poked = true
			if p.onSilent != nil {
				p.onSilent()
			}
		}
	}
}

// confirm asks timing.ConfirmProbes more times before a silence counts, and reports whether
// none was answered; an answer ends the silence, as at a tick. Losses are independent
// enough that this makes a false silence rare at a cost of timing.ConfirmSilence, where a
// longer EarlyTakeoverSilence would cost a probe interval per lost answer it covers.
func (p *Prober) confirm(ctx context.Context, pr probe) bool {
	for range timing.ConfirmProbes {
		if err := pr.send(); err != nil {
			p.log.Error(err, "Confirming the holder's silence failed", "vip", p.vip)
			return false // the next tick finds the socket failing too, and closes it
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(timing.ConfirmInterval):
		}
		who, err := pr.drain()
		if err != nil {
			p.log.Error(err, "Confirming the holder's silence failed", "vip", p.vip)
			return false
		}
		if len(who) > 0 {
			now := time.Now()
			p.set(now, true)
			p.noteAnswers(now, who)
			return false
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.confirmed = p.silentSince
	return true
}

// set starts a silence at since (zero: not probing); heard says another host answered then.
func (p *Prober) set(since time.Time, heard bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silentSince = since
	if heard {
		p.heardAt = since
	}
}

// reopened starts a silence at since and forgets what was heard before.
func (p *Prober) reopened(since time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgetLocked(since)
}

func (p *Prober) forgetLocked(since time.Time) {
	p.silentSince, p.heardAt = since, time.Time{}
	p.heardFrom, p.answers = "", nil
	p.peers = Hearing{}
}

// deafTick records the peers' probes heard at now and reports whether this follower went
// deaf: it heard a peer's stream, and then none for timing.PeerSilence until now. It then
// forgets what it heard, as after a reopen; only a new stream arms it again.
func (p *Prober) deafTick(now time.Time, peerMACs []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	// The gap is checked before the probes read now count: a cut that healed since the last
	// tick was a cut all the same, and the holder's silence during it is no evidence.
	deaf := p.peers.SilentFor(now, timing.PeerSilence)
	if deaf {
		p.log.Info("No other follower's probe heard; forgetting the holder heard, as this node may be cut off (or its peers stopped probing)", "vip", p.vip, "silentFor", now.Sub(p.peers.streamAt).Round(time.Millisecond))
		// Had only the peers gone, the holder would still be heard at every tick; cut
		// itself, this follower read its last answer at most a tick after the peers' last
		// probe, two ticks or more before now.
		if now.Sub(p.heardAt) > timing.FollowerProbeInterval+timing.FollowerProbeInterval/2 {
			p.ownCutAt = now
		}
		p.forgetLocked(now)
		p.cutOffs++
		p.trust.Cut(now)
	}
	for _, mac := range peerMACs {
		p.peers.Heard(mac, now)
	}
	p.trust.Heard(p.peers)
	return deaf
}

// cut records that this follower's probe failed at now: its link may be down.
func (p *Prober) cut(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trust.Cut(now)
	p.ownCutAt = now
}

// CutAt returns when this follower itself was last cut off, as far as it can tell (its
// probe failed, or it heard neither its peers nor the holder); zero for never.
func (p *Prober) CutAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ownCutAt
}

// CutOffs returns how often this follower went deaf to its peers' probes (see Prober).
func (p *Prober) CutOffs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cutOffs
}

// AnswerersWindow is how far back Heard counts the hosts that answered for the VIP.
const AnswerersWindow = time.Second

// Heard returns the MAC that answered for the VIP last ("" for never) and how many distinct
// MACs answered in the AnswerersWindow before now: two or more are two hosts claiming the
// VIP, seen by a node that is not one of them.
func (p *Prober) Heard(now time.Time) (lastMAC string, answerers int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, at := range p.answers {
		if now.Sub(at) <= AnswerersWindow {
			answerers++
		}
	}
	return p.heardFrom, answerers
}

// noteAnswers records the senders that answered at now.
func (p *Prober) noteAnswers(now time.Time, senders []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.answers == nil {
		p.answers = map[string]time.Time{}
	}
	for mac, at := range p.answers {
		if now.Sub(at) > AnswerersWindow {
			delete(p.answers, mac)
		}
	}
	for _, mac := range senders {
		p.answers[mac] = now
	}
	p.heardFrom = senders[len(senders)-1]
}
