// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command bench measures VIP failover of this project's kube-vip-agent against upstream
// kube-vip v1.0.0 and keepalived on a LAN of network namespaces with a real 3-node
// control plane (test/netns), then prints the controller's figures
// (go run ./test/bench/controller). Run it as root from the repository root: make bench.
//
// It prints one failover table (system x scenario) and one steady-state table, and
// writes results.json and timeline.png to the output directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/report"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

type options struct {
	out             string
	runs            int
	reducedRuns     int
	slowRuns        int
	variantRuns     int
	systems         string
	scenarios       string
	steadyWindow    time.Duration
	keepalivedAdv   time.Duration
	skipController  bool
	verbose         bool
	noEtcdYield     bool
	noFailoverLimit int
	from            string
	logs            string
	soak            int
	steadySoak      runner.SteadySoakOptions
	dataplane       bool
	previous        string
	ipv6            string
	ipv6Scenarios   string
	ipv6PeerRuns    int
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "test/bench/out", "directory for results.json, timeline.png and the work files")
	flag.IntVar(&o.runs, "runs", 10, "runs per scenario for ours and kube-vip defaults")
	flag.IntVar(&o.reducedRuns, "reduced-runs", 4, "runs per scenario for both keepalived settings (time budget)")
	flag.IntVar(&o.variantRuns, "variant-runs", 3, "runs per scenario for kube-vip 3/2/1 (time budget)")
	flag.IntVar(&o.slowRuns, "slow-runs", 1, "runs for keepalived guide's apiserver-dead scenario (about 50s each; its 30s come from the check interval and fall count alone)")
	flag.IntVar(&o.noFailoverLimit, "no-failover-limit", 2, "stop a scenario after this many runs in a row without failover")
	flag.StringVar(&o.systems, "systems", "", "comma-separated systems to run (default all; -steady-soak: "+steadySoakSystems+"): ours, kube-vip defaults, kube-vip 3/2/1, kube-vip as deployed, keepalived guide, keepalived tuned")
	flag.StringVar(&o.scenarios, "scenarios", "", "comma-separated scenarios (default all): graceful, crash, link-down, apiserver-dead, freeze")
	flag.DurationVar(&o.steadyWindow, "steady-window", 10*time.Second, "steady-state measuring window per system (the baseline takes twice as long)")
	flag.DurationVar(&o.keepalivedAdv, "keepalived-advert", 200*time.Millisecond, "advert_int of keepalived tuned")
	flag.BoolVar(&o.skipController, "skip-controller", false, "do not run go run ./test/bench/controller")
	flag.BoolVar(&o.verbose, "v", false, "log every run")
	flag.BoolVar(&o.noEtcdYield, "no-etcd-yield", false, "run ours without the etcd-leader yield (--etcd-metrics-url=\"\"), to compare")
	flag.IntVar(&o.soak, "soak", 0, "instead of the tables: N failovers of ours, the -scenarios in turn (by default those ours can run without a previous release: no rolling-update), under CPU load on every node; prints dual-holder time, stuck runs and the outage distribution and writes soak.json")
	flag.DurationVar(&o.steadySoak.Duration, "steady-soak", 0, "instead of the tables: leave each of -systems (default "+steadySoakSystems+") alone this long on a fresh deployment, "+
		"every node's ARP and NDP frames -arp-loss lost and a follower blipped every -blip-every; counts needless moves, writes steady-soak.json; 0: off")
	flag.DurationVar(&o.steadySoak.BlipEvery, "blip-every", time.Minute, "-steady-soak: one follower blip this often, the followers in turn")
	flag.DurationVar(&o.steadySoak.Blackhole, "blip", time.Second, "-steady-soak: how long a blackhole blip cuts the follower off at L2, its carrier up")
	flag.DurationVar(&o.steadySoak.Flap, "flap", 500*time.Millisecond, "-steady-soak: how long a link-flap blip keeps the follower's link down")
	flag.Float64Var(&o.steadySoak.ARPLoss, "arp-loss", 0.02, "-steady-soak: the share of every node's ARP and NDP frames lost, each frame on its own; 0: none")
	flag.BoolVar(&o.dataplane, "dataplane", false, "instead of the tables: ours on the L2 LAN, then behind the Neutron router of hack/dataplane.sh up (probing the floating IP from the external client), and the router's extra cost; writes dataplane.json")
	flag.StringVar(&o.previous, "previous-release", "main", "git revision of the previous agent release for the rolling-update scenario (built once into bin/bench/previous/); "+
		"if its tree is this checkout's HEAD tree, its first parent; empty: ours does not roll")
	flag.StringVar(&o.ipv6, "ipv6", "ours,kube-vip defaults,keepalived tuned", "systems measured again with an IPv6 VIP (2001:2::100 on 2001:2::/64) on a second harness after the IPv4 tables; empty: none "+
		"(keepalived guide is VRRPv2, IPv4 only)")
	flag.IntVar(&o.ipv6PeerRuns, "ipv6-peer-runs", 4, "runs per scenario of the IPv6 rows of kube-vip and keepalived (time budget); ours runs -runs")
	flag.StringVar(&o.ipv6Scenarios, "ipv6-scenarios", "graceful,crash,link-down,apiserver-dead,freeze,crash-arp-impaired,freeze-arp-impaired", "scenarios of the IPv6 rows")
	flag.StringVar(&o.logs, "logs", "", "keep the harness directory (daemon logs, etcd data, certificates) here instead of a temporary one that is removed")
	flag.StringVar(&o.from, "from", "", "print the tables and draw the timeline of earlier results.json files instead of running; "+
		"with several (comma-separated), a later file's systems replace the earlier ones of the same name, and the merge is written to -out")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func newLogger(verbose bool) logr.Logger {
	v := 0
	if verbose {
		v = 1
	}
	return funcr.New(func(prefix, args string) {
		fmt.Fprintf(os.Stderr, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: v})
}

func run(ctx context.Context, o options) error {
	log := newLogger(o.verbose)
	if o.from != "" {
		return rerender(o)
	}
	if err := o.checkMode(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces, CAP_NET_ADMIN/CAP_NET_RAW)")
	}
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run from the repository root (make bench)")
	}
	started := time.Now()
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	bins, err := buildBinaries(ctx, log)
	if err != nil {
		return err
	}
	if o.previous != "" && o.tables() {
		if bins.previousAgent, bins.previousRev, err = buildPreviousAgent(ctx, log, o.previous); err != nil {
			return err
		}
	}
	chosen := o
	if o.steadySoak.Duration != 0 && o.systems == "" {
		chosen.systems = steadySoakSystems
	}
	systems, err := selectSystems(chosen, bins)
	if err != nil {
		return err
	}
	scenarios, err := selectScenarios(o.scenarios)
	if err != nil {
		return err
	}
	soakSys := sut.Agent{Path: bins.agent, NoEtcdYield: o.noEtcdYield}
	if o.soak > 0 {
		// Checked before the harness starts: a scenario the soak cannot prepare would
		// otherwise end it at its first run, minutes in.
		if scenarios, err = soakScenarios(soakSys, scenarios, o.scenarios != ""); err != nil {
			return err
		}
	}
	if o.dataplane {
		return runDataplane(ctx, log, o, bins.agent, scenarios, out)
	}

	log.Info("starting the netns harness with a 3-node control plane")
	h, err := netns.New(ctx, netns.Options{Prefix: "kvb-", ControlPlane: true, Dir: o.logs, Log: log.WithName("netns").V(1)})
	if h != nil {
		defer func() {
			if cerr := h.Close(); cerr != nil {
				log.Error(cerr, "closing the harness")
			}
		}()
	}
	if err != nil {
		return fmt.Errorf("netns harness: %w", err)
	}
	log.Info("harness ready", "vip", h.VIP(), "took", time.Since(started).Round(time.Second))

	r := runner.New(h, runner.Options{Log: log})
	res := &report.Results{
		Started: started, CPUs: runtime.NumCPU(), VIP: h.VIP().String(), Nodes: len(h.Nodes()),
		Probe: "TCP connect from the client namespace to VIP:6443 every 10ms, 200ms timeout",
	}
	if o.soak > 0 {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		return runSoak(ctx, log, r, h, soakSys, scenarios, o.soak, filepath.Join(out, "work"), out)
	}
	if o.steadySoak.Duration != 0 {
		ss := steadySoak{log: log, r: r, opts: o.steadySoak, work: filepath.Join(out, "work"), out: out}
		return ss.run(ctx, systems)
	}
	baseline, err := r.Baseline(ctx, 2*o.steadyWindow)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	res.BaselinePerSecond, res.BaselineNodePerSecond = baseline.Leases, baseline.Node
	log.Info("baseline", "apiserver lease requests/s", fmt.Sprintf("%.2f", baseline.Leases),
		"requests/s per apiserver", fmt.Sprintf("%.2f", baseline.Node))

	work := filepath.Join(out, "work")
	for _, ps := range systems {
		if ctx.Err() != nil {
			break
		}
		res.Systems = append(res.Systems, benchSystem(ctx, log, r, h, ps, scenarios, work, o, baseline))
	}
	if o.ipv6 != "" && ctx.Err() == nil {
		if err := benchIPv6(ctx, log, o, bins, res, work); err != nil {
			res.Notes = append(res.Notes, "IPv6 rows failed: "+err.Error())
			log.Error(err, "IPv6 rows")
		}
	}
	res.Duration = time.Since(started)
	res.Notes = append(notes(o, bins.previousRev), res.Notes...)

	fmt.Println()
	if err := report.PrintFailover(os.Stdout, res); err != nil {
		return err
	}
	fmt.Println()
	if err := report.PrintSteady(os.Stdout, res); err != nil {
		return err
	}
	fmt.Println()
	for _, n := range res.Notes {
		fmt.Println("note:", n)
	}
	fmt.Printf("failover part took %s on %d CPUs\n", res.Duration.Round(time.Second), res.CPUs)
	var errs []error
	if err := res.WriteJSON(filepath.Join(out, "results.json")); err != nil {
		errs = append(errs, err)
	}
	if err := report.WriteTimeline(res, filepath.Join(out, "timeline.png")); err != nil {
		errs = append(errs, err)
	}
	fmt.Printf("wrote %s and %s\n", filepath.Join(o.out, "results.json"), filepath.Join(o.out, "timeline.png"))
	if ctx.Err() != nil {
		return errors.Join(append(errs, ctx.Err())...)
	}
	if !o.skipController {
		if err := runController(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range res.Systems {
		if s.Error != "" {
			errs = append(errs, fmt.Errorf("%s: %s", s.Name, s.Error))
		}
	}
	return errors.Join(errs...)
}

// tables tells whether the run makes the tables, not one of the modes instead of them.
func (o options) tables() bool { return !o.dataplane && o.soak == 0 && o.steadySoak.Duration == 0 }

// checkMode refuses two modes at once and a steady soak's bad options before the slow
// start (binaries, harness).
func (o options) checkMode() error {
	modes := 0
	for _, on := range []bool{o.dataplane, o.soak > 0, o.steadySoak.Duration != 0} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return errors.New("-dataplane, -soak and -steady-soak exclude each other")
	}
	if o.steadySoak.Duration != 0 {
		return o.steadySoak.Validate()
	}
	return nil
}

