// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Scenario is a fault injected into the node that holds the VIP, and its revert.
type Scenario struct {
	// Name is short, used in tables and JSON ("graceful", "crash", ...).
	Name string
	// Title says what happens.
	Title string
	// Fault injects the fault on node i.
	Fault func(ctx context.Context, d *Deployment, i int) error
	// Revert undoes it after the run; processes that exited are restarted afterwards in
	// any case.
	Revert func(ctx context.Context, d *Deployment, i int) error
}

func signal(sig syscall.Signal) func(context.Context, *Deployment, int) error {
	return func(_ context.Context, d *Deployment, i int) error { return d.Process(i).Signal(sig) }
}

// waitExit gives a signalled process time to exit and kills it if it does not.
func waitExit(ctx context.Context, d *Deployment, i int) error {
	p := d.Process(i)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
	}
	return nil
}

// Scenarios are the faults of the benchmark, in table order.
var Scenarios = []Scenario{
	{
		Name:   "graceful",
		Title:  "graceful stop (SIGTERM) of the leader's daemon",
		Fault:  signal(syscall.SIGTERM),
		Revert: waitExit,
	},
	{
		Name:   "crash",
		Title:  "SIGKILL of the leader's daemon",
		Fault:  signal(syscall.SIGKILL),
		Revert: waitExit,
	},
	{
		Name:  "link-down",
		Title: "the leader's LAN link down (up again after the run)",
		Fault: func(ctx context.Context, d *Deployment, i int) error { return d.nodes[i].LinkDown(ctx) },
		Revert: func(ctx context.Context, d *Deployment, i int) error {
			return d.nodes[i].LinkUp(ctx)
		},
	},
	{
		Name:  "apiserver-dead",
		Title: "the leader's local kube-apiserver killed, its daemon alive (apiserver restarted after)",
		Fault: func(_ context.Context, d *Deployment, i int) error {
			d.nodes[i].KillAPIServer()
			return nil
		},
		Revert: func(ctx context.Context, d *Deployment, i int) error {
			n := d.nodes[i]
			if err := n.StartAPIServer(ctx); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			if err := n.WaitAPIServerReady(ctx); err != nil {
				return fmt.Errorf("restarted apiserver: %w", err)
			}
			return nil
		},
	},
	{
		Name:   "freeze",
		Title:  "the leader's daemon frozen (SIGSTOP; SIGCONT after the run)",
		Fault:  signal(syscall.SIGSTOP),
		Revert: signal(syscall.SIGCONT),
	},
}

// ScenarioByName returns the scenario called name.
func ScenarioByName(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}
