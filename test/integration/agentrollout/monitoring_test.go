// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout_test

import (
	"maps"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/manifests/monitoring"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestMonitoringObjects: without the prometheus-operator CRDs Deploy writes only the
// metrics Service; with them (Gardener's copies of the CRDs, as its seeds install them)
// also the ServiceMonitor and the PrometheusRule with the two-holder alert, labelled for
// Gardener's shoot Prometheus; Delete, ForceDelete and a switch to upstream kube-vip remove
// them all.
// Its own kube-apiserver: installing CRDs would change the shared one for other tests.
func TestMonitoringObjects(t *testing.T) {
	ctx := t.Context()
	cp := framework.StartControlPlane(t)
	c := cp.Client
	ns := newNamespace(ctx, t, c)
	d := agentrollout.New(c)
	spec := agentrollout.Spec{Namespace: ns, Image: image, VIP: vip}

	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy without the CRDs: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: agentrollout.Name}, &corev1.Service{}); err != nil {
		t.Fatalf("metrics Service without the CRDs: %v", err)
	}

	dir, err := framework.GardenerModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{ErrorIfPathMissing: true, Paths: []string{
		filepath.Join(dir, "example/seed-crds/10-crd-monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(dir, "example/seed-crds/10-crd-monitoring.coreos.com_prometheusrules.yaml"),
	}}); err != nil {
		t.Fatalf("installing the prometheus-operator CRDs: %v", err)
	}
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy with the CRDs: %v", err)
	}

	get := func(gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shoot-kube-vip-agent"}, u)
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: agentrollout.Name}, svc); err != nil {
		t.Fatal(err)
	}
	sm, err := get(agentrollout.ServiceMonitorGVK)
	if err != nil {
		t.Fatalf("ServiceMonitor: %v", err)
	}
	if sm.GetLabels()["prometheus"] != "shoot" {
		t.Errorf("ServiceMonitor labels = %v, want prometheus=shoot", sm.GetLabels())
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(selector) == 0 || !maps.Equal(selector, svc.Labels) {
		t.Errorf("ServiceMonitor selects %v, the Service's labels are %v", selector, svc.Labels)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != svc.Spec.Ports[0].Name {
		t.Errorf("ServiceMonitor endpoints = %v, the Service's port is %q", endpoints, svc.Spec.Ports[0].Name)
	}

	pr, err := get(agentrollout.PrometheusRuleGVK)
	if err != nil {
		t.Fatalf("PrometheusRule: %v", err)
	}
	if pr.GetLabels()["prometheus"] != "shoot" {
		t.Errorf("PrometheusRule labels = %v, want prometheus=shoot", pr.GetLabels())
	}
	if got, want := alerts(t, pr.Object)["KubeVIPHeldElsewhere"], alerts(t, manifestRule(t))["KubeVIPHeldElsewhere"]; got == "" || got != want {
		t.Errorf("KubeVIPHeldElsewhere expr = %q, manifests/monitoring/prometheusrule.yaml has %q", got, want)
	}
	if _, ok := alerts(t, pr.Object)["KubeVIPNoLeader"]; ok {
		t.Error("the PrometheusRule has KubeVIPNoLeader, which fires when the controller is not scraped")
	}

	// Switching to upstream kube-vip removes them with the rest of kube-vip-agent.
	pod := agentPod(ns)
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("creating an agent pod: %v", err)
	}
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatalf("deleting the agent pod: %v", err)
	}
	kv := spec
	kv.Implementation = v1alpha1.AgentImplementationKubeVIP
	kv.Image = "ghcr.io/kube-vip/kube-vip:v1.0.1"
	if err := d.Deploy(ctx, kv); err != nil {
		t.Fatalf("Deploy kube-vip: %v", err)
	}
	assertMonitoringGone(t, c, ns, get)

	// Back to kube-vip-agent, then Delete.
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy kube-vip-agent again: %v", err)
	}
	if _, err := get(agentrollout.ServiceMonitorGVK); err != nil {
		t.Fatalf("ServiceMonitor after the switch back: %v", err)
	}
	if gone, err := d.Delete(ctx, ns); err != nil || !gone {
		t.Fatalf("Delete: gone=%v err=%v", gone, err)
	}
	assertMonitoringGone(t, c, ns, get)

	// ForceDelete removes them at once, although an agent pod is still bound to its node.
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy kube-vip-agent a third time: %v", err)
	}
	bound := agentPod(ns)
	bound.Spec.NodeName = "cp-unreachable"
	if err := c.Create(ctx, bound); err != nil {
		t.Fatalf("creating a bound agent pod: %v", err)
	}
	if err := d.ForceDelete(ctx, ns); err != nil {
		t.Fatalf("ForceDelete: %v", err)
	}
	assertMonitoringGone(t, c, ns, get)
}

func assertMonitoringGone(t *testing.T, c client.Client, ns string, get func(schema.GroupVersionKind) (*unstructured.Unstructured, error)) {
	t.Helper()
	for _, gvk := range []schema.GroupVersionKind{agentrollout.ServiceMonitorGVK, agentrollout.PrometheusRuleGVK} {
		if _, err := get(gvk); !apierrors.IsNotFound(err) {
			t.Errorf("%s still there: %v", gvk.Kind, err)
		}
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: agentrollout.Name}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("metrics Service still there: %v", err)
	}
}

// agentPod is a kube-vip-agent pod without a node, which the apiserver removes at once.
func agentPod(ns string) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: agentrollout.Name, Image: image}}}}
	pod.Namespace, pod.GenerateName, pod.Labels = ns, "kube-vip-agent-", agentrollout.Labels()
	return pod
}

func manifestRule(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	if err := yaml.Unmarshal(monitoring.PrometheusRule, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// alerts maps each alert of a PrometheusRule to its expression.
func alerts(t *testing.T, obj map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	groups, _, err := unstructured.NestedSlice(obj, "spec", "groups")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			if name, ok := rule["alert"].(string); ok {
				out[name], _ = rule["expr"].(string)
			}
		}
	}
	return out
}
