// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

const prometheusRuleFile = "manifests/monitoring/prometheusrule.yaml"

// exportedMetrics returns the metric names this code exports: the agent's (read from the
// source of agent/metrics.go: namespace kube_vip_agent plus each Name), the controller's
// OpenStack metrics, and those of controller-runtime that the alerts and docs use (read from
// controller-runtime's source in the module cache).
func exportedMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	src, err := os.ReadFile(filepath.Join(root, "agent", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`Namespace: ns, Name: "([a-z_]+)"`).FindAllSubmatch(src, -1) {
		names["kube_vip_agent_"+string(m[1])] = true
	}
	// The collector's metrics, read per scrape (the follower's prober, the stalled hold).
	for _, m := range regexp.MustCompile(`prometheus\.NewDesc\("(kube_vip_agent_[a-z_]+)"`).FindAllSubmatch(src, -1) {
		names[string(m[1])] = true
	}
	if len(names) == 0 {
		t.Fatal("found no agent metric in agent/metrics.go")
	}
	// The controller's Lease metrics (controller/exposure/leasemetrics.go), read per scrape.
	lease, err := os.ReadFile(filepath.Join(root, "controller", "exposure", "leasemetrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`prometheus\.NewDesc\("(kube_vip_[a-z_]+)"`).FindAllSubmatch(lease, -1) {
		names[string(m[1])] = true
	}
	names[openstack.MetricRequestsTotal] = true
	names[openstack.MetricRequestDuration] = true

	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/controller-runtime").Output()
	if err != nil {
		t.Fatalf("locating controller-runtime: %v", err)
	}
	crMetrics, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg", "internal", "controller", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`Name:\s+"(controller_runtime_[a-z_]+)"`).FindAllSubmatch(crMetrics, -1) {
		names[string(m[1])] = true
	}
	return names
}

// metricPattern matches the metric names of this project's alerts in a PromQL expression.
var metricPattern = regexp.MustCompile(`\b(kube_vip_[a-z_]+|controller_runtime_[a-z_]+|workqueue_[a-z_]+)\b`)

// TestPrometheusRule checks that the PrometheusRule decodes strictly into prometheus-operator's
// type, that its groups are exactly the alerts documented in docs/operations.md, and that
// every metric its expressions name is one this code exports.
func TestPrometheusRule(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, prometheusRuleFile))
	if err != nil {
		t.Fatal(err)
	}
	var rule monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict(data, &rule); err != nil {
		t.Fatalf("%s does not decode strictly as a PrometheusRule: %v", prometheusRuleFile, err)
	}
	if rule.Kind != monitoringv1.PrometheusRuleKind || rule.APIVersion != monitoringv1.SchemeGroupVersion.String() {
		t.Fatalf("%s is a %s %s", prometheusRuleFile, rule.APIVersion, rule.Kind)
	}

	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(doc, []byte("## Suggested alerts\n\n```yaml\n"))
	if !ok {
		t.Fatal("docs/operations.md has no yaml block under \"Suggested alerts\"")
	}
	block, _, _ := bytes.Cut(section, []byte("```"))
	var documented monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(block, &documented); err != nil {
		t.Fatalf("the alerts of docs/operations.md do not decode: %v", err)
	}
	if !equality.Semantic.DeepEqual(documented, rule.Spec) {
		t.Errorf("%s and the alerts of docs/operations.md differ", prometheusRuleFile)
	}

	exported := exportedMetrics(t, root)
	var alerts int
	for _, group := range rule.Spec.Groups {
		for _, r := range group.Rules {
			alerts++
			if r.Alert == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %q of group %s: want an alert name and a summary", r.Expr.String(), group.Name)
			}
			found := metricPattern.FindAllString(r.Expr.String(), -1)
			if len(found) == 0 {
				t.Errorf("alert %s names no metric of this project: %s", r.Alert, r.Expr.String())
			}
			for _, name := range found {
				if !exportedSeries(exported, name) {
					t.Errorf("alert %s uses %s, which the code does not export", r.Alert, name)
				}
			}
		}
	}
	if alerts == 0 {
		t.Error("the PrometheusRule has no alerts")
	}
}

// exportedSeries reports whether name is a series of an exported metric (a histogram's
// _bucket, _sum and _count included).
func exportedSeries(exported map[string]bool, name string) bool {
	if exported[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
			return true
		}
	}
	return false
}

// TestGrafanaDashboard checks that the dashboard is valid JSON with panels whose every query
// names only metrics this code exports.
func TestGrafanaDashboard(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "charts", "gardener-extension-kube-vip", "dashboards", "kube-vip.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	if dashboard.Title == "" || dashboard.UID == "" || len(dashboard.Panels) == 0 {
		t.Fatalf("the dashboard lacks a title, uid or panels")
	}
	exported := exportedMetrics(t, root)
	for _, panel := range dashboard.Panels {
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q has no query", panel.Title)
		}
		for _, target := range panel.Targets {
			found := metricPattern.FindAllString(target.Expr, -1)
			if len(found) == 0 {
				t.Errorf("panel %q: query %q names no metric of this project", panel.Title, target.Expr)
			}
			for _, name := range found {
				if !exportedSeries(exported, name) {
					t.Errorf("panel %q uses %s, which the code does not export", panel.Title, name)
				}
			}
		}
	}
}

// TestMetricTablesComplete: the agent's metric tables of docs/operations.md and
// docs/agent-reference.md list exactly the metrics agent/metrics.go exports.
func TestMetricTablesComplete(t *testing.T) {
	root := repoRoot(t)
	exported := map[string]bool{}
	for name := range exportedMetrics(t, root) {
		if strings.HasPrefix(name, "kube_vip_agent_") {
			exported[name] = true
		}
	}
	row := regexp.MustCompile("(?m)^\\| `(kube_vip_agent_[a-z_]+)")
	for _, doc := range []string{"operations.md", "agent-reference.md"} {
		b, err := os.ReadFile(filepath.Join(root, "docs", doc))
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, m := range row.FindAllSubmatch(b, -1) {
			listed[string(m[1])] = true
		}
		for name := range exported {
			if !listed[name] {
				t.Errorf("docs/%s: the agent's metric table lacks %s", doc, name)
			}
		}
		for name := range listed {
			if !exported[name] {
				t.Errorf("docs/%s lists %s, which agent/metrics.go does not export", doc, name)
			}
		}
	}
}
