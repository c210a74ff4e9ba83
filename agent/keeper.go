// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// address is the VIP on the node's NIC.
type address interface {
	// Ensure adds the address, or refreshes its kernel lifetime, and reports whether it
	// was missing before. Only the takeover calls it, after the guard.
	Ensure() (added bool, err error)
	// Refresh refreshes the kernel lifetime of the address if it is there, and never adds
	// it; present says whether it was.
	Refresh() (present bool, err error)
	// Present reports whether the address is there, and changes nothing.
	Present() (bool, error)
	// Remove removes the address and reports whether it was there.
	Remove() (removed bool, err error)
}

// announcer tells the LAN where the VIP lives now.
type announcer interface {
	// Announce sends one round of announcements and reports how many packets went out.
	Announce(ctx context.Context) (sent int, err error)
	// Close releases the sockets until the next announcement.
	Close() error
}

// guard is the takeover guard: it tells whether another host still answers for the VIP.
type guard interface {
	// Free probes until the VIP counts as free or until the clock reaches until, and names
	// the host that claimed the VIP meanwhile ("" for none). Calls with the same since
	// continue one takeover's probing.
	Free(ctx context.Context, since, until time.Time) (free bool, holder string, err error)
	// Close ends the probing and closes the socket.
	Close() error
}

// keeper holds the VIP on the NIC while, and only while, the election says this node
// leads, and never while another host still has it (package timing states the rule). It
// removes the VIP itself when the term ends; it adds it only after the guard found no
// other host answering for it; and it refreshes the address's kernel lifetime when a
// renewal starts (Renewing) and, with a lifetime shorter than the lease, on each tick until
// the term's RefreshBy. The VIP of a holder that died or froze then lapses no earlier than
// the earliest takeover (with the default lifetime, about V − L after it) and the kernel
// removes it shortly after (package timing): that node serves until then, and a follower
// that took over meanwhile adds the VIP once its guard no longer hears it.
type keeper struct {
	addr      address
	announcer announcer
	guard     guard
	clock     clock.WithTicker
	log       logr.Logger
	metrics   *metrics

	tick         time.Duration // refresh and presence-check interval
	onUnfit      func()        // called when the keeper cannot put the VIP on (see fit)
	onMissing    func()        // asks the election for a renewal at once (see missing.go)
	arpInterval  time.Duration // gratuitous ARP refresh after the burst
	burstOffsets []time.Duration

	mu        sync.Mutex
	leading   bool        // the election's view
	suspended bool        // the health gate is closed: no VIP even while leading
	present   bool        // the VIP was put on the NIC in this term and not removed since
	term      timing.Term // the current term; zero when following
	burstFrom time.Time   // start of the current announcement burst
	nextBurst int         // index into burstOffsets of the next burst packet
	nextARP   time.Time   // next periodic announcement
	// nextSweep is when a node that does not lead next checks its NIC for a VIP it must
	// not hold (one put there by hand); a removal that failed is retried on every tick.
	nextSweep time.Time
	// heldElsewhere is the host the guard last found holding the VIP; "" when none.
	heldElsewhere string
	// missingSince: the VIP went missing in this term (not by the keeper's hand); it goes
	// back on only in a term whose write started at or after this (missing.go). Zero when
	// none is missing.
	missingSince time.Time
	lastAsked    time.Time // the last renewal asked for a missing VIP (askRenewalLocked)

	// probing is held by the one caller that runs the guard, outside mu: probing takes up
	// to a tick, and Holding, SetHealthy and Following must not wait for it.
	probing sync.Mutex
	// takeoverSince is when the current takeover began (a new term, or the health gate
	// opening again): the guard counts only requests sent since.
	takeoverSince time.Time
	// acquiring: an acquisition write is on the wire and the guard probes ahead of it
	// (Acquiring); stopEarly ends that probing if the write fails.
	acquiring bool
	stopEarly context.CancelFunc
	// failingSince is when the guard or the address write first failed, in a row, while
	// the VIP was off in this term; unfit says that has lasted failureGrace.
	failingSince time.Time
	unfit        bool
	// stopped: Run ended, the agent shuts down. The VIP stays off even if a renewal that
	// was on the wire at SIGTERM returns and the election reports the term again.
	stopped bool
}

// followerSweep is the interval at which a node that does not lead removes a VIP it finds
// on its NIC: a netlink delete every tick on every follower would take the kernel's rtnl
// lock ten times a second per node for nothing.
const followerSweep = time.Second

