// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// FamilyGuard is one VIP's takeover guard (a *Guard).
type FamilyGuard interface {
	Free(ctx context.Context, since, until time.Time) (free bool, holder string, err error)
	Close() error
}

// Guards is the takeover guard of an exposure with one VIP per family: the VIPs count as
// free only when every family's guard finds its VIP free. The guards take turns in slices
// short enough that each still sends a request every timing.TakeoverProbeInterval (the
// sockets queue the answers meanwhile); they run in the caller's goroutine, so that their
// sockets open in the caller's network namespace.
//
// A verdict "free" ends with one more turn of every guard, which reads what its socket
// queued since that guard's own verdict: a late answer for one family still stops the
// takeover of all. A guard that found its VIP free while another did not starts over on the
// next call, so that no verdict rests on requests older than the call.
type Guards []FamilyGuard

// Free probes until every VIP counts as free or until the clock reaches until (or ctx is
// done). The holder names every host that claimed a VIP during this call, comma-separated.
func (gs Guards) Free(ctx context.Context, since, until time.Time) (bool, string, error) {
	if len(gs) == 1 {
		return gs[0].Free(ctx, since, until)
	}
	slice := timing.TakeoverProbeInterval / time.Duration(len(gs))
	free := make([]bool, len(gs))
	var holders []string
	turn := func(i int, end time.Time) error {
		f, who, err := gs[i].Free(ctx, since, end)
		if who != "" && !slices.Contains(holders, who) {
			holders = append(holders, who)
		}
		free[i] = f && err == nil
		return err
	}
	for ctx.Err() == nil {
		all := true
		for i := range gs {
			if free[i] {
				continue
			}
			end := time.Now().Add(slice)
			if end.After(until) {
				end = until
			}
			if err := turn(i, end); err != nil {
				gs.restartFree(free)
				return false, strings.Join(holders, ","), err
			}
			all = all && free[i]
		}
		if all {
			// The confirming turn: an until in the past only drains and counts.
			for i := range gs {
				if err := turn(i, time.Time{}); err != nil || !free[i] {
					gs.restartFree(free)
					return false, strings.Join(holders, ","), err
				}
			}
			return true, strings.Join(holders, ","), nil
		}
		if !time.Now().Before(until) {
			break
		}
	}
	gs.restartFree(free)
	return false, strings.Join(holders, ","), nil
}

// restartFree closes the guards that found their VIP free, so that the next call probes
// them again.
func (gs Guards) restartFree(free []bool) {
	for i, f := range free {
		if f {
			_ = gs[i].Close()
		}
	}
}

// Close ends every guard's session.
func (gs Guards) Close() error {
	var errs []error
	for _, g := range gs {
		errs = append(errs, g.Close())
	}
	return errors.Join(errs...)
}