// rerender prints the tables of earlier results (merged, if several) and redraws the
// timeline.
func rerender(o options) error {
	var res *report.Results
	files := strings.Split(o.from, ",")
	for _, f := range files {
		r, err := report.ReadJSON(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		if res == nil {
			res = r
			continue
		}
		res.Merge(r)
	}
	if len(files) > 1 {
		if err := res.WriteJSON(filepath.Join(o.out, "results.json")); err != nil {
			return err
		}
	}
	if err := report.PrintFailover(os.Stdout, res); err != nil {
		return err
	}
	fmt.Println()
	if err := report.PrintSteady(os.Stdout, res); err != nil {
		return err
	}
	for _, n := range res.Notes {
		fmt.Println("note:", n)
	}
	return report.WriteTimeline(res, filepath.Join(o.out, "timeline.png"))
}

// plannedSystem is a system and its run counts.
type plannedSystem struct {
	sys  sut.System
	runs func(scenario string) int
}

type binaries struct{ agent, kubeVIP, keepalived, previousAgent, previousRev string }

func buildBinaries(ctx context.Context, log logr.Logger) (binaries, error) {
	var b binaries
	root, err := os.Getwd()
	if err != nil {
		return b, err
	}
	b.agent = filepath.Join(root, "bin", "bench", "kube-vip-agent")
	log.Info("building kube-vip-agent", "to", b.agent)
	// Stripped, as kube-vip's release build is, so that the sizes compare.
	build := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", b.agent, "./cmd/kube-vip-agent")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return b, fmt.Errorf("building kube-vip-agent: %w", err)
	}
	log.Info("building upstream kube-vip (cached after the first time)")
	kv, err := exec.CommandContext(ctx, filepath.Join(root, "hack", "bench", "build-kube-vip.sh")).Output()
	if err != nil {
		return b, fmt.Errorf("hack/bench/build-kube-vip.sh: %w", err)
	}
	b.kubeVIP = strings.TrimSpace(string(kv))
	ensure := exec.CommandContext(ctx, filepath.Join(root, "hack", "bench", "ensure-keepalived.sh"))
	ensure.Stdout, ensure.Stderr = os.Stderr, os.Stderr
	if err := ensure.Run(); err != nil {
		return b, fmt.Errorf("hack/bench/ensure-keepalived.sh: %w", err)
	}
	if b.keepalived, err = exec.LookPath("keepalived"); err != nil {
		return b, err
	}
	return b, nil
}