type keeperOptions struct {
	Address     address
	Announcer   announcer
	Guard       guard
	Clock       clock.WithTicker
	Log         logr.Logger
	Metrics     *metrics
	Tick        time.Duration
	ARPInterval time.Duration
	// OnUnfit is called when the keeper has failed for failureGrace to put the VIP on
	// while leading (see fit); nil for none.
	OnUnfit func()
	// OnMissing is called, under the keeper's lock, when the VIP went missing while held:
	// it asks the election for a renewal at once and must not block; nil for none.
	OnMissing func()
}

func newKeeper(o keeperOptions) *keeper {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Tick == 0 {
		o.Tick = timing.KeeperTick
	}
	return &keeper{
		addr: o.Address, announcer: o.Announcer, guard: o.Guard, clock: o.Clock, log: o.Log, metrics: o.Metrics,
		tick: o.Tick, arpInterval: o.ARPInterval, onUnfit: o.OnUnfit, onMissing: o.OnMissing,
		// Takeover burst: at once, then again shortly after, in case a packet was lost or a
		// switch was still learning.
		burstOffsets: []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, time.Second},
	}
}

// Holding reports whether this node leads and the VIP is on its NIC in the current term
// (the takeover guard let it on).
func (k *keeper) Holding() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.leading && k.present
}

// Leading is the election's OnLeading callback: the current term is now term.
func (k *keeper) Leading(term timing.Term, newTerm bool) {
	k.mu.Lock()
	k.term = term
	if newTerm {
		k.leading = true
		k.burstFrom, k.nextBurst = k.clock.Now(), 0
		if !k.acquiring {
			k.takeoverSince = k.clock.Now()
		}
		k.acquiring, k.stopEarly = false, nil // the probing ahead of the write goes on
		k.missingSince = time.Time{}
		k.metrics.transition(true)
	}
	if !term.Start.Before(k.missingSince) {
		k.missingSince = time.Time{} // a write of this node's own began after the loss: it may go back on
	}
	k.mu.Unlock()
	// Put the VIP on at once rather than on the next tick: this is the takeover.
	k.reconcile(context.Background())
}

// Renewing is the election's OnRenewing callback: a renewal that started at start is
// about to be written. A VIP on the NIC in a term that has not ended is refreshed now, past
// RefreshBy too: should the write commit and this process die before it learns so,
// followers take over a lease duration after the write, and the VIP lasts a lifetime from
// here (package timing). A VIP found missing here may go back on once this write succeeded.
func (k *keeper) Renewing(start time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	if s := k.stateLocked(now); s == held || s == lapsing {
		if !k.refreshLocked(context.Background(), now) {
			k.missingSince = start
		}
	}
}

// Following is the election's OnStoppedLeading callback: the VIP goes before it returns,
// that is before the Lease is released. It reports whether the VIP is gone; if not, the
// Lease must not be released (it expires instead), and Run keeps trying to remove it.
func (k *keeper) Following(reason string) (released bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.term = timing.Term{}
	released = k.dropLocked(reason)
	k.failingSince, k.unfit = time.Time{}, false
	if k.leading {
		k.leading = false
		k.metrics.transition(false)
	}
	_ = k.announcer.Close()
	return released
}

// SetHealthy opens or closes the health gate. A closed gate removes the VIP at once, even
// while the election still counts this node as leader (a renewal may be hanging on an
// unreachable API server); the election then gives up the Lease on its next step. A gate
// that opens again before that step (the election may sit in a renewal write for up to a
// term's slack) puts the VIP back as a VIP that went missing (missing.go): after a write of
// this node's own that began after the drop, which it asks for now, so that a follower that
// took the Lease early on the silence meanwhile and this node never both add it.
func (k *keeper) SetHealthy(healthy bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	wasSuspended := k.suspended
	k.suspended = !healthy
	switch {
	case k.suspended:
		k.dropLocked("this node is not healthy")
		if !wasSuspended && !k.term.End.IsZero() {
			k.missingSince = now
		}
	case k.leading:
		k.burstFrom, k.nextBurst = now, 0
		k.takeoverSince = now
		if wasSuspended && k.awaitingWriteLocked() {
			k.askRenewalLocked(now)
		}
	}
}

// Run refreshes the VIP and announces it while leading, until ctx is done; then it
// removes the VIP.
func (k *keeper) Run(ctx context.Context) {
	t := k.clock.NewTicker(k.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			k.mu.Lock()
			k.stopped = true
			k.dropLocked("shutting down")
			k.mu.Unlock()
			return
		case <-t.C():
		}
		k.reconcile(ctx)
	}
}

