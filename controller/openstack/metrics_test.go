// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"bytes"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The counter read back from another process's metrics text sums as the registry's own.
func TestSnapshotOfScrapedCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.requests.WithLabelValues(ServiceNetwork, "GET ports", "200").Add(3)
	m.requests.WithLabelValues(ServiceNetwork, "GET ports", "404").Inc()
	m.requests.WithLabelValues(ServiceNetwork, "PUT ports", "200").Inc()
	m.requests.WithLabelValues(ServiceIdentity, "POST auth/tokens", "201").Inc()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&text, f); err != nil {
			t.Fatal(err)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	scraped, err := parser.TextToMetricFamilies(&text)
	if err != nil {
		t.Fatal(err)
	}
	got := SnapshotOf(scraped[MetricRequestsTotal])
	want := Snapshot{"network GET ports": 4, "network PUT ports": 1, "identity POST auth/tokens": 1}
	if !maps.Equal(got, want) || !maps.Equal(got, m.Snapshot()) {
		t.Errorf("SnapshotOf the scraped counter %v, want %v (the registry's own %v)", got, want, m.Snapshot())
	}
	if got.Writes() != 1 {
		t.Errorf("writes %d, want 1", got.Writes())
	}
}

// Two processes' calls sum per operation, and neither snapshot changes.
func TestSnapshotAdd(t *testing.T) {
	a := Snapshot{"network GET ports": 4, "network PUT ports": 1}
	b := Snapshot{"network GET ports": 2, "identity POST auth/tokens": 1}
	got := a.Add(b)
	want := Snapshot{"network GET ports": 6, "network PUT ports": 1, "identity POST auth/tokens": 1}
	if !maps.Equal(got, want) {
		t.Errorf("%v.Add(%v) = %v, want %v", a, b, got, want)
	}
	if a["network GET ports"] != 4 || len(a) != 2 || b["network GET ports"] != 2 || len(b) != 2 {
		t.Errorf("Add changed its operands: %v, %v", a, b)
	}
	if back := got.Sub(b); !maps.Equal(back, a) {
		t.Errorf("the sum less %v is %v, want %v", b, back, a)
	}
	if empty := (Snapshot(nil)).Add(b); !maps.Equal(empty, b) {
		t.Errorf("nothing plus %v is %v", b, empty)
	}
}
