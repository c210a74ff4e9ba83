// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/report"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
)

// steadySoakSystems are the systems of -steady-soak unless -systems names others: the
// issue's rows, each peer with the settings it is compared on elsewhere.
const steadySoakSystems = "ours,kube-vip defaults,keepalived tuned"

// steadySoak is a -steady-soak run on one harness.
type steadySoak struct {
	log  logr.Logger
	r    *runner.Runner
	opts runner.SteadySoakOptions
	// work receives the systems' per-node files, out steady-soak.json.
	work, out string
}

// run soaks each system in turn on a fresh deployment (runner.SteadySoak), then prints the
// table and writes steady-soak.json. A system whose soak fails keeps what it measured and
// the next one runs.
func (ss steadySoak) run(ctx context.Context, systems []plannedSystem) error {
	started := time.Now()
	res := &report.SteadySoak{Options: ss.opts}
	var errs []error
	for _, ps := range systems {
		if ctx.Err() != nil {
			break
		}
		s := ss.system(ctx, ps)
		if s.Error != "" {
			errs = append(errs, fmt.Errorf("%s: %s", s.Name, s.Error))
		}
		res.Systems = append(res.Systems, s)
	}
	res.Took = time.Since(started)
	fmt.Println()
	if err := report.PrintSteadySoak(os.Stdout, res); err != nil {
		return err
	}
	path := filepath.Join(ss.out, "steady-soak.json")
	if err := report.WriteJSON(path, res); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	return errors.Join(append(errs, ctx.Err())...)
}

func (ss steadySoak) system(ctx context.Context, ps plannedSystem) report.SteadySoakSystem {
	s := report.SteadySoakSystem{Name: ps.sys.Name(), Description: ps.sys.Describe()}
	log := ss.log.WithValues("system", ps.sys.Name())
	log.Info("steady soak", "for", ss.opts.Duration)
	d, err := runner.Deploy(ctx, ss.r.Harness(), ps.sys, ss.work)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer func() {
		if err := d.Teardown(context.WithoutCancel(ctx)); err != nil {
			log.Error(err, "teardown")
		}
	}()
	s.Result, err = ss.r.SteadySoak(ctx, d, ss.opts)
	if err != nil {
		s.Error = err.Error()
		log.Error(err, "steady soak")
	}
	log.Info("steady soak done", "took", s.Result.Took.Round(time.Second), "blips", len(s.Result.Blips), "moves", len(s.Result.Moves),
		"twoHolders", s.Result.TwoHolders, "twoAnswerers", s.Result.TwoAnswerers, "longestOutage", s.Result.LongestOutage,
		"arpDropped", s.Result.ARPDropped, "arpRelayed", s.Result.ARPRelayed)
	return s
}
