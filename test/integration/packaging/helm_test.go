// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestHelmInstallUpgradeUninstall installs the chart of the previous release with the helm
// CLI (helm v4, a tool directive in go.mod) on a kube-apiserver with the CRDs a self-hosted
// shoot has, upgrades the release to this tree's chart with a value the previous chart did
// not know (frontDoorProbe) and uninstalls it, as an operator outside Gardener's
// registration would. After each step every object of the release's manifest is in the
// cluster, the upgrade changes the live Deployment, and after the uninstall nothing of
// either chart is left, release records included (the namespace helm created stays).
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	root := repoRoot(t)
	helm := helmCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	previous := t.TempDir()
	if err := framework.ExtractPreviousRelease(ctx, previous); errors.Is(err, framework.ErrNoPreviousRelease) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	monitoringCRDs, err := framework.PrometheusOperatorCRDPaths()
	if err != nil {
		t.Fatal(err)
	}
	cp := framework.StartControlPlane(t, framework.WithCRDPaths(append(monitoringCRDs, vpaCRD(t, root))...))
	run := helm.against(t, ctx, cp)
	const probe = "--front-door-probe=lease"

	run("install", releaseName, filepath.Join(previous, gen.ChartDir), "--namespace", releaseNamespace, "--create-namespace")
	installed := releaseObjects(t, cp.Client, run("get", "manifest", releaseName, "--namespace", releaseNamespace))
	checkPresent(ctx, t, cp.Client, "after installing the previous release", installed)
	if c := liveController(ctx, t, cp.Client); slices.Contains(c.Args, probe) {
		t.Fatalf("the previous release's Deployment already passes %s: the upgrade would change nothing", probe)
	}

	run("upgrade", releaseName, filepath.Join(root, gen.ChartDir), "--namespace", releaseNamespace, "--set", "frontDoorProbe=lease")
	upgraded := releaseObjects(t, cp.Client, run("get", "manifest", releaseName, "--namespace", releaseNamespace))
	checkPresent(ctx, t, cp.Client, "after the upgrade", upgraded)
	checkGone(ctx, t, cp.Client, "after the upgrade, of the previous release's objects that the chart no longer has", without(installed, upgraded))
	if c := liveController(ctx, t, cp.Client); !slices.Contains(c.Args, probe) {
		t.Errorf("after the upgrade the live Deployment runs %s %v, without %s", c.Image, c.Args, probe)
	}
	t.Logf("the previous release installed %d objects, the upgrade left %d (%d of the previous ones removed)", len(installed), len(upgraded), len(without(installed, upgraded)))

	run("uninstall", releaseName, "--namespace", releaseNamespace, "--wait")
	checkGone(ctx, t, cp.Client, "after the uninstall", append(installed, upgraded...))
	records := &corev1.SecretList{}
	if err := cp.Client.List(ctx, records, client.InNamespace(releaseNamespace), client.MatchingLabels{"owner": "helm", "name": releaseName}); err != nil {
		t.Fatal(err)
	}
	if len(records.Items) > 0 {
		t.Errorf("after the uninstall %d release records of %s are left", len(records.Items), releaseName)
	}
}

// helmBinary is the helm CLI, built once per test.
type helmBinary struct {
	path, home string
}

// helmCLI builds the helm CLI of go.mod's tool directive into a temporary directory, with a
// timeout of its own: a cold build compiles helm's dependencies.
func helmCLI(t *testing.T) helmBinary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := helmBinary{home: t.TempDir()}
	h.path = filepath.Join(h.home, "helm")
	if err := framework.BuildHelm(ctx, h.path); err != nil {
		t.Fatal(err)
	}
	return h
}

// against returns a function that runs helm ARGS against cp and returns its stdout; a
// failure fails the test. helm's caches, config, data and the kube client's cache live in
// the test's temporary directory, and the release records in Secrets, whatever the
// caller's environment says.
func (h helmBinary) against(t *testing.T, ctx context.Context, cp *framework.ControlPlane) func(args ...string) []byte {
	t.Helper()
	kubeconfig, err := cp.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.home, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HELM_DRIVER=secret", "HELM_NAMESPACE=", "KUBECACHEDIR="+filepath.Join(h.home, "kube-cache"),
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(h.home, "config"), "HELM_DATA_HOME="+filepath.Join(h.home, "data"))
	return func(args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, h.path, append([]string{"--kubeconfig", path}, args...)...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, stderr.Bytes())
		}
		return stdout.Bytes()
	}
}

// releaseObjects are the objects of a release's manifest (`helm get manifest`), each with
// its namespace as helm applies it (the release's, where a namespaced object names none).
func releaseObjects(t *testing.T, c client.Client, manifest []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding the release's manifest: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		namespaced, err := c.IsObjectNamespaced(u)
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if namespaced && u.GetNamespace() == "" {
			u.SetNamespace(releaseNamespace)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		t.Fatal("the release's manifest holds no object")
	}
	return out
}

func checkPresent(ctx context.Context, t *testing.T, c client.Client, when string, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			t.Errorf("%s: %s %s/%s: %v", when, o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// checkGone waits up to 30 s until none of objs exists.
func checkGone(ctx context.Context, t *testing.T, c client.Client, when string, objs []*unstructured.Unstructured) {
	t.Helper()
	var left []string
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		left = nil
		for _, o := range objs {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); !apierrors.IsNotFound(err) {
				left = append(left, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
			}
		}
		return len(left) == 0, nil
	})
	if len(left) > 0 {
		t.Errorf("%s: %v left", when, left)
	}
}

// without are the objects of a that b does not have (by kind, namespace and name).
func without(a, b []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range a {
		if !slices.ContainsFunc(b, func(p *unstructured.Unstructured) bool {
			return p.GroupVersionKind().GroupKind() == o.GroupVersionKind().GroupKind() && p.GetNamespace() == o.GetNamespace() && p.GetName() == o.GetName()
		}) {
			out = append(out, o)
		}
	}
	return out
}

// liveController is the controller's container as the Deployment in the cluster has it.
func liveController(ctx context.Context, t *testing.T, c client.Client) corev1.Container {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: controllerName}, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0]
}
