// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/report"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// soakLoad is the CPU load of a soak: one busy loop per node, in the node's namespace, at
// the bench's own priority, so that the daemons, etcd and the kube-apiservers compete
// for the CPU.
const soakLoad = "one busy shell loop per node"

// soakScenarios returns the scenarios the soak can run on sys. The default set (chosen
// false) leaves out those that do not apply to sys (the soak's agent does not roll); a
// chosen one that does not apply is refused, so that -scenarios never silently shrinks.
func soakScenarios(sys sut.System, scenarios []runner.Scenario, chosen bool) ([]runner.Scenario, error) {
	var out []runner.Scenario
	for _, sc := range scenarios {
		if sc.Applies == nil || sc.Applies(sys) {
			out = append(out, sc)
			continue
		}
		if chosen {
			return nil, fmt.Errorf("the soak cannot run scenario %q: it does not apply to %s", sc.Name, sys.Name())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the soak has no scenario that applies to %s", sys.Name())
	}
	return out, nil
}

// runSoak runs n failovers of sys, the scenarios in turn, under CPU load on every node,
// and prints and writes the soak's table. A run that fails (not a failover that fails:
// the harness) is recorded and the system deployed afresh.
func runSoak(ctx context.Context, log logr.Logger, r *runner.Runner, h *netns.Harness, sys sut.System,
	scenarios []runner.Scenario, n int, work, out string) error {
	started := time.Now()
	res := &report.Soak{System: sys.Name(), Planned: n, Load: soakLoad}
	var load []*netns.Process
	defer func() {
		for _, p := range load {
			p.Kill()
		}
	}()
	for _, node := range h.Nodes() {
		p, err := node.Start(ctx, netns.ProcessOptions{Name: "soak-load", Path: "sh", Args: []string{"-c", "while :; do :; done"}})
		if err != nil {
			return fmt.Errorf("CPU load on %s: %w", node.Name(), err)
		}
		load = append(load, p)
	}
	d, err := runner.Deploy(ctx, h, sys, work)
	if err != nil {
		return err
	}
	defer func() {
		if d != nil {
			if err := d.Teardown(context.WithoutCancel(ctx)); err != nil {
				log.Error(err, "teardown")
			}
		}
	}()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sc := scenarios[i%len(scenarios)]
		rr, err := r.Run(ctx, d, sc)
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("run %d (%s): %v", i+1, sc.Name, err))
			log.Error(err, "soak run failed", "run", i+1, "scenario", sc.Name)
			_ = d.Teardown(context.WithoutCancel(ctx))
			if d, err = runner.Deploy(ctx, h, sys, work); err != nil {
				d = nil
				res.Errors = append(res.Errors, "redeploy: "+err.Error())
				break
			}
			continue
		}
		res.Runs = append(res.Runs, report.SoakRun{Scenario: sc.Name, RunResult: rr})
		log.Info("soak run", "run", i+1, "scenario", sc.Name, "outage", rr.Outage, "failover", rr.Failover,
			"twoHolders", rr.TwoHolders)
	}
	res.Took = time.Since(started)
	fmt.Println()
	if err := report.PrintSoak(os.Stdout, res); err != nil {
		return err
	}
	path := filepath.Join(out, "soak.json")
	if err := report.WriteJSON(path, res); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	return ctx.Err()
}
