// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/stats"
)

// Ours and Baseline name the systems the ratio column compares.
const (
	Ours     = "ours"
	Baseline = "kube-vip defaults"
)

// legend writes a table's title and, indented under it, the lines that say what its
// columns mean.
func legend(w io.Writer, title string, lines ...string) {
	fmt.Fprintln(w, title)
	for _, l := range lines {
		fmt.Fprintln(w, "  "+l)
	}
}

func secs(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// PrintFailover writes the failover table: one row per system and scenario.
func PrintFailover(w io.Writer, r *Results) error {
	legend(w,
		"Failover (client outage seen from the client namespace, TCP connect to VIP:6443 every 10ms;",
		"no-failover runs count at the scenario timeout; goals are checked on max; 2-holder = time",
		"with the VIP on two nodes, max over runs [runs with any]; 'x kube-vip' = p50 / p50 of kube-vip defaults;",
		"ARP X,Y,X = runs in which two MACs' ARP claims for the VIP interleaved between fault and revert;",
		"'on revert' = longest outage caused by undoing the fault, e.g. preemption back; not in p50/p95/max;",
		"moves = times the VIP came to rest on another node, max over runs; etcd-leader-cut and rolling-update: the VIP",
		"should stay served, 'no failover' counts runs in which it was not)",
	)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tscenario\truns\tp50\tp95\tmax\tno failover\t2-holder\tARP X,Y,X\ton revert\tmoves\tx kube-vip\tgoal / reference\tmet")
	for _, sys := range r.Systems {
		// The ratio compares within one address family.
		baseName := Baseline
		if strings.HasSuffix(sys.Name, IPv6Suffix) {
			baseName += IPv6Suffix
		}
		base, _ := r.System(baseName)
		if sys.Error != "" && len(sys.Scenarios) == 0 {
			fmt.Fprintf(tw, "%s\t(failed: %s)\n", sys.Name, oneLine(sys.Error))
			continue
		}
		for _, sc := range sys.Scenarios {
			o := sc.Outage()
			runs := fmt.Sprintf("%d", len(sc.Runs))
			if len(sc.Runs) != sc.Planned {
				runs = fmt.Sprintf("%d/%d", len(sc.Runs), sc.Planned)
			}
			if o.N == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t\n", sys.Name, sc.Name, runs, goalText(sys.Name, sc.Name))
				continue
			}
			nf := "-"
			if n := sc.NoFailover(); n > 0 {
				nf = fmt.Sprintf("%d (cap %s)", n, secs(sc.Timeout))
			}
			th, thRuns := sc.TwoHolders()
			two := "0"
			if thRuns > 0 {
				two = fmt.Sprintf("%s [%d]", secs(th), thRuns)
			}
			ratio := "-"
			if bs, ok := base.Scenario(sc.Name); ok && sys.Name != baseName {
				if q := stats.Ratio(o.P50, bs.Outage().P50); !math.IsNaN(q) {
					ratio = fmt.Sprintf("%.2f", q)
				}
			}
			back := "-"
			if a := sc.AfterRevert(); a > 0 {
				back = secs(a)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%d\t%s\t%s\t%s\n",
				sys.Name, sc.Name, runs, secs(o.P50), secs(o.P95), secs(o.Max), nf, two,
				sc.ARPConflictRuns(), len(sc.Runs), back, sc.MaxMoves(), ratio, goalText(sys.Name, sc.Name), met(sys.Name, sc, o))
		}
	}
	return tw.Flush()
}

// isOurs tells the agent's rows, IPv4 and IPv6, apart from the peers'.
func isOurs(system string) bool { return strings.TrimSuffix(system, IPv6Suffix) == Ours }

// IPv6Suffix ends the names of the rows measured with an IPv6 VIP.
const IPv6Suffix = " IPv6"

func goalText(system, scenario string) string {
	if isOurs(system) {
		if g, ok := Goals[scenario]; ok {
			return "goal " + g.Text
		}
		return "-"
	}
	if ref, ok := References[system][scenario]; ok {
		return "ref " + ref
	}
	return "-"
}

func met(system string, sc ScenarioResult, o stats.Summary) string {
	g, ok := Goals[sc.Name]
	if !isOurs(system) || !ok || (g.Outage == 0 && !g.NoTwoHolders && !g.ZeroOutage) {
		return ""
	}
	okay := sc.NoFailover() == 0 && (g.Outage == 0 || o.Max <= g.Outage) && (!g.ZeroOutage || o.Max == 0)
	if th, _ := sc.TwoHolders(); g.NoTwoHolders && th > 0 {
		okay = false
	}
	if okay {
		return "yes"
	}
	return "NO"
}

// PrintSteady writes the steady-state table.
func PrintSteady(w io.Writer, r *Results) error {
	legend(w,
		fmt.Sprintf("Steady state (lease requests/s summed over the 3 apiservers, less their own %.2f/s measured before;", r.BaselinePerSecond),
		"raw = without that subtraction; the apiservers' own lease traffic is bursty, so compare with keepalived,",
		"which makes no API requests; node req/s = every request (probes, Lease, watches) one node's daemon",
		"sent its own apiserver, less that apiserver's own, max over nodes; CPU = the daemon's CPU time per",
		"second, max over nodes; RSS per daemon's process group, max over nodes; holder changes = flaps;",
		"own = every request the daemon counted itself (kube_vip_agent_requests_total: apiservers and etcd), max over nodes;",
		"the per-node goal is checked on own where the daemon counts, else on node req/s)",
	)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "system\twindow\treq/s\traw req/s\tnode req/s\tCPU\tRSS\tbinary\tholder changes\tgoal\tmet")
	for _, sys := range r.Systems {
		s := sys.Steady
		if s == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t\t\n", sys.Name)
			continue
		}
		goal, ok := "-", ""
		if sys.Name == Ours {
			goal = fmt.Sprintf("<= %.1f req/s, <= %.0f req/s/node, RSS <= %d MB, binary <= %d MB",
				SteadyGoals.RequestsPerSecond, SteadyGoals.NodeRequestsPerSecond, SteadyGoals.RSSBytes>>20, SteadyGoals.BinaryBytes>>20)
			ok = "yes"
			if s.RequestsPerSecond > SteadyGoals.RequestsPerSecond || s.MaxRSS() > SteadyGoals.RSSBytes || s.BinaryBytes > SteadyGoals.BinaryBytes ||
				s.NodeRate() > SteadyGoals.NodeRequestsPerSecond {
				ok = "NO"
			}
		}
		nodeReq, cpu := "-", "-"
		if s.NodeRequestsPerSecond != nil {
			nodeReq, cpu = fmt.Sprintf("%.2f", s.MaxNodeRequests()), fmt.Sprintf("%.1fm", s.MaxCPU())
		}
		if s.AgentRequestsPerSecond != nil {
			nodeReq += fmt.Sprintf(" (own %.2f)", s.MaxAgentRequests())
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%s\t%s\t%.1f MB\t%.1f MB\t%d\t%s\t%s\n", sys.Name, s.Window, s.RequestsPerSecond,
			s.LeaseRequests/s.Window.Seconds(), nodeReq, cpu, mb(s.MaxRSS()), mb(s.BinaryBytes), s.HolderChanges, goal, ok)
	}
	return tw.Flush()
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
