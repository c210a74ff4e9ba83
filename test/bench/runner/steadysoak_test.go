// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// The followers take turns, the holder is never picked, and each follower alternates its
// blip's kind; with no single holder there is no follower to pick.
func TestBlipPlan(t *testing.T) {
	p := newBlipPlan([]string{"node1", "node2", "node3"})
	var got []string
	pick := func(holders ...string) {
		t.Helper()
		i, kind, ok := p.next(holders)
		if !ok {
			got = append(got, "-")
			return
		}
		if slices.Contains(holders, p.nodes[i]) {
			t.Fatalf("picked the holder %s", p.nodes[i])
		}
		got = append(got, fmt.Sprintf("%s %s", p.nodes[i], kind))
	}
	for range 4 {
		pick("node1")
	}
	pick("node2")          // the VIP moved: node2 is skipped, node3 is next in turn
	pick("node2", "node3") // two holders: no blip
	pick()                 // none: no blip
	pick("node2")
	want := []string{
		"node2 blackhole", "node3 blackhole", "node2 link-flap", "node3 link-flap",
		"node1 blackhole", "-", "-", "node3 blackhole",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("picks\n got %q\nwant %q", got, want)
	}
}

func TestRestMovesAndAttribution(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	sr := netns.SamplerReport{Changes: []netns.HolderChange{
		{At: at(-1), Holders: []string{"node1"}},
		{At: at(60.5), Holders: []string{"node1", "node2"}}, // a follower's blip takes the VIP too: no move
		{At: at(61.2), Holders: []string{"node1"}},
		{At: at(125), Holders: nil},
		{At: at(125.1), Holders: []string{"node1"}}, // a gap on the same node: no move
		{At: at(126), Holders: []string{"node3"}},   // moves during node2's blip
		{At: at(300), Holders: []string{"node2"}},   // moves long after any blip
	}}
	moves := restMoves(sr, t0, "node1")
	if len(moves) != 2 || moves[0].From != "node1" || moves[0].To != "node3" || moves[0].At != 126*time.Second ||
		moves[1].From != "node3" || moves[1].To != "node2" {
		t.Fatalf("restMoves = %+v", moves)
	}
	blips := []Blip{
		{At: 60 * time.Second, Node: "node2", Kind: BlipBlackhole, Took: time.Second},
		{At: 120 * time.Second, Node: "node2", Kind: BlipLinkFlap, Took: 500 * time.Millisecond},
		{At: 180 * time.Second, Node: "node3", Kind: BlipBlackhole, Took: time.Second},
	}
	res := SteadySoakResult{Moves: attributeMoves(moves, blips, BlipAftermath)}
	if res.Moves[0].AfterBlip != 1 || res.Moves[1].AfterBlip != -1 || res.MovesAfterBlips() != 1 {
		t.Fatalf("attributed %+v, %d after a blip; want the first after blip 1, the second after none", res.Moves, res.MovesAfterBlips())
	}
	// The aftermath ends BlipAftermath after the heal.
	late := []Move{{At: 120*time.Second + 500*time.Millisecond + BlipAftermath + time.Millisecond}}
	if got := attributeMoves(late, blips, BlipAftermath)[0].AfterBlip; got != -1 {
		t.Fatalf("a move past the aftermath attributed to blip %d", got)
	}
}

func TestSteadySoakOptionsValidate(t *testing.T) {
	ok := SteadySoakOptions{Duration: 30 * time.Minute, BlipEvery: time.Minute, Blackhole: time.Second, Flap: 500 * time.Millisecond, ARPLoss: 0.02}
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for name, mutate := range map[string]func(*SteadySoakOptions){
		"negative duration":   func(o *SteadySoakOptions) { o.Duration = -time.Minute },
		"no blip interval":    func(o *SteadySoakOptions) { o.BlipEvery = 0 },
		"blackhole too long":  func(o *SteadySoakOptions) { o.Blackhole = time.Minute },
		"flap of zero":        func(o *SteadySoakOptions) { o.Flap = 0 },
		"loss of every frame": func(o *SteadySoakOptions) { o.ARPLoss = 1 },
		"negative loss":       func(o *SteadySoakOptions) { o.ARPLoss = -0.1 },
	} {
		o := ok
		mutate(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
