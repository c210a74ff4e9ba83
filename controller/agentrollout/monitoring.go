// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	monitoringutils "github.com/gardener/gardener/pkg/component/observability/monitoring/utils"

	"github.com/gardener/gardener-extension-kube-vip/manifests/monitoring"
)

const (
	// PrometheusName is the Prometheus whose label the ServiceMonitor and PrometheusRule
	// carry: Gardener's shoot Prometheus selects its config objects by `prometheus: shoot`.
	PrometheusName  = "shoot"
	monitoringGroup = "monitoring.coreos.com"
)

var (
	// ServiceMonitorGVK and PrometheusRuleGVK are the prometheus-operator kinds Deploy
	// writes when the cluster has their CRDs.
	ServiceMonitorGVK = schema.GroupVersionKind{Group: monitoringGroup, Version: "v1", Kind: "ServiceMonitor"}
	PrometheusRuleGVK = schema.GroupVersionKind{Group: monitoringGroup, Version: "v1", Kind: "PrometheusRule"}
)

// agentAlerts are the alerts of manifests/monitoring/prometheusrule.yaml that read only the
// agents' metrics, so that a Prometheus that scrapes the agents and not the controller
// raises no false alert (KubeVIPNoLeader fires on the controller's metric being absent).
var agentAlerts = []string{"KubeVIPOnSeveralNodes", "KubeVIPLeaderWithoutVIP", "KubeVIPDark", "KubeVIPTwoAnswerers",
	"KubeVIPStalledHoldTooLong", "KubeVIPHeldElsewhere", "KubeVIPFlapping", "KubeVIPAPIServerUnhealthy"}

// AgentAlerts names the alerts the agent's PrometheusRule holds; the chart ships the rest
// of manifests/monitoring/prometheusrule.yaml beside the controller's ServiceMonitor.
func AgentAlerts() []string { return slices.Clone(agentAlerts) }

// MonitoringName is the name of the agent's ServiceMonitor and PrometheusRule, as Gardener
// names the config objects of a Prometheus (monitoringutils.ConfigObjectMeta).
func MonitoringName() string {
	return monitoringutils.ConfigObjectMeta(Name, "", PrometheusName).Name
}

// monitoringLabels are the agent's labels and Gardener's Prometheus selector label.
func (o objectNames) monitoringLabels() map[string]any {
	out := map[string]any{}
	for k, v := range o.labels() {
		out[k] = v
	}
	for k, v := range monitoringutils.Labels(PrometheusName) {
		out[k] = v
	}
	return out
}

// serviceMonitor scrapes every endpoint of the metrics Service.
func (o objectNames) serviceMonitor(namespace string) *unstructured.Unstructured {
	selector := map[string]any{}
	for k, v := range o.labels() {
		selector[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": MonitoringName(), "namespace": namespace, "labels": o.monitoringLabels()},
		"spec": map[string]any{
			"selector":          map[string]any{"matchLabels": selector},
			"namespaceSelector": map[string]any{"matchNames": []any{namespace}},
			"endpoints":         []any{map[string]any{"port": "metrics", "path": "/metrics", "scheme": "http"}},
		},
	}}
	u.SetGroupVersionKind(ServiceMonitorGVK)
	return u
}

// prometheusRule holds agentAlerts as manifests/monitoring/prometheusrule.yaml defines them.
func (o objectNames) prometheusRule(namespace string) (*unstructured.Unstructured, error) {
	manifest := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(monitoring.PrometheusRule, &manifest.Object); err != nil {
		return nil, fmt.Errorf("decoding the embedded PrometheusRule: %w", err)
	}
	groups, _, err := unstructured.NestedSlice(manifest.Object, "spec", "groups")
	if err != nil {
		return nil, fmt.Errorf("reading the embedded PrometheusRule's groups: %w", err)
	}
	var rules []any
	for _, g := range groups {
		group, _ := g.(map[string]any)
		groupRules, _, err := unstructured.NestedSlice(group, "rules")
		if err != nil {
			return nil, fmt.Errorf("reading the embedded PrometheusRule's rules: %w", err)
		}
		for _, r := range groupRules {
			rule, _ := r.(map[string]any)
			if alert, _ := rule["alert"].(string); slices.Contains(agentAlerts, alert) {
				rules = append(rules, maps.Clone(rule))
			}
		}
	}
	if len(rules) != len(agentAlerts) {
		return nil, fmt.Errorf("the embedded PrometheusRule has %d of the alerts %v", len(rules), agentAlerts)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": MonitoringName(), "namespace": namespace, "labels": o.monitoringLabels()},
		"spec": map[string]any{
			"groups": []any{map[string]any{"name": o.name, "rules": rules}},
		},
	}}
	u.SetGroupVersionKind(PrometheusRuleGVK)
	return u, nil
}
