// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package dataplane_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// TestRouterNodeJoin: a node joins the control plane while the controller is stopped: no
// agent pod starts there (its port has no VIP pair yet, so its agent could win the Lease
// and black-hole the front door). Once the controller runs, the port gets the pair, then
// the node the pair label, then the agent its pod. Once the L2 agent lets the pair through
// the port and the other agents' pods are deleted, the joined node's agent becomes the
// holder, and the external client reaches the kube-apiserver through the floating IP on
// it. (The file sorts after nic_test.go, whose test plugs its own namespaces into the node
// ports and must run before the package's cluster exists.)
func TestRouterNodeJoin(t *testing.T) {
	f, ctx := scenario(t)
	holder, st := f.deployed(t, ctx)
	begin := time.Now()
	defer func() { t.Logf("the join scenario took %s", time.Since(begin).Round(time.Second)) }()
	var joiner *netns.Node
	for _, n := range f.cluster.Net().Nodes() {
		if n != holder {
			joiner = n
			break
		}
	}
	cs := f.cluster.Client()
	agentSelector := agentrollout.LabelAppName + "=" + agentrollout.Name
	agentPods := func() int {
		list, err := cs.CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: agentSelector, FieldSelector: "spec.nodeName=" + joiner.Name()})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	pairLabel := func() string {
		node, err := cs.CoreV1().Nodes().Get(ctx, joiner.Name(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return node.Labels[agentrollout.PairLabel]
	}
	hasPair := func() bool { return openstack.HasPair(f.portOf(t, ctx, joiner), st.vip) }

	// The joiner leaves the control plane: its agent goes, then its pair, then the label.
	setControlPlane(t, ctx, f, joiner.Name(), false)
	t.Cleanup(func() { setControlPlane(t, context.Background(), f, joiner.Name(), true) })
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return agentPods() == 0 && !hasPair() && pairLabel() == "", nil
	}); err != nil {
		t.Fatalf("%s left the control plane but keeps its agent (%d pods), pair (%v) or label (%q): %v", joiner, agentPods(), hasPair(), pairLabel(), err)
	}
	// The L2 agent removes the pair from the port's ARP chain seconds later on a busy
	// machine; the wait for its return below must not pass on the old rules.
	port := f.portOf(t, ctx, joiner).ID
	if _, err := f.dp.WaitARP(ctx, port, st.vip, false); err != nil {
		t.Fatal(err)
	}

	// It joins while the controller is stopped: nothing may run there.
	f.stopController()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := f.startController(); err != nil {
				t.Errorf("restarting the controller: %v", err)
			}
		}
	})
	setControlPlane(t, ctx, f, joiner.Name(), true)
	for range 20 {
		if n := agentPods(); n != 0 {
			t.Fatalf("%s joined the control plane without the VIP pair on its port, and %d agent pods were created there", joiner, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if hasPair() || pairLabel() != "" {
		t.Fatalf("with the controller stopped, %s got the pair (%v) or the label (%q)", joiner, hasPair(), pairLabel())
	}

	// The controller runs again: the pair, then the label, then the pod.
	start := time.Now()
	if err := f.startController(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	var pairAt, labelAt, podAt time.Duration
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		// Read in the reverse order of the guarantee: a label or pod seen before a read
		// that still finds no pair (or label) breaks it.
		pod := agentPods() > 0
		label := pairLabel() != ""
		pair := hasPair()
		now := time.Since(start)
		switch {
		case pod && !label:
			return false, fmt.Errorf("an agent pod on %s before its pair label", joiner)
		case label && !pair:
			return false, fmt.Errorf("the pair label on %s before its port has the VIP pair", joiner)
		}
		for _, seen := range []struct {
			now bool
			at  *time.Duration
		}{{pair, &pairAt}, {label, &labelAt}, {pod, &podAt}} {
			if seen.now && *seen.at == 0 {
				*seen.at = now
			}
		}
		return pod, nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("after the controller's start: the pair at %s, the label at %s, the agent pod at %s", pairAt.Round(time.Millisecond), labelAt.Round(time.Millisecond), podAt.Round(time.Millisecond))
	if err := waitPodReady(ctx, f.cluster, joiner.Name()); err != nil {
		t.Fatal(err)
	}
	// Neutron has the pair, but the L2 agent may not have let it through the port yet: a
	// holder there would be dark until it does, and the checks below would measure that lag
	// rather than the join.
	waited, err := f.dp.WaitARP(ctx, port, st.vip, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the L2 agent let the pair through %s's port %s after the pod was Ready", joiner, waited.Round(time.Millisecond))

	// The joined node's agent takes the VIP: the other agents' pods go at once.
	for _, n := range f.cluster.Net().Nodes() {
		if n == joiner {
			continue
		}
		pod := f.leaderPod(t, ctx, n.Name())
		if err := cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.cluster.Net().WaitSingleHolder(ctx, func(n *netns.Node) bool { return n == joiner }); err != nil {
		t.Fatalf("%s did not become the holder: %v", joiner, err)
	}
	if err := f.waitReachable(ctx, st.fip, true, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := f.httpsReadyz(ctx, hostPort(st.fip), st.vip); err != nil {
		t.Errorf("https://%s/readyz from the external client, %s holding the VIP: %v", hostPort(st.fip), joiner, err)
	}
	// A later pass of the L2 agent over the port flushes its ARP chain before it adds the
	// rules again, a short silence: should it move the VIP, the router must follow it.
	f.checkRouterFollowsHolder(t, ctx, joiner, "after the join checks", st.vip)
	f.waitReady(t, ctx)
}

// setControlPlane adds or removes the control-plane label of the Node.
func setControlPlane(t *testing.T, ctx context.Context, f *frontDoor, name string, on bool) {
	t.Helper()
	value := `""`
	if !on {
		value = "null"
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, nodes.ControlPlaneRole, value)
	if _, err := f.cluster.Client().CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("setting the control-plane label of %s to %v: %v", name, on, err)
	}
}

// waitPodReady waits until the agent pod on node is Ready.
func waitPodReady(ctx context.Context, c *nodes.Cluster, node string) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err := c.PodOn(ctx, framework.Namespace, agentrollout.LabelAppName+"="+agentrollout.Name, node)
		if err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		return podutils.IsPodReady(pod), nil
	})
}
