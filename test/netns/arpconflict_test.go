// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns_test

import (
	"net"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

func TestARPConflicts(t *testing.T) {
	a := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	b := net.HardwareAddr{2, 0, 0, 0, 0, 2}
	t0 := time.Unix(1000, 0)
	at := func(ms int, mac net.HardwareAddr) netns.ARPClaim {
		return netns.ARPClaim{At: t0.Add(time.Duration(ms) * time.Millisecond), MAC: mac}
	}
	for _, tc := range []struct {
		name   string
		claims []netns.ARPClaim
		want   int
	}{
		{"none", nil, 0},
		{"one MAC", []netns.ARPClaim{at(0, a), at(100, a), at(5000, a)}, 0},
		{"clean handover", []netns.ARPClaim{at(0, a), at(900, b), at(1000, b), at(1300, b)}, 0},
		{"old leader claims again", []netns.ARPClaim{at(0, a), at(400, b), at(600, a)}, 1},
		{"fail-back after the window", []netns.ARPClaim{at(0, a), at(2000, b), at(4500, a)}, 0},
		{"interleaved", []netns.ARPClaim{at(0, a), at(100, b), at(200, a), at(300, b)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := netns.ARPConflicts(tc.claims, time.Second); len(got) != tc.want {
				t.Errorf("got %d conflicts %+v, want %d", len(got), got, tc.want)
			}
		})
	}
}
