// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// scriptedGuard answers Free from a list of verdicts, one per call (the last repeats).
type scriptedGuard struct {
	verdicts []bool
	holder   string
	calls    int
	closed   int
}

func (g *scriptedGuard) Free(context.Context, time.Time, time.Time) (bool, string, error) {
	v := g.verdicts[min(g.calls, len(g.verdicts)-1)]
	g.calls++
	if v {
		return true, "", nil
	}
	return false, g.holder, nil
}

func (g *scriptedGuard) Close() error { g.closed++; return nil }

func TestGuardsFreeOnlyWhenEveryFamilyIsFree(t *testing.T) {
	for name, tc := range map[string]struct {
		v4, v6      []bool
		free        bool
		closedV4    int
		wantHolders string
	}{
		"both free":                                {v4: []bool{true}, v6: []bool{true}, free: true},
		"IPv6 held: IPv4 starts over":              {v4: []bool{true}, v6: []bool{false}, free: false, closedV4: 1, wantHolders: "v6-holder"},
		"a late IPv4 claim at the confirming turn": {v4: []bool{true, false}, v6: []bool{true}, free: false, wantHolders: "v4-holder"},
	} {
		t.Run(name, func(t *testing.T) {
			v4 := &scriptedGuard{verdicts: tc.v4, holder: "v4-holder"}
			v6 := &scriptedGuard{verdicts: tc.v6, holder: "v6-holder"}
			// An until already past: one turn each, as when the keeper's tick is spent.
			free, holders, err := Guards{v4, v6}.Free(context.Background(), time.Now(), time.Now().Add(-time.Millisecond))
			if err != nil || free != tc.free || holders != tc.wantHolders {
				t.Errorf("Free() = %t, %q, %v; want %t, %q", free, holders, err, tc.free, tc.wantHolders)
			}
			if v4.closed != tc.closedV4 {
				t.Errorf("the IPv4 guard started over %d times, want %d", v4.closed, tc.closedV4)
			}
		})
	}
}

// Heard counts the distinct MACs of the last AnswerersWindow and names the last one.
func TestProberCountsAnswerers(t *testing.T) {
	p := NewProber("lo", netip.MustParseAddr("192.0.2.10"), nil, logr.Discard())
	t0 := time.Unix(1000, 0)
	p.noteAnswers(t0, []string{"02:00:00:00:00:01"})
	p.noteAnswers(t0.Add(500*time.Millisecond), []string{"02:00:00:00:00:02", "02:00:00:00:00:01"})
	if mac, n := p.Heard(t0.Add(900 * time.Millisecond)); mac != "02:00:00:00:00:01" || n != 2 {
		t.Fatalf("heard %q from %d answerers, want 02:00:00:00:00:01 from 2", mac, n)
	}
	p.noteAnswers(t0.Add(1600*time.Millisecond), []string{"02:00:00:00:00:02"})
	if mac, n := p.Heard(t0.Add(1700 * time.Millisecond)); mac != "02:00:00:00:00:02" || n != 1 {
		t.Fatalf("heard %q from %d answerers a second later, want 02:00:00:00:00:02 from 1", mac, n)
	}
}
