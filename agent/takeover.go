// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"time"
)

// failureGrace is how long the keeper may fail to put the VIP on while leading (the guard
// cannot probe, or the address cannot be written) before the node gives the lead up: a
// healthy peer can then serve, where this node would hold the Lease with the VIP off.
const failureGrace = time.Second

// takeover puts the VIP on the NIC once the guard found no other host answering for it.
// The guard runs outside k.mu, one caller at a time; another caller (the election's
// callback, or the tick) leaves the takeover to the one probing.
func (k *keeper) takeover(ctx context.Context) {
	if !k.probing.TryLock() {
		return
	}
	defer k.probing.Unlock()
	k.mu.Lock()
	since := k.takeoverSince
	k.mu.Unlock()

	free, holder, err := true, "", error(nil)
	if k.guard != nil {
		free, holder, err = k.guard.Free(ctx, since, k.clock.Now().Add(k.tick))
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	if k.term.End.IsZero() || k.stopped || k.suspended || k.present || !since.Equal(k.takeoverSince) || !now.Before(k.term.End) {
		// The term ended, or a new takeover began, while the guard probed: the next
		// reconcile decides again.
		return
	}
	if err != nil {
		// Without an answer from the guard, adding could put the VIP on two nodes.
		k.metrics.guardErrors.Inc()
		k.failedLocked(now, err, "Probing the LAN for another holder of the VIP failed; not adding it")
		return
	}
	if holder != "" {
		k.metrics.takeoverWaits.Inc()
		if !free {
			k.metrics.vipHeldElsewhere.Set(1)
		}
		if k.heldElsewhere != holder {
			k.log.Info("Another host still answers for the VIP; adding it once that stops", "holder", holder)
		}
		k.heldElsewhere = holder
	}
	if !free || k.awaitingWriteLocked() {
		return
	}
	if k.heldElsewhere != "" {
		k.log.Info("The VIP is no longer answered elsewhere", "holder", k.heldElsewhere)
		k.heldElsewhere = ""
	}
	k.metrics.vipHeldElsewhere.Set(0)
	if _, err := k.addr.Ensure(); err != nil {
		k.failedLocked(now, err, "Adding the VIP failed")
		return
	}
	// As after a refresh: a freeze between the guard and the write may have carried this
	// process past its term.
	if !k.clock.Now().Before(k.term.End) {
		k.dropLocked("the VIP was added after the term ended")
		return
	}
	if k.guard != nil {
		_ = k.guard.Close()
	}
	k.present = true
	k.failingSince = time.Time{}
	k.metrics.vipPresent.Set(1)
	k.log.Info("VIP added", "termEnd", k.term.End.Format(time.RFC3339Nano))
	k.burstFrom, k.nextBurst = now, 0
	k.announceLocked(ctx, now)
}

// Acquiring is the election's OnAcquiring callback: an acquisition write is about to go on
// the wire. The guard starts probing now, so that its TakeoverSilence overlaps the write;
// its verdict is used only once the write succeeded (Leading keeps this takeoverSince). The
// probes are valid evidence: the Lease was seen released or expired, a living holder removes
// the VIP before it releases, and a host that answers at any time before the verdict still
// resets the guard's count.
func (k *keeper) Acquiring() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.leading || k.suspended || k.stopped || k.guard == nil {
		return
	}
	if k.stopEarly != nil {
		k.stopEarly()
	}
	ctx, stop := context.WithCancel(context.Background())
	k.takeoverSince, k.acquiring, k.stopEarly = k.clock.Now(), true, stop
	go k.probeAhead(ctx, k.takeoverSince)
}

// AcquireFailed is the election's OnAcquireFailed callback: the acquisition write failed, so
// the probing ahead of it is discarded.
func (k *keeper) AcquireFailed() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopEarly != nil {
		k.stopEarly()
	}
	k.acquiring, k.stopEarly = false, nil
}

// probeAhead runs the guard of a takeover whose acquisition write is on the wire, for at
// most a tick. If the write succeeded meanwhile, it goes on with the takeover itself: the
// election's Leading found the guard busy and left the takeover to the one probing.
func (k *keeper) probeAhead(ctx context.Context, since time.Time) {
	if !k.probing.TryLock() {
		return // another takeover probes; it decides
	}
	_, _, _ = k.guard.Free(ctx, since, since.Add(k.tick)) // an error shows again in takeover
	k.probing.Unlock()

	k.mu.Lock()
	taking := k.leading && !k.present && !k.suspended
	discarded := !k.leading && !k.acquiring
	k.mu.Unlock()
	switch {
	case taking:
		k.takeover(context.Background())
	case discarded:
		k.closeGuard()
	}
}

// failedLocked records a failure to put the VIP on. Once failures have lasted
// failureGrace, the keeper is unfit to lead until the term ends (see fit).
func (k *keeper) failedLocked(now time.Time, err error, msg string) {
	k.log.Error(err, msg)
	if k.failingSince.IsZero() {
		k.failingSince = now
	}
	if !k.unfit && now.Sub(k.failingSince) >= failureGrace {
		k.unfit = true
		k.log.Info("Giving the lead up: the VIP could not be put on this node", "since", k.failingSince.Format(time.RFC3339Nano))
		if k.onUnfit != nil {
			k.onUnfit() // the election asks fit on its next step: make that now
		}
	}
}

// fit reports whether this node may lead as far as the keeper knows: false once it has
// failed for failureGrace to put the VIP on in the current term. The election's
// eligibility includes it, so that the node gives the Lease up for a peer to serve.
func (k *keeper) fit() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.unfit
}

// closeGuard closes the guard's socket while no takeover runs.
func (k *keeper) closeGuard() {
	if k.guard == nil || !k.probing.TryLock() {
		return
	}
	defer k.probing.Unlock()
	_ = k.guard.Close()
}

// keepFound keeps a VIP found on the NIC at start for d instead of
// sweeping it at once: the Lease names this node, and the election's first step will
// renew it (the takeover then finds the VIP on and keeps it) or else the sweep removes it.
func (k *keeper) keepFound(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.nextSweep = k.clock.Now().Add(d)
}
