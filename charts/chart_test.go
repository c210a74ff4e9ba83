// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gardener/gardener/pkg/chartrenderer"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
	"github.com/gardener/gardener-extension-kube-vip/manifests/monitoring"
)

const chartDir = "gardener-extension-kube-vip"

// TestChartLint is `helm lint --strict` with helm's own linter (make check runs it): with the
// default values and with the values gardenlet/gardenadm mix in for a self-hosted shoot.
func TestChartLint(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"defaults":    nil,
		"self-hosted": {"gardener": map[string]any{"version": "v1.150.0", "selfHostedShootCluster": true}},
	} {
		t.Run(name, func(t *testing.T) {
			l := lint.RunAll(chartDir, values, "extension-kube-vip")
			for _, m := range l.Messages {
				t.Log(m.Error())
			}
			if l.HighestSeverity >= support.WarningSev {
				t.Errorf("helm lint found problems (above)")
			}
		})
	}
}

// TestChartImageReferences renders the chart with each form image.tag (and the agent's and
// kube-vip's image values) may take: a tag, a tag with a digest, a digest alone. A digest
// alone must become repository@sha256:…, not repository:sha256:…, which no runtime pulls.
func TestChartImageReferences(t *testing.T) {
	const (
		repo   = "ghcr.io/example/gardener-extension-kube-vip"
		digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	for _, c := range []struct{ tag, want string }{
		{"v1.2.3", repo + ":v1.2.3"},
		{"v1.2.3@" + digest, repo + ":v1.2.3@" + digest},
		{digest, repo + "@" + digest},
	} {
		t.Run(c.tag, func(t *testing.T) {
			image := map[string]any{"repository": repo, "tag": c.tag}
			d := renderDeployment(t, map[string]any{"image": image, "agentImage": image, "kubeVIPImage": image})
			if got := d.Spec.Template.Spec.Containers[0].Image; got != c.want {
				t.Errorf("image.tag %q renders the image %q, want %q", c.tag, got, c.want)
			}
			args := d.Spec.Template.Spec.Containers[0].Args
			for _, flag := range []string{"--agent-image=", "--kube-vip-image="} {
				if !slices.Contains(args, flag+c.want) {
					t.Errorf("tag %q: no argument %s%s in %q", c.tag, flag, c.want, args)
				}
			}
		})
	}
}

// TestChartOperatorValues checks that the values an operator sets reach the Pod: pull
// secrets, the front-door probe.
func TestChartOperatorValues(t *testing.T) {
	d := renderDeployment(t, map[string]any{
		"imagePullSecrets": []any{map[string]any{"name": "ghcr-pull"}},
		"frontDoorProbe":   "lease",
	})
	spec := d.Spec.Template.Spec
	if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "ghcr-pull" {
		t.Errorf("imagePullSecrets %+v, want [ghcr-pull]", spec.ImagePullSecrets)
	}
	if !slices.Contains(spec.Containers[0].Args, "--front-door-probe=lease") {
		t.Errorf("no --front-door-probe=lease in %q", spec.Containers[0].Args)
	}
	// The node's name reaches the controller through the downward API.
	nodeName := slices.IndexFunc(spec.Containers[0].Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	})
	if nodeName < 0 || !slices.Contains(spec.Containers[0].Args, "--node-name=$(NODE_NAME)") {
		t.Errorf("the controller is not told its node: env %+v, args %q", spec.Containers[0].Env, spec.Containers[0].Args)
	}

	d = renderDeployment(t, nil)
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--front-door-probe") || strings.HasPrefix(a, "--kube-vip-image") || strings.HasPrefix(a, "--agent-image") {
			t.Errorf("the default values pass %s; the controller's own default should hold", a)
		}
	}
	if len(d.Spec.Template.Spec.ImagePullSecrets) != 0 {
		t.Errorf("the default values set imagePullSecrets %+v", d.Spec.Template.Spec.ImagePullSecrets)
	}
}

