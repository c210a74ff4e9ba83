// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"errors"
	"testing"
)

// Holding gates the etcd-leader yield's offer: a leader offers the lead only once the VIP
// is on its NIC, never while its own takeover is still under way or after its term.
func TestHoldingOnlyWhileTheVIPIsOn(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	if k.Holding() {
		t.Fatal("holding before leading")
	}
	addr.failNext = errors.New("netlink: busy")
	k.Leading(termAt(clk.Now()), true)
	if k.Holding() {
		t.Fatal("holding while the VIP could not be added")
	}
	advance(k, clk, k.tick)
	if !k.Holding() {
		t.Fatal("not holding with the VIP on the NIC in the term")
	}
	k.Following("test")
	if k.Holding() {
		t.Fatal("holding after the term ended")
	}
}