func selectSystems(o options, b binaries) ([]plannedSystem, error) {
	full := func(string) int { return o.runs }
	reduced := func(string) int { return o.reducedRuns }
	variant := func(string) int { return o.variantRuns }
	guide := func(sc string) int {
		if sc == "apiserver-dead" {
			return o.slowRuns
		}
		return o.reducedRuns
	}
	var ours sut.System = sut.Agent{Path: b.agent, NoEtcdYield: o.noEtcdYield}
	if b.previousAgent != "" {
		ours = sut.AgentRolling{Agent: sut.Agent{Path: b.agent, NoEtcdYield: o.noEtcdYield, PreviousPath: b.previousAgent}}
	}
	all := []plannedSystem{
		{sys: ours, runs: full},
		{sys: sut.KubeVIP{Path: b.kubeVIP, Variant: "defaults"}, runs: full},
		// Our timings are under 1.5 s (timing.Defaults); kube-vip takes whole seconds and
		// client-go wants renew > 1.2 x retry, so 2/1/1 is refused and 3/2/1 is the closest
		// it runs.
		{sys: sut.KubeVIP{Path: b.kubeVIP, Variant: "3/2/1", LeaseDuration: 3, RenewDeadline: 2, RetryPeriod: 1}, runs: variant},
		// kube-vip with the settings of this extension's DaemonSet (agent.implementation kube-vip).
		{sys: sut.KubeVIPDeployed{Path: b.kubeVIP}, runs: variant},
		{sys: sut.KeepalivedGuide(b.keepalived), runs: guide},
		{sys: sut.KeepalivedTuned(b.keepalived, o.keepalivedAdv), runs: reduced},
	}
	if o.systems == "" {
		return all, nil
	}
	var out []plannedSystem
	for _, name := range strings.Split(o.systems, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, ps := range all {
			if ps.sys.Name() == name {
				out, found = append(out, ps), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown system %q", name)
		}
	}
	return out, nil
}

func selectScenarios(list string) ([]runner.Scenario, error) {
	if list == "" {
		return runner.Scenarios, nil
	}
	var out []runner.Scenario
	for _, name := range strings.Split(list, ",") {
		sc, ok := runner.ScenarioByName(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("unknown scenario %q", name)
		}
		out = append(out, sc)
	}
	return out, nil
}

// benchSystem deploys one system, measures its steady state and runs every scenario.
// A failed run ends its scenario; the system is redeployed for the next one.
func benchSystem(ctx context.Context, log logr.Logger, r *runner.Runner, h *netns.Harness, ps plannedSystem,
	scenarios []runner.Scenario, work string, o options, baseline runner.Requests) report.SystemResult {
	sys := ps.sys
	log = log.WithValues("system", sys.Name())
	res := report.SystemResult{Name: sys.Name(), Description: sys.Describe()}
	t0 := time.Now()
	d, err := runner.Deploy(ctx, h, sys, work)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer func() {
		if d != nil {
			if err := d.Teardown(context.WithoutCancel(ctx)); err != nil {
				log.Error(err, "teardown")
			}
		}
	}()
	steady, err := r.Steady(ctx, d, o.steadyWindow, baseline)
	if err != nil {
		res.Error = "steady state: " + err.Error()
		log.Error(err, "steady state")
	} else {
		res.Steady = &steady
		log.Info("steady state", "req/s", fmt.Sprintf("%.2f", steady.RequestsPerSecond), "rssMB", steady.MaxRSS()>>20,
			"node req/s", fmt.Sprintf("%.2f", steady.NodeRequestsPerSecond), "cpu m", fmt.Sprintf("%.1f", steady.CPUMillicores))
	}
	for _, sc := range scenarios {
		if ctx.Err() != nil {
			break
		}
		if sc.Applies != nil && !sc.Applies(sys) {
			continue
		}
		sr := report.ScenarioResult{Name: sc.Name, Planned: ps.runs(sc.Name), Timeout: sys.ScenarioTimeout()}
		st := time.Now()
		noFailoverInRow := 0
		for i := 0; i < sr.Planned && ctx.Err() == nil; i++ {
			rr, err := r.Run(ctx, d, sc)
			if err != nil {
				sr.Error = err.Error()
				log.Error(err, "run failed", "scenario", sc.Name, "run", i+1)
				// Start over from a clean deployment for the next scenario.
				_ = d.Teardown(context.WithoutCancel(ctx))
				d = nil
				if d, err = runner.Deploy(ctx, h, sys, work); err != nil {
					res.Scenarios = append(res.Scenarios, sr)
					res.Error = "redeploy: " + err.Error()
					return res
				}
				break
			}
			sr.Runs = append(sr.Runs, rr)
			log.V(1).Info("run", "scenario", sc.Name, "run", i+1, "leader", rr.Leader, "newHolder", rr.NewHolder,
				"outage", rr.Outage, "failover", rr.Failover, "twoHolders", rr.TwoHolders, "arpConflicts", rr.ARPConflicts,
				"etcdLeaderMoved", rr.EtcdLeaderMoved)
			if rr.Failover {
				noFailoverInRow = 0
			} else if noFailoverInRow++; noFailoverInRow >= o.noFailoverLimit && i+1 < sr.Planned {
				sr.EarlyStop = fmt.Sprintf("no failover in %d runs in a row", noFailoverInRow)
				break
			}
		}
		o := sr.Outage()
		log.Info("scenario done", "scenario", sc.Name, "runs", len(sr.Runs), "p50", o.P50, "max", o.Max,
			"noFailover", sr.NoFailover(), "took", time.Since(st).Round(time.Second))
		res.Scenarios = append(res.Scenarios, sr)
	}
	log.Info("system done", "took", time.Since(t0).Round(time.Second), "restarts", d.Restarts())
	return res
}

func notes(o options, prev string) []string {
	def := timing.Defaults()
	return []string{
		fmt.Sprintf("runs: %d for ours and kube-vip defaults; %d for both keepalived settings "+
			"(%d for keepalived guide's ~50s apiserver-dead runs); %d for kube-vip 3/2/1; to fit the 20-minute budget on 2 cores; a scenario stops after %d runs in a row without failover",
			o.runs, o.reducedRuns, o.slowRuns, o.variantRuns, o.noFailoverLimit),
		fmt.Sprintf("kube-vip 3/2/1: the closest whole-second timings to ours (%s/%s/%s) that client-go accepts (renew > 1.2 x retry)",
			def.LeaseDuration, def.RenewDeadline, def.RetryPeriod),
		fmt.Sprintf("keepalived tuned: %s (keepalived 2.2.7 takes whole seconds for the script interval)", sut.KeepalivedTuned("", o.keepalivedAdv).Describe()),
		"crash and freeze: the daemon stays down/frozen until the client reached the VIP on another node plus 0.5s; " +
			"2-holder time runs until the VIP is on one node again after the restart/SIGCONT",
		"exited daemons are restarted at once after each run (as the kubelet restarts a container); kube-vip exits (panics) whenever it loses the lease",
		"etcd-leader-cut: the etcd leader's node loses its link while another node holds the VIP (if the holder led etcd, the leadership was handed to another node first); " +
			"the VIP should not move: 'no failover' = runs in which the client could not reach it 4s after the cut",
		"link-down: for ours, the holder's etcd member does not lead at the cut, the state the etcd-leader yield keeps once another node has been eligible for 5 min; " +
			"runs seconds apart do not give it that time, so the bench hands etcd's leadership away where the holder's member led (results.json: etcdLeaderMoved); " +
			"link-down-etcd-leader is the case the yield avoids, forced: etcd's leadership handed to the holder's node 1s before the cut",
		fmt.Sprintf("crash-arp-impaired, freeze-arp-impaired: the old holder's ARP and NDP (neighbour solicitation/advertisement) frames delayed %s and %.0f%% lost by a user-space relay (this kernel has no sch_netem)",
			runner.ARPImpairment.Delay, 100*runner.ARPImpairment.Loss),
		rollNote(o, prev),
	}
}

// runController runs the controller's benchmark program and copies its output.
func runController(ctx context.Context) error {
	fmt.Println()
	fmt.Println("Controller (go run ./test/bench/controller):")
	cmd := exec.CommandContext(ctx, "go", "run", "./test/bench/controller")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go run ./test/bench/controller: %w", err)
	}
	return nil
}