// TestChartMonitoring renders the chart as Gardener does for a self-hosted shoot (its
// renderer passes no API versions): the controller's ServiceMonitor selects the metrics
// Service in the release namespace, and it and the PrometheusRule sit in kube-system with
// Gardener's shoot Prometheus label; the rule holds exactly the alerts of the manifest the
// agent's rule does not, each as the manifest defines it. Without Gardener's values and
// without the CRDs neither is rendered.
func TestChartMonitoring(t *testing.T) {
	objs := render(t, map[string]any{"gardener": map[string]any{"selfHostedShootCluster": true}})
	svc, sm, rule := objs["Service"], objs["ServiceMonitor"], objs["PrometheusRule"]
	if len(svc) != 1 || len(sm) != 1 || len(rule) != 1 {
		t.Fatalf("rendered %d Services, %d ServiceMonitors, %d PrometheusRules, want one each", len(svc), len(sm), len(rule))
	}
	for _, u := range []*unstructured.Unstructured{sm[0], rule[0]} {
		if u.GetNamespace() != "kube-system" || u.GetLabels()["prometheus"] != "shoot" {
			t.Errorf("%s %s/%s labelled %v, want kube-system and prometheus=shoot", u.GetKind(), u.GetNamespace(), u.GetName(), u.GetLabels())
		}
	}
	selector, _, _ := unstructured.NestedStringMap(sm[0].Object, "spec", "selector", "matchLabels")
	names, _, _ := unstructured.NestedStringSlice(sm[0].Object, "spec", "namespaceSelector", "matchNames")
	if !maps.Equal(selector, svc[0].GetLabels()) || !slices.Equal(names, []string{svc[0].GetNamespace()}) {
		t.Errorf("the ServiceMonitor selects %v in %v, the Service is %s/%s with labels %v", selector, names, svc[0].GetNamespace(), svc[0].GetName(), svc[0].GetLabels())
	}

	want := manifestAlerts(t)
	for _, a := range agentrollout.AgentAlerts() {
		delete(want, a)
	}
	got := alertsOf(rule[0])
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the chart's PrometheusRule has the alerts %v, want the manifest's %v (those the agent's rule lacks)", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}

	if objs := render(t, nil); len(objs["ServiceMonitor"])+len(objs["PrometheusRule"]) != 0 {
		t.Errorf("without Gardener's values and the CRDs the chart renders %d ServiceMonitors and %d PrometheusRules", len(objs["ServiceMonitor"]), len(objs["PrometheusRule"]))
	}
}

// manifestAlerts are the rules of manifests/monitoring/prometheusrule.yaml by alert name.
func manifestAlerts(t *testing.T) map[string]map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(monitoring.PrometheusRule, &u.Object); err != nil {
		t.Fatal(err)
	}
	return alertsOf(u)
}

// alertsOf are the alerting rules of a PrometheusRule by alert name.
func alertsOf(rule *unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			if alert, ok := r.(map[string]any)["alert"].(string); ok {
				out[alert] = r.(map[string]any)
			}
		}
	}
	return out
}

// render renders the chart as Gardener's chart renderer does, and returns its objects by kind.
func render(t *testing.T, values map[string]any) map[string][]*unstructured.Unstructured {
	t.Helper()
	archive, err := gen.PackageChart(filepath.Join(".", chartDir))
	if err != nil {
		t.Fatal(err)
	}
	r := chartrenderer.NewWithServerVersion(&version.Info{Major: "1", Minor: "34", GitVersion: "v1.34.0"})
	chart, err := r.RenderArchive(archive, "kube-vip", "extension-kube-vip", values)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	out := map[string][]*unstructured.Unstructured{}
	for _, m := range chart.Manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m.Content), &u.Object); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if len(u.Object) > 0 {
			out[u.GetKind()] = append(out[u.GetKind()], u)
		}
	}
	return out
}

func renderDeployment(t *testing.T, values map[string]any) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	for _, u := range render(t, values)["Deployment"] {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(d.Spec.Template.Spec.Containers))
	}
	return d
}
