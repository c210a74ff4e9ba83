// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// requireNodes skips (fails under CI=true) without root or containerd.
func requireNodes(t *testing.T) {
	t.Helper()
	framework.RequireRoot(t)
	if _, err := exec.LookPath("containerd"); err != nil {
		framework.Unavailable(t, "containerd is not installed (hack/install-deps.sh): %v", err)
	}
}

// TestNodesRegisterAsControlPlane brings the cluster up and checks what gardenadm's nodes
// look like: every node Ready, with the control-plane label and NoSchedule taint and its
// LAN address, its kubelet and containerd running in the node's namespace; the
// sandbox and the project's images are in every containerd. It reports bring-up time and
// memory.
func TestNodesRegisterAsControlPlane(t *testing.T) {
	requireNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := nodes.New(ctx, nodes.Options{Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer closeCluster(t, c)
	t.Logf("bring-up took %s: %+v", time.Since(start).Round(time.Millisecond), c.BringUp)

	list, err := c.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(c.Nodes()) {
		t.Fatalf("%d Nodes registered, want %d", len(list.Items), len(c.Nodes()))
	}
	for _, node := range list.Items {
		n := c.Node(node.Name)
		if n == nil {
			t.Fatalf("unexpected Node %s", node.Name)
		}
		if _, ok := node.Labels[nodes.ControlPlaneRole]; !ok {
			t.Errorf("%s: no label %s", node.Name, nodes.ControlPlaneRole)
		}
		tainted := slices.ContainsFunc(node.Spec.Taints, func(tn corev1.Taint) bool {
			return tn.Key == nodes.ControlPlaneRole && tn.Effect == corev1.TaintEffectNoSchedule
		})
		if !tainted {
			t.Errorf("%s: no %s:NoSchedule taint: %+v", node.Name, nodes.ControlPlaneRole, node.Spec.Taints)
		}
		if !slices.ContainsFunc(node.Status.Addresses, func(a corev1.NodeAddress) bool {
			return a.Type == corev1.NodeInternalIP && a.Address == n.IP().String()
		}) {
			t.Errorf("%s: addresses %+v, want InternalIP %s", node.Name, node.Status.Addresses, n.IP())
		}
		for _, name := range []string{"kubelet", "containerd"} {
			if p, err := n.Processes(name); err != nil || len(p) != 1 {
				t.Errorf("%s: %d %s processes in the node's namespace (%v), want 1", node.Name, len(p), name, err)
			}
		}
		for _, img := range []string{"pause", "kube-vip-agent", "gardener-extension-kube-vip"} {
			if !hasImage(node.Status.Images, c.ImageRef(img)) {
				t.Errorf("%s: image %s not reported by the kubelet: %+v", node.Name, c.ImageRef(img), node.Status.Images)
			}
		}
	}
	mem, err := c.Memory()
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for n, b := range mem {
		t.Logf("memory %s: %d MiB", n, b>>20)
		total += b
	}
	t.Logf("memory total: %d MiB", total>>20)
}

func hasImage(images []corev1.ContainerImage, ref string) bool {
	return slices.ContainsFunc(images, func(img corev1.ContainerImage) bool { return slices.Contains(img.Names, ref) })
}

// closeCluster closes the cluster and fails the test for anything left behind.
func closeCluster(t *testing.T, c *nodes.Cluster) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("closing the cluster: %v", err)
	}
	if left := c.Leftovers(); len(left) > 0 {
		t.Errorf("left behind after Close: %q", left)
	}
}

// cancelAt is a log sink that cancels a context when a message names the phase.
type cancelAt struct {
	phase  string
	cancel context.CancelFunc
}

func (s *cancelAt) Init(logr.RuntimeInfo)          {}
func (s *cancelAt) Enabled(int) bool               { return true }
func (s *cancelAt) Error(error, string, ...any)    {}
func (s *cancelAt) WithValues(...any) logr.LogSink { return s }
func (s *cancelAt) WithName(string) logr.LogSink   { return s }
func (s *cancelAt) Info(_ int, _ string, kv ...any) {
	for _, v := range kv {
		if v == s.phase {
			s.cancel()
		}
	}
}

// TestFailedBringUpLeavesNothing cancels the bring-up once containerd runs and its images
// are imported on every node, while the kubelets start: New fails, and what it had
// created (namespaces, processes, mounts, cgroups, sysctls) is gone.
func TestFailedBringUpLeavesNothing(t *testing.T) {
	requireNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := nodes.New(ctx, nodes.Options{Log: logr.New(&cancelAt{phase: "containerd and images imported", cancel: cancel})})
	if err == nil {
		closeCluster(t, c)
		t.Fatal("New succeeded although its context was cancelled during the bring-up")
	}
	t.Logf("New failed as it should: %v", err)
	if c == nil {
		t.Fatal("New returned no cluster to check")
	}
	if left := c.Leftovers(); len(left) > 0 {
		t.Errorf("left behind after a failed bring-up: %q", left)
	}
}
