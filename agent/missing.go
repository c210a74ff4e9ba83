// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"time"
)

// A VIP that goes missing while this node holds it (removed by hand, or by anything but
// the keeper) falls silent for the followers, and one of them takes the Lease early once
// it heard nothing for timing.EarlyTakeoverSilence. So the keeper learns of the removal at
// once (the address watch calls VIPRemoved), asks the election for a renewal at once, and
// puts the VIP back, through the guard, only in a term that a write of its own began after
// the loss, as a takeover does after its acquisition: the guard probes while the write is
// on the wire, and its verdict counts once the write succeeded. That write and a
// follower's early write are compare-and-swaps on the same record, so only one side adds
// the VIP; and the add falls at the start of a new term, so it stretches the VIP's
// lifetime no further than a takeover's add does.

// VIPRemoved is the address watch's callback: the kernel reported the VIP removed, or the
// watch was renewed and may have missed a removal. While the VIP is held it checks the NIC
// (one address listing) and, if the VIP is gone, starts its way back.
func (k *keeper) VIPRemoved() {
	k.mu.Lock()
	now := k.clock.Now()
	missing := false
	if s := k.stateLocked(now); s == held || s == lapsing {
		present, err := k.addr.Present()
		switch {
		case err != nil:
			k.log.Error(err, "Checking the VIP after the kernel reported a removal failed; the next renewal checks again")
		case !present:
			k.missingLocked(now, "The VIP went missing while leading; adding it back after a renewal, once the guard finds it free")
			k.askRenewalLocked(now)
			missing = true
		}
	}
	k.mu.Unlock()
	if missing {
		k.reconcile(context.Background()) // the guard probes now, while the renewal is on the wire
	}
}

// Fence is the holder's listener's callback (arp.Listener): the followers' probes stopped
// reaching this node, so it is cut off from them at L2 and they are about to take the Lease
// early; or another host announced the VIP, so one of them already did. The VIP goes at
// once, before a taker's guard can pass, and comes back as a VIP that went missing does:
// through the guard, after a write of this node's own that began after now. A false fence
// (this node's followers all stopped probing) costs that write and the guard's verdict, and
// no move. It reports whether it removed a VIP held in this term.
func (k *keeper) Fence() bool {
	k.mu.Lock()
	now := k.clock.Now()
	fenced := false
	if s := k.stateLocked(now); s == held || s == lapsing {
		if _, err := k.addr.Remove(); err != nil {
			k.log.Error(err, "Removing the VIP to fence this node off failed; its lifetime ends it")
		}
		k.missingLocked(now, "Fenced off the VIP: no follower is heard; adding it back after a renewal, once the guard finds it free")
		k.askRenewalLocked(now)
		fenced = true
	}
	k.mu.Unlock()
	if fenced {
		k.reconcile(context.Background()) // the guard probes while the renewal is on the wire
	}
	return fenced
}

// missingLocked records that the VIP of this term went off at now (msg says how): it goes
// back through the guard, whose probing starts now, and only once a write that starts at or
// after now succeeded (Renewing moves that to the start of the write it is called for).
func (k *keeper) missingLocked(now time.Time, msg string) {
	k.present, k.takeoverSince, k.missingSince = false, now, now
	k.metrics.vipPresent.Set(0)
	k.log.Info(msg)
}

// missingRenewalGap is the least time between two renewals the keeper asks for: a process
// that keeps deleting the VIP must not turn the leader's renewals into a write loop
// against the API server. A removal within it waits for the regular renewal.
const missingRenewalGap = time.Second

// askRenewalLocked asks the election for a renewal at once, at most once per
// missingRenewalGap.
func (k *keeper) askRenewalLocked(now time.Time) {
	if k.onMissing == nil || (!k.lastAsked.IsZero() && now.Sub(k.lastAsked) < missingRenewalGap) {
		return
	}
	k.lastAsked = now
	k.onMissing()
}

// awaitingWriteLocked reports whether the VIP went missing in this term and no write of
// this node's own has begun since: the guard's verdict does not count yet.
func (k *keeper) awaitingWriteLocked() bool {
	return !k.missingSince.IsZero() && k.term.Start.Before(k.missingSince)
}
