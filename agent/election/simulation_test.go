// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// simSeeds is how many fault schedules TestSimulation runs; SIM_SEEDS overrides it, and
// SIM_SEED replays one seed with its trace.
const simSeeds = 3000

// TestSimulation runs randomized fault schedules (sim_test.go): after a warm-up, one to three
// faults of every kind, each for 0.2 to 3 s, overlapping at times, on three nodes, with 2 %
// loss on every frame. No two nodes may ever answer for the VIP as a bystander sees it, and
// within liveBound of the last heal exactly one node serves it, the one the Lease names.
func TestSimulation(t *testing.T) {
	if s := os.Getenv("SIM_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SIM_SEED: %v", err)
		}
		r := simulate(simConfig{seed: seed, nodes: 3})
		t.Logf("trace of seed %d:\n%s", seed, strings.Join(r.trace, "\n"))
		for _, v := range r.violations {
			t.Error(v)
		}
		return
	}
	seeds := simSeeds
	if s := os.Getenv("SIM_SEEDS"); s != "" {
		var err error
		if seeds, err = strconv.Atoi(s); err != nil {
			t.Fatalf("SIM_SEEDS: %v", err)
		}
	}
	var (
		served []time.Duration
		failed []uint64
		moves  int
	)
	for seed := range uint64(seeds) {
		r := simulate(simConfig{seed: seed + 1, nodes: 3})
		if len(r.violations) > 0 {
			failed = append(failed, seed+1)
			if len(failed) <= 3 {
				t.Errorf("%s (replay: SIM_SEED=%d go test -run TestSimulation ./agent/election/)\n%s",
					r.violations[0], seed+1, strings.Join(r.trace, "\n"))
			}
			continue
		}
		served = append(served, r.served)
		moves += r.moves
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d schedules broke the rule: seeds %v", len(failed), seeds, failed)
	}
	slices.Sort(served)
	t.Logf("%d schedules: never two answerers; served again after the last heal in p50 %s, max %s; %d moves",
		seeds, served[len(served)/2], served[len(served)-1], moves)
}

// TestSimulationReplays: a seed gives the same run twice.
func TestSimulationReplays(t *testing.T) {
	for _, seed := range []uint64{3, 11, 42} {
		a, b := simulate(simConfig{seed: seed, nodes: 3}), simulate(simConfig{seed: seed, nodes: 3})
		if !slices.Equal(a.trace, b.trace) {
			t.Errorf("seed %d ran differently twice:\n%s\n---\n%s", seed, strings.Join(a.trace, "\n"), strings.Join(b.trace, "\n"))
		}
	}
}

// TestSimulationFindsBrokenProtections switches off one protection at a time and expects
// the simulation to find two answerers: without the takeover guard, after a crash (the dead
// node's kernel still answers for the VIP); without the fence, after the holder was cut off
// with its carrier up (it keeps the VIP in a stalled hold while a follower takes over).
func TestSimulationFindsBrokenProtections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate mutation
		faults []simFault
	}{
		{"without the guard", noGuard, []simFault{crash}},
		{"without the fence", noFence, []simFault{holderBlackholed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found := 0
			const seeds = 100
			for seed := range uint64(seeds) {
				r := simulate(simConfig{seed: seed + 1, nodes: 3, mutate: tc.mutate, faults: tc.faults})
				if len(r.violations) > 0 && strings.Contains(r.violations[0], "two nodes answer") {
					found++
				}
			}
			if found == 0 {
				t.Fatalf("no schedule of %d found two answerers", seeds)
			}
			t.Logf("%d of %d schedules found two answerers", found, seeds)
		})
	}
}
