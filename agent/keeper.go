// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
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
	// was missing before.
	Ensure() (added bool, err error)
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

// keeper holds the VIP on the NIC while, and only while, the election says this node
// leads. It removes the VIP itself when the term ends, and it refreshes the address's
// kernel lifetime only until the term's RefreshBy, so that if this process dies or
// freezes, the kernel removes the VIP before any other node can have taken the Lease
// (timing.Timings.LatestHold).
type keeper struct {
	addr      address
	announcer announcer
	clock     clock.WithTicker
	log       logr.Logger
	metrics   *metrics

	tick         time.Duration // refresh and presence-check interval
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
}

// followerSweep is the interval at which a node that does not lead removes a VIP it finds
// on its NIC: a netlink delete every tick on every follower would take the kernel's rtnl
// lock ten times a second per node for nothing.
const followerSweep = time.Second

type keeperOptions struct {
	Address     address
	Announcer   announcer
	Clock       clock.WithTicker
	Log         logr.Logger
	Metrics     *metrics
	Tick        time.Duration
	ARPInterval time.Duration
}

func newKeeper(o keeperOptions) *keeper {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Tick == 0 {
		o.Tick = timing.KeeperTick
	}
	return &keeper{
		addr: o.Address, announcer: o.Announcer, clock: o.Clock, log: o.Log, metrics: o.Metrics,
		tick: o.Tick, arpInterval: o.ARPInterval,
		// Takeover burst: at once, then again shortly after, in case a packet was lost or a
		// switch was still learning.
		burstOffsets: []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, time.Second},
	}
}

// Leading is the election's OnLeading callback: the current term is now term.
func (k *keeper) Leading(term timing.Term, newTerm bool) {
	k.mu.Lock()
	k.term = term
	if newTerm {
		k.leading = true
		k.burstFrom, k.nextBurst = k.clock.Now(), 0
		k.metrics.transition(true)
	}
	k.mu.Unlock()
	// Put the VIP on at once rather than on the next tick: this is the takeover.
	k.reconcile(context.Background())
}

// Following is the election's OnStoppedLeading callback: the VIP goes before it returns,
// that is before the Lease is released. It reports whether the VIP is gone; if not, the
// Lease must not be released (it expires instead), and Run keeps trying to remove it.
func (k *keeper) Following(reason string) (released bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.term = timing.Term{}
	released = k.dropLocked(reason)
	if k.leading {
		k.leading = false
		k.metrics.transition(false)
	}
	_ = k.announcer.Close()
	return released
}

// SetHealthy opens or closes the health gate. A closed gate removes the VIP at once, even
// while the election still counts this node as leader (a renewal may be hanging on an
// unreachable API server); the election then gives up the Lease on its next step.
func (k *keeper) SetHealthy(healthy bool) {
	k.mu.Lock()
	k.suspended = !healthy
	if k.suspended {
		k.dropLocked("this node is not healthy")
	} else if k.leading {
		k.burstFrom, k.nextBurst = k.clock.Now(), 0
	}
	k.mu.Unlock()
}

// Run refreshes the VIP and announces it while leading, until ctx is done; then it
// removes the VIP.
func (k *keeper) Run(ctx context.Context) {
	t := k.clock.NewTicker(k.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			k.drop("shutting down")
			return
		case <-t.C():
		}
		k.reconcile(ctx)
	}
}

// reconcile brings the NIC in line with the term: refresh or re-add the VIP while the
// refreshed lifetime still ends inside the term, remove it once the term is over.
func (k *keeper) reconcile(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	if k.term.End.IsZero() || k.suspended {
		// Not leading, or not healthy: this node must not hold the VIP. This also retries
		// a removal that failed (every tick) and clears a VIP that somebody else put here
		// (every followerSweep).
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
		return
	}
	if !now.Before(k.term.End) {
		k.dropLocked("the term ended without a renewal")
		return
	}
	if now.After(k.term.RefreshBy) {
		// A refresh now could outlive the earliest takeover if this process died; the
		// last refresh runs out by itself unless a renewal starts a new term first.
		// Announcements continue meanwhile.
		if k.present {
			k.announceLocked(ctx, now)
		}
		return
	}
	added, err := k.addr.Ensure()
	if err != nil {
		k.log.Error(err, "Adding the VIP failed")
		return
	}
	// Re-check after the write: the kernel stamped the lifetime no later than now, and if
	// that is past RefreshBy (a slow write, or a freeze between the check and the write),
	// the kernel alone would not remove the address before a takeover; remove it now.
	if k.clock.Now().After(k.term.RefreshBy) {
		k.dropLocked("the VIP's lifetime was set too late in the term")
		return
	}
	k.present = true
	k.metrics.vipPresent.Set(1)
	if added {
		k.log.Info("VIP added", "termEnd", k.term.End.Format(time.RFC3339Nano))
		k.burstFrom, k.nextBurst = now, 0
	}
	k.announceLocked(ctx, now)
}

// announceLocked sends the takeover burst and then the periodic refresh.
func (k *keeper) announceLocked(ctx context.Context, now time.Time) {
	due := false
	for k.nextBurst < len(k.burstOffsets) && !now.Before(k.burstFrom.Add(k.burstOffsets[k.nextBurst])) {
		k.nextBurst++
		due = true
	}
	if k.nextBurst >= len(k.burstOffsets) && !now.Before(k.nextARP) && !k.nextARP.IsZero() {
		due = true
	}
	if !due {
		return
	}
	if k.nextBurst >= len(k.burstOffsets) {
		k.nextARP = now.Add(k.arpInterval)
	} else {
		k.nextARP = k.burstFrom.Add(k.burstOffsets[len(k.burstOffsets)-1] + k.arpInterval)
	}
	sent, err := k.announcer.Announce(ctx)
	k.metrics.garpSent.Add(float64(sent))
	if err != nil {
		k.log.Error(err, "Announcing the VIP failed")
	}
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
		k.term = timing.Term{}
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