// reconcile brings the NIC in line with the term: refresh or re-add the VIP while the
// refreshed lifetime still ends inside the term, remove it once the term is over. A
// takeover probes outside the lock.
func (k *keeper) reconcile(ctx context.Context) {
	switch k.reconcileLocked(ctx) {
	case takeoverDue:
		k.takeover(ctx)
	case notLeading:
		k.closeGuard()
	case done:
	}
}

// step is what reconcileLocked leaves to be done outside the lock.
type step int

const (
	done        step = iota
	takeoverDue      // the VIP is off in this term: probe, then add
	notLeading       // no takeover runs: the guard's socket may close
)

// state is where the keeper stands in the current term.
type state int

const (
	off       state = iota // not leading: no VIP; a VIP found on the NIC is removed
	suspended              // leading, but the health gate is closed: no VIP, the term goes on
	over                   // the term ended without a renewal: the VIP goes now
	probing                // the VIP is off in this term: the guard probes before it is added
	held                   // the VIP is on: refreshed and announced
	lapsing                // past the term's RefreshBy: announced; refreshed only by the next renewal's start
)

func (s state) String() string {
	return [...]string{"off", "suspended", "over", "probing", "held", "lapsing"}[s]
}

func (k *keeper) stateLocked(now time.Time) state {
	switch {
	case k.term.End.IsZero() || k.stopped:
		return off
	case k.suspended:
		return suspended
	case !now.Before(k.term.End):
		return over
	case !k.present:
		return probing
	case now.After(k.term.RefreshBy):
		return lapsing
	}
	return held
}

func (k *keeper) reconcileLocked(ctx context.Context) step {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	switch k.stateLocked(now) {
	case off, suspended:
		k.sweepLocked(now)
		return notLeading
	case over:
		k.dropLocked("the term ended without a renewal")
	case probing:
		return takeoverDue
	case lapsing:
		// A refresh now would let the VIP of a holder that dies now outlive its planned
		// lapse (timing.Lapse; the next leader's guard would wait for it longer); the last
		// refresh runs out by itself unless the next renewal's start refreshes it (Renewing).
		// Announcements continue.
		k.announceLocked(ctx, now)
	case held:
		if !k.refreshLocked(ctx, now) {
			k.askRenewalLocked(now)
			return takeoverDue
		}
	}
	return done
}

// sweepLocked removes a VIP this node must not hold. It also retries a removal that failed
// (every tick) and clears a VIP that somebody else put here (every followerSweep).
func (k *keeper) sweepLocked(now time.Time) {
	if now.Before(k.nextSweep) {
		return
	}
	removed, err := k.addr.Remove()
	if err != nil {
		k.log.Error(err, "Removing the VIP failed")
		return
	}
	k.nextSweep = now.Add(followerSweep)
	if removed {
		k.present = false
		k.metrics.vipPresent.Set(0)
		k.log.Info("Removed the VIP from a node that does not lead")
	}
}

// refreshLocked refreshes the VIP's kernel lifetime and announces it, and reports whether
// the VIP was there. A VIP that somebody removed is not added back here: another node may
// have taken the Lease on the silence meanwhile (election, early takeover) and be adding
// it; it goes back through the guard after a write of this node's own (missingLocked).
func (k *keeper) refreshLocked(ctx context.Context, now time.Time) (present bool) {
	present, err := k.addr.Refresh()
	if err != nil {
		k.log.Error(err, "Refreshing the VIP failed")
		return true // nothing learned; the next check decides
	}
	if !present {
		k.missingLocked(now, "The VIP went missing while leading; adding it back after a renewal, once the guard finds it free")
		return false
	}
	// Re-check after the write: a process frozen between the check above and the write may
	// have resumed after its term, when another node may already hold the VIP; remove it
	// at once. (A refresh that lands after RefreshBy but inside the term is not unsafe: the
	// next leader's guard waits for it.)
	if !k.clock.Now().Before(k.term.End) {
		k.dropLocked("the VIP was refreshed after the term ended")
		return true
	}
	k.announceLocked(ctx, now)
	return true
}

func (k *keeper) drop(reason string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dropLocked(reason)
}

// dropLocked removes the VIP and reports whether it is gone. A health suspension keeps the
// term; everything else ends it.
func (k *keeper) dropLocked(reason string) bool {
	if !k.suspended {
		k.term, k.missingSince = timing.Term{}, time.Time{}
	}
	k.present = false
	removed, err := k.addr.Remove()
	if err != nil {
		k.log.Error(err, "Removing the VIP failed", "reason", reason)
		return false
	}
	k.metrics.vipPresent.Set(0)
	if removed {
		k.log.Info("VIP removed", "reason", reason)
	}
	return true
}
