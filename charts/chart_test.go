// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gardener/gardener/pkg/chartrenderer"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"

	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
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

func renderDeployment(t *testing.T, values map[string]any) *appsv1.Deployment {
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
	d := &appsv1.Deployment{}
	for _, m := range chart.Manifests {
		if m.Head != nil && m.Head.Kind == "Deployment" {
			if err := yaml.Unmarshal([]byte(m.Content), d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(d.Spec.Template.Spec.Containers))
	}
	return d
}
