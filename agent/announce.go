// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"time"
)

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
	// The announcer checks the end of the term right before each packet: a process that
	// froze after the term check must not announce a VIP that another node may hold now.
	termCtx, cancel := context.WithDeadline(ctx, k.term.End)
	defer cancel()
	sent, err := k.announcer.Announce(termCtx)
	k.metrics.garpSent.Add(float64(sent))
	if err != nil {
		k.log.Error(err, "Announcing the VIP failed")
	}
}
