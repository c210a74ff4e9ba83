// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/report"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
	"github.com/gardener/gardener-extension-kube-vip/test/dataplane"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// RouterSystem names ours measured through the Neutron router.
const RouterSystem = "ours via Neutron router"

// runDataplane measures ours twice, one after the other on the same machine: on the
// harness's L2 LAN (the client on the nodes' bridge probes the VIP) and behind the Neutron
// router of `hack/dataplane.sh up` (the nodes' NICs are Neutron ports with port security,
// the client in the external namespace probes the floating IP that the router NATs to the
// VIP). It prints both and the router's extra cost per scenario, and writes
// dataplane.json.
func runDataplane(ctx context.Context, log logr.Logger, o options, agentPath string, scenarios []runner.Scenario, out string) error {
	dp, err := dataplane.LoadEnv(ctx)
	if err != nil {
		return err
	}
	scenarios = slices.DeleteFunc(slices.Clone(scenarios), func(sc runner.Scenario) bool { return sc.NeedsBridge })
	started := time.Now()
	ours := plannedSystem{sys: sut.Agent{Path: agentPath}, runs: func(string) int { return o.runs }}
	work := filepath.Join(out, "work")
	res := &report.Results{Started: started, CPUs: runtime.NumCPU(), Nodes: 3,
		Probe: "TCP connect every 10ms, 200ms timeout: on L2 from the client namespace to VIP:6443; via the router from the external client namespace to the floating IP's port 6443"}

	measure := func(name string, opts netns.Options, front func(*netns.Harness) (runner.Options, func() error, error)) error {
		log.Info("starting the netns harness with a 3-node control plane", "path", name)
		t0 := time.Now()
		h, err := netns.New(ctx, opts)
		if h != nil {
			defer func() {
				if cerr := h.Close(); cerr != nil {
					log.Error(cerr, "closing the harness")
				}
			}()
		}
		if err != nil {
			return fmt.Errorf("netns harness (%s): %w", name, err)
		}
		ropts := runner.Options{Log: log}
		if front != nil {
			var closeFront func() error
			if ropts, closeFront, err = front(h); err != nil {
				return err
			}
			defer func() {
				if cerr := closeFront(); cerr != nil {
					log.Error(cerr, "closing the front door")
				}
			}()
			ropts.Log = log
		}
		log.Info("harness ready", "path", name, "vip", h.VIP(), "took", time.Since(t0).Round(time.Second))
		res.VIP = h.VIP().String()
		r := runner.New(h, ropts)
		baseline, err := r.Baseline(ctx, 2*o.steadyWindow)
		if err != nil {
			return fmt.Errorf("baseline (%s): %w", name, err)
		}
		sr := benchSystem(ctx, log, r, h, ours, scenarios, work, o, baseline)
		sr.Name = name
		res.Systems = append(res.Systems, sr)
		return nil
	}
	if err := measure(report.Ours, netns.Options{Prefix: "kvb-", ControlPlane: true, Dir: o.logs, Log: log.WithName("netns").V(1)}, nil); err != nil {
		return err
	}
	logs := o.logs
	if logs != "" {
		logs = filepath.Join(logs, "dataplane")
	}
	err = measure(RouterSystem, netns.Options{Prefix: "kvbd-", ControlPlane: true, Dir: logs, Log: log.WithName("netns").V(1),
		NIC: dp.NIC(dp.OpenStack.NodePortIDs)}, func(h *netns.Harness) (runner.Options, func() error, error) {
		fd, err := dp.OpenFrontDoor(ctx, h.VIP().String(), dp.OpenStack.NodePortIDs)
		if err != nil {
			return runner.Options{}, nil, err
		}
		closeFD := func() error { return fd.Close(context.WithoutCancel(ctx), dp) }
		client, release, err := h.ClientIn(dp.ClientNS)
		if err != nil {
			return runner.Options{}, nil, errors.Join(err, closeFD())
		}
		fip, err := netip.ParseAddr(fd.FloatingIP)
		if err != nil {
			release()
			return runner.Options{}, nil, errors.Join(err, closeFD())
		}
		log.Info("front door", "vip", fd.VIP, "floatingIP", fip, "client", dp.ClientNS)
		return runner.Options{Client: client, Target: netip.AddrPortFrom(fip, 6443)}, func() error { release(); return closeFD() }, nil
	})
	if err != nil {
		return err
	}
	res.Duration = time.Since(started)
	res.Notes = []string{
		fmt.Sprintf("%d runs per scenario and path; the L2 path first, then the router path, on the same machine", o.runs),
		"via the router: the nodes' NICs are Neutron ports (linuxbridge agent, iptables security groups, port security on) " +
			"with the VIP in their allowed address pairs; the L3 agent's qrouter namespace DNATs the floating IP to the VIP",
		"ARP conflicts are seen on the harness's bridge only, so the router path reports none",
	}
	fmt.Println()
	if err := report.PrintFailover(os.Stdout, res); err != nil {
		return err
	}
	fmt.Println()
	if err := printRouterCost(os.Stdout, res); err != nil {
		return err
	}
	for _, n := range res.Notes {
		fmt.Println("note:", n)
	}
	fmt.Printf("took %s on %d CPUs\n", res.Duration.Round(time.Second), res.CPUs)
	path := filepath.Join(out, "dataplane.json")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := res.WriteJSON(path); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	var errs []error
	for _, s := range res.Systems {
		if s.Error != "" {
			errs = append(errs, fmt.Errorf("%s: %s", s.Name, s.Error))
		}
	}
	return errors.Join(errs...)
}

// printRouterCost writes, per scenario, the outage on L2 and through the router and the
// difference (the router's extra cost).
func printRouterCost(w io.Writer, r *report.Results) error {
	l2, ok1 := r.System(report.Ours)
	routed, ok2 := r.System(RouterSystem)
	if !ok1 || !ok2 {
		return errors.New("router cost: a path has no results")
	}
	fmt.Fprintln(w, "The router's extra cost (client-observed outage of ours, p50 / max over the runs):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tL2\tvia router\textra p50\textra max\truns")
	for _, s := range l2.Scenarios {
		rs, ok := routed.Scenario(s.Name)
		if !ok {
			continue
		}
		a, b := s.Outage(), rs.Outage()
		if a.N == 0 || b.N == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%d / %d\n", s.Name, a.N, b.N)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s / %s\t%s / %s\t%+.2f s\t%+.2f s\t%d / %d\n", s.Name, secs(a.P50), secs(a.Max), secs(b.P50), secs(b.Max),
			(b.P50 - a.P50).Seconds(), (b.Max - a.Max).Seconds(), a.N, b.N)
	}
	return tw.Flush()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
