// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
)

func sampleResults() *Results {
	run := func(outage time.Duration, failover bool, two time.Duration) runner.RunResult {
		return runner.RunResult{Leader: "node1", Failover: failover, Outage: outage, TwoHolders: two, Reverted: 3 * time.Second,
			Windows: []runner.Window{{Start: 100 * time.Millisecond, End: 100*time.Millisecond + outage}}}
	}
	return &Results{BaselinePerSecond: 0.3, Systems: []SystemResult{
		{Name: Ours, Steady: &runner.Steady{Window: 10 * time.Second, RequestsPerSecond: 1.1, RSSBytes: []int64{20 << 20}, BinaryBytes: 29 << 20},
			Scenarios: []ScenarioResult{
				{Name: "graceful", Planned: 2, Runs: []runner.RunResult{run(200*time.Millisecond, true, 0), run(400*time.Millisecond, true, 0)}},
				{Name: "crash", Planned: 2, Runs: []runner.RunResult{run(time.Second, true, 50*time.Millisecond)}},
			}},
		{Name: Baseline, Steady: &runner.Steady{Window: 10 * time.Second, RequestsPerSecond: 2.2, RSSBytes: []int64{48 << 20}, BinaryBytes: 60 << 20},
			Scenarios: []ScenarioResult{
				{Name: "graceful", Planned: 2, Runs: []runner.RunResult{run(1600*time.Millisecond, true, 0), run(2*time.Second, true, 0)}},
				{Name: "apiserver-dead", Planned: 2, Timeout: 15 * time.Second, Runs: []runner.RunResult{run(15*time.Second, false, 0)}},
			}},
	}}
}

func TestTables(t *testing.T) {
	var b bytes.Buffer
	r := sampleResults()
	if err := PrintFailover(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := PrintSteady(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"0.12",                        // ours graceful p50 0.2s / kube-vip p50 1.6s
		"1/2",                         // crash: 1 of 2 planned runs
		"0.05s [1]",                   // two-holder time
		"1 (cap 15.00s)",              // kube-vip never moved
		"goal <= 0.15s, no 2 holders", //
		"ref never moves",             //
		"ARP X,Y,X  on revert  moves  x kube-vip", // header aligned with the rows
		"29.0 MB", // binary
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// graceful p95 0.4s misses the 0.3s goal; crash had two holders.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ours ") && (strings.Contains(line, " graceful ") || strings.Contains(line, " crash ")) && !strings.HasSuffix(strings.TrimSpace(line), "NO") {
			t.Errorf("goal not marked missed: %q", line)
		}
	}
}

func TestTimelineAndJSON(t *testing.T) {
	dir := t.TempDir()
	r := sampleResults()
	png1 := filepath.Join(dir, "timeline.png")
	if err := WriteTimeline(r, png1); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(png1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("timeline is no PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 500 {
		t.Fatalf("timeline too small: %v", b)
	}
	js := filepath.Join(dir, "results.json")
	if err := r.WriteJSON(js); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := back.System(Baseline); !ok || s.Scenarios[1].Timeout != 15*time.Second || s.Scenarios[0].Outage().P50 != 1600*time.Millisecond {
		t.Fatalf("results did not survive JSON: %+v", back.Systems)
	}
}

func TestPrintSoak(t *testing.T) {
	s := &Soak{System: Ours, Planned: 4, Load: "load", Runs: []SoakRun{
		{Scenario: "crash", RunResult: runner.RunResult{Failover: true, Outage: 300 * time.Millisecond}},
		{Scenario: "crash", RunResult: runner.RunResult{Failover: true, Outage: 400 * time.Millisecond, TwoHolders: 30 * time.Millisecond}},
		{Scenario: "graceful", RunResult: runner.RunResult{Failover: true, Outage: 100 * time.Millisecond}},
		{Scenario: "graceful", RunResult: runner.RunResult{Failover: false, Outage: 15 * time.Second}},
	}}
	var b strings.Builder
	if err := PrintSoak(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"crash     2     0.30s  0.40s   0.40s   0      30ms [1]  NO",
		"graceful  2     0.10s  15.00s  15.00s  1      0ms [0]   NO",
		"all       4     0.30s  15.00s  15.00s  1      30ms [1]  NO",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("soak table lacks %q:\n%s", want, out)
		}
	}
}

func TestPrintSteadySoak(t *testing.T) {
	blips := []runner.Blip{
		{At: time.Minute, Node: "node2", Kind: runner.BlipBlackhole, Took: time.Second, EtcdLeader: "node2"},
		{At: 2 * time.Minute, Node: "node3", Kind: runner.BlipBlackhole, Took: time.Second},
	}
	s := &SteadySoak{
		Options: runner.SteadySoakOptions{Duration: 3 * time.Minute, BlipEvery: time.Minute, Blackhole: time.Second, Flap: 500 * time.Millisecond, ARPLoss: 0.02},
		Systems: []SteadySoakSystem{
			{Name: Ours, Result: runner.SteadySoakResult{Took: 3 * time.Minute, Blips: blips, HolderChanges: 0, LongestOutage: 30 * time.Millisecond}},
			{Name: Baseline, Result: runner.SteadySoakResult{Took: 3 * time.Minute, Blips: blips[:1], SkippedBlips: 1, HolderChanges: 3,
				Moves:      []runner.Move{{At: 63 * time.Second, From: "node1", To: "node2", AfterBlip: 0}, {At: 150 * time.Second, From: "node2", To: "node1", AfterBlip: -1}},
				TwoHolders: 40 * time.Millisecond, LongestOutage: 1500 * time.Millisecond, Restarts: 1}},
			{Name: "keepalived tuned", Error: "deploy failed"},
		},
	}
	var b strings.Builder
	if err := PrintSteadySoak(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"ours               3m0s    2      0        0               0             0ms       0ms          0.03s   0         yes",
		"kube-vip defaults  3m0s    1 [1]  3        2               1             40ms      0ms          1.50s   1",
		"keepalived tuned   (failed: deploy failed)",
		"kube-vip defaults: move at 1:03, node1 -> node2 (after the blackhole of node2 at 1:00, etcd leader node2)",
		"kube-vip defaults: move at 2:30, node2 -> node1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("steady soak table lacks %q:\n%s", want, out)
		}
	}
}
