// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"testing"

	clocktesting "k8s.io/utils/clock/testing"
	"time"
)

func TestMetricsCarryTheNodeAndTheRuntime(t *testing.T) {
	registry, reg := newRegistry("node-7")
	newMetrics(reg, clocktesting.NewFakeClock(time.Unix(1000, 0)))
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
		for _, m := range f.GetMetric() {
			node := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" {
					node = l.GetValue()
				}
			}
			if node != "node-7" {
				t.Errorf("%s has node label %q, want node-7", f.GetName(), node)
			}
		}
	}
	for _, want := range []string{"kube_vip_agent_is_leader", "go_goroutines", "process_resident_memory_bytes", "go_build_info"} {
		if !seen[want] {
			t.Errorf("no %s among the agent's metrics", want)
		}
	}
}