func rollNote(o options, prev string) string {
	ours := "ours does not roll (-previous-release empty)"
	if prev != "" {
		ours = fmt.Sprintf("ours from the agent of commit %.12s (-previous-release %s) to this build", prev, o.previous)
	}
	return "rolling-update: node by node, SIGTERM, the new daemon started, the system's settle time waited (DaemonSet, maxUnavailable 1); " +
		ours + "; kube-vip and keepalived restart the same release (one release of each is built here): what a DaemonSet roll costs them; " +
		"'no failover' = runs in which the client could not reach the VIP 3s after the last node; moves = times the VIP came to rest on another node"
}

// ipv6System is a system measured with the IPv6 VIP, named apart from its IPv4 rows.
type ipv6System struct{ sut.System }

func (s ipv6System) Name() string { return s.System.Name() + report.IPv6Suffix }

// KeepsOffEtcdLeader passes sut.EtcdAware on: the embedded interface hides it, and the
// runner would then never hand etcd's leadership away before an IPv6 link-down run.
func (s ipv6System) KeepsOffEtcdLeader() bool {
	aware, ok := s.System.(sut.EtcdAware)
	return ok && aware.KeepsOffEtcdLeader()
}

// benchIPv6 measures the -ipv6 systems on a second harness whose VIP is IPv6, and adds
// their rows to res.
func benchIPv6(ctx context.Context, log logr.Logger, o options, bins binaries, res *report.Results, work string) error {
	v4 := o
	v4.systems, v4.previous = o.ipv6, ""
	bins.previousAgent = ""
	systems, err := selectSystems(v4, bins)
	if err != nil {
		return err
	}
	scenarios, err := selectScenarios(o.ipv6Scenarios)
	if err != nil {
		return err
	}
	log.Info("starting the IPv6 netns harness", "vip", ipv6VIP)
	h, err := netns.New(ctx, netns.Options{Prefix: "kvb6-", ControlPlane: true, Subnet6: ipv6Subnet, VIP: ipv6VIP,
		Log: log.WithName("netns6").V(1)})
	if h != nil {
		defer func() {
			if cerr := h.Close(); cerr != nil {
				log.Error(cerr, "closing the IPv6 harness")
			}
		}()
	}
	if err != nil {
		return fmt.Errorf("IPv6 netns harness: %w", err)
	}
	r := runner.New(h, runner.Options{Log: log})
	baseline, err := r.Baseline(ctx, 2*o.steadyWindow)
	if err != nil {
		return fmt.Errorf("IPv6 baseline: %w", err)
	}
	for _, ps := range systems {
		if ctx.Err() != nil {
			break
		}
		if ps.sys.Name() != report.Ours {
			ps.runs = func(string) int { return o.ipv6PeerRuns }
		}
		ps.sys = ipv6System{ps.sys}
		res.Systems = append(res.Systems, benchSystem(ctx, log, r, h, ps, scenarios, work, o, baseline))
	}
	return nil
}

// The IPv6 rows' LAN and VIP: the benchmarking range 2001:2::/48 only.
var (
	ipv6Subnet = netip.MustParsePrefix("2001:2::/64")
	ipv6VIP    = netip.MustParseAddr("2001:2::100")
)
