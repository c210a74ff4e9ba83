// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/stats"
)

// SoakRun is one failover of a soak.
type SoakRun struct {
	Scenario string `json:"scenario"`
	runner.RunResult
}

// Soak is the result of -soak: many failovers of one system, the fault kinds mixed, with
// CPU load on every node.
type Soak struct {
	System  string        `json:"system"`
	Planned int           `json:"planned"`
	Load    string        `json:"load"`
	Runs    []SoakRun     `json:"runs"`
	Errors  []string      `json:"errors,omitempty"`
	Took    time.Duration `json:"took"`
}

// PrintSoak prints the soak's table: per fault kind and in total the outage distribution,
// the runs without failover (stuck) and the time with the VIP on two nodes.
func PrintSoak(w io.Writer, s *Soak) error {
	legend(w, fmt.Sprintf("Soak: %s, %d of %d failovers, fault kinds in turn, %s; took %s", s.System, len(s.Runs), s.Planned, s.Load, s.Took.Round(time.Second)),
		"(outage = client's time without the VIP; stuck = no other node took the VIP within the timeout;",
		"2-holder = total time with the VIP on two nodes, and the runs with any; goals: 0 stuck, 0 ms 2-holder)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\truns\tp50\tp95\tmax\tstuck\t2-holder\tmet")
	var kinds []string
	byKind := map[string][]SoakRun{}
	for _, r := range s.Runs {
		if _, ok := byKind[r.Scenario]; !ok {
			kinds = append(kinds, r.Scenario)
		}
		byKind[r.Scenario] = append(byKind[r.Scenario], r)
	}
	row := func(name string, runs []SoakRun) {
		var outages []time.Duration
		var two time.Duration
		stuck, twoRuns := 0, 0
		for _, r := range runs {
			outages = append(outages, r.Outage)
			if !r.Failover {
				stuck++
			}
			if r.TwoHolders > 0 {
				two += r.TwoHolders
				twoRuns++
			}
		}
		o := stats.Summarize(outages)
		met := "yes"
		if stuck > 0 || two > 0 {
			met = "NO"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%dms [%d]\t%s\n", name, len(runs), sec(o.P50), sec(o.P95), sec(o.Max),
			stuck, two.Milliseconds(), twoRuns, met)
	}
	for _, k := range kinds {
		row(k, byKind[k])
	}
	row("all", s.Runs)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range s.Errors {
		fmt.Fprintln(w, "error:", oneLine(e))
	}
	return nil
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
