// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package report holds the benchmark's results and renders them: the text tables, the
// JSON file and the failover timeline plot.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
	"github.com/gardener/gardener-extension-kube-vip/test/bench/stats"
)

// Results is everything one benchmark run measured.
type Results struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	CPUs     int           `json:"cpus"`
	VIP      string        `json:"vip"`
	Nodes    int           `json:"nodes"`
	// Probe describes the client's probe.
	Probe string `json:"probe"`
	// BaselinePerSecond is the apiservers' own lease requests per second.
	BaselinePerSecond float64 `json:"baselinePerSecond"`
	// BaselineNodePerSecond is, per apiserver, all the requests it served per second with
	// no system running (the bench's /metrics scrapes left out).
	BaselineNodePerSecond []float64      `json:"baselineNodePerSecond,omitempty"`
	Systems               []SystemResult `json:"systems"`
	Notes                 []string       `json:"notes,omitempty"`
}

// SystemResult is one system under test.
type SystemResult struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Steady      *runner.Steady   `json:"steady,omitempty"`
	Scenarios   []ScenarioResult `json:"scenarios"`
	Error       string           `json:"error,omitempty"`
}

// ScenarioResult is one scenario of one system.
type ScenarioResult struct {
	Name string `json:"name"`
	// Planned is the number of runs asked for; len(Runs) may be smaller after an early
	// stop or an error.
	Planned int                `json:"planned"`
	Runs    []runner.RunResult `json:"runs"`
	Timeout time.Duration      `json:"timeout"`
	// EarlyStop tells why fewer runs than planned were made, if so.
	EarlyStop string `json:"earlyStop,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Outage summarises the outages of the runs (no-failover runs count at the timeout).
func (s ScenarioResult) Outage() stats.Summary {
	var d []time.Duration
	for _, r := range s.Runs {
		d = append(d, r.Outage)
	}
	return stats.Summarize(d)
}

// MaxMoves is the most times the VIP came to rest on another node in one run.
func (s ScenarioResult) MaxMoves() int {
	m := 0
	for _, r := range s.Runs {
		m = max(m, r.Moves)
	}
	return m
}

// NoFailover counts the runs in which the VIP did not move within the timeout.
func (s ScenarioResult) NoFailover() int {
	n := 0
	for _, r := range s.Runs {
		if !r.Failover {
			n++
		}
	}
	return n
}

// TwoHolders returns the longest two-holder time and the number of runs that had any.
func (s ScenarioResult) TwoHolders() (time.Duration, int) {
	var m time.Duration
	n := 0
	for _, r := range s.Runs {
		if r.TwoHolders > 0 {
			n++
			m = max(m, r.TwoHolders)
		}
	}
	return m, n
}

// AfterRevert is the longest outage after a revert over the runs.
func (s ScenarioResult) AfterRevert() time.Duration {
	var m time.Duration
	for _, r := range s.Runs {
		m = max(m, r.AfterRevert)
	}
	return m
}

// ARPConflictRuns counts the runs with ARP claims for the VIP interleaved from two MACs.
func (s ScenarioResult) ARPConflictRuns() int {
	n := 0
	for _, r := range s.Runs {
		if r.ARPConflicts > 0 {
			n++
		}
	}
	return n
}

// Scenario returns the scenario called name of system, if measured.
func (r SystemResult) Scenario(name string) (ScenarioResult, bool) {
	for _, s := range r.Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return ScenarioResult{}, false
}

// System returns the system called name, if measured.
func (r *Results) System(name string) (SystemResult, bool) {
	for _, s := range r.Systems {
		if s.Name == name {
			return s, true
		}
	}
	return SystemResult{}, false
}

// WriteJSON writes the results to path, creating its directory.
func (r *Results) WriteJSON(path string) error { return WriteJSON(path, r) }

// WriteJSON writes v (results, a soak's) as indented JSON to path, creating its directory.
func WriteJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ReadJSON reads results written by WriteJSON.
func ReadJSON(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return &r, nil
}

// Merge replaces the systems of r that other measured too (by name), appends the others,
// and adds other's notes and duration.
func (r *Results) Merge(other *Results) {
	for _, s := range other.Systems {
		replaced := false
		for i := range r.Systems {
			if r.Systems[i].Name == s.Name {
				r.Systems[i], replaced = s, true
			}
		}
		if !replaced {
			r.Systems = append(r.Systems, s)
		}
	}
	r.Duration += other.Duration
	r.Notes = append(r.Notes, fmt.Sprintf("merged with a run started %s (%s)", other.Started.Format("15:04:05"), other.Duration.Round(time.Second)))
}
