// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
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

type heardView struct {
	seconds   float64
	answerers int
	probing   bool
	cuts      int
}

func (h heardView) heard() (float64, int, bool) { return h.seconds, h.answerers, h.probing }
func (h heardView) cutOffs() int                { return h.cuts }

// The follower's view is exported only while it probes, so that the minimum over the nodes
// is what the followers hear; the stalled hold and the count of cut-offs always.
func TestObserverMetricsOnlyWhileProbing(t *testing.T) {
	for _, view := range []heardView{{12.5, 2, true, 3}, {0, 0, false, 3}} {
		registry := prometheus.NewRegistry()
		registry.MustRegister(newObserverCollector(view, func() time.Duration { return 1500 * time.Millisecond }))
		families, err := registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			m := f.GetMetric()[0]
			got[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
		want := map[string]float64{"kube_vip_agent_stalled_hold_seconds": 1.5, "kube_vip_agent_follower_cut_offs_total": 3}
		if view.probing {
			want["kube_vip_agent_vip_last_heard_seconds"] = 12.5
			want["kube_vip_agent_vip_answerers"] = 2
		}
		if !maps.Equal(got, want) {
			t.Errorf("probing=%v: metrics %v, want %v", view.probing, got, want)
		}
	}
}
