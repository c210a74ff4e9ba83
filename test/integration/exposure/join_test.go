// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/nodes"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestJoinOrder: a node's pair label, which both agent DaemonSets require, appears only
// after the node's Neutron port carries the VIP pair; the label goes with the pair when
// the node leaves the control plane, is never set on a control-plane node without a port,
// is set on a Node re-created with the same name only once its new port has the pair, and
// is removed from every Node with the exposure. The node tracker runs as in production.
func TestJoinOrder(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	identity := useIdentity(t, ctx, e)
	cps := createNodes(t, ctx, e, identity, 2)
	// A worker with a port, to join the control plane later.
	worker := nodeFixture{name: identity + "-worker"}
	p := createNodePort(t, ctx, e, ports.CreateOpts{NetworkID: e.os.NetworkID, Name: worker.name, DeviceOwner: "compute:nova", DeviceID: worker.name,
		FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID}}})
	worker.ip, worker.port = p.FixedIPs[0].IPAddress, p.ID
	createNodeWithLabels(t, ctx, e, worker, nil)

	cut := startController(t, e)
	tracker := newManager(t, e, e.cp.Config)
	if err := nodes.AddToManager(ctx, tracker, nodes.AddOptions{Syncer: cut.actuator}); err != nil {
		t.Fatal(err)
	}
	framework.StartManager(t, tracker)
	cs := kubernetes.NewForConfigOrDie(e.cp.Config)

	exp := newExposure(exposureOptions{name: identity, nodes: cps})
	create(t, ctx, e, exp, identity)
	got := waitFor(t, ctx, e, exp, "ingress", succeeded)
	status, err := exposure.DecodeStatus(got)
	if err != nil {
		t.Fatal(err)
	}
	vip := status.VIPAddress
	value := agentrollout.PairLabelValue(vip)
	for _, n := range cps {
		if v := nodeLabel(t, ctx, e, n.name); v != value {
			t.Errorf("control-plane node %s: pair label %q, want %q", n.name, v, value)
		}
	}
	if v := nodeLabel(t, ctx, e, worker.name); v != "" {
		t.Errorf("worker %s carries the pair label %q", worker.name, v)
	}

	t.Run("the agent DaemonSet requires the pair label", func(t *testing.T) {
		ds := &appsv1.DaemonSet{}
		if err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: agentrollout.Name}, ds); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, term := range ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchExpressions {
				keys = append(keys, r.Key)
				if r.Key == agentrollout.PairLabel && (r.Operator != corev1.NodeSelectorOpIn || !slices.Equal(r.Values, []string{value})) {
					t.Errorf("pair label requirement %+v, want In [%s]", r, value)
				}
			}
		}
		if !slices.Contains(keys, agentrollout.PairLabel) || !slices.Contains(keys, v1beta1constants.LabelNodeRoleControlPlane) {
			t.Errorf("node affinity requires %v, want the control-plane and the pair label", keys)
		}
	})

	t.Run("a joining node gets the label only after its port has the pair", func(t *testing.T) {
		seen := watchPairLabel(t, ctx, e, cs, worker, vip)
		setControlPlane(t, ctx, e, worker.name, true)
		<-seen
	})

	t.Run("a control-plane node without a port gets no label, and the others keep theirs", func(t *testing.T) {
		orphan := nodeFixture{name: identity + "-noport", ip: "198.18.0.97"}
		createNode(t, ctx, e, orphan)
		// The node tracker retries the missing port from 200 ms on; two seconds cover
		// several attempts.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if v := nodeLabel(t, ctx, e, orphan.name); v != "" {
				t.Fatalf("node %s without a Neutron port got the pair label %q", orphan.name, v)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, n := range append(cps, worker) {
			if v := nodeLabel(t, ctx, e, n.name); v != value {
				t.Errorf("node %s lost its pair label (%q) while another node's port is missing", n.name, v)
			}
		}
		if err := e.cp.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: orphan.name}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a node leaving the control plane loses the pair, then the label", func(t *testing.T) {
		setControlPlane(t, ctx, e, worker.name, false)
		waitNodeLabel(t, ctx, e, worker.name, "")
		checkPairs(t, ctx, e, []nodeFixture{worker}, vip, false)
	})

	outer := t // the re-created Node and its port live until the test's end
	t.Run("a node re-created with the same name gets the label only with its new port's pair", func(t *testing.T) {
		old := cps[1]
		if err := e.cp.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: old.name}}); err != nil {
			t.Fatal(err)
		}
		waitNodeGone(t, ctx, e, old.name)
		p := createNodePort(outer, ctx, e, ports.CreateOpts{NetworkID: e.os.NetworkID, Name: old.name + "-new", DeviceOwner: "compute:nova", DeviceID: old.name,
			FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID}}})
		renewed := nodeFixture{name: old.name, ip: p.FixedIPs[0].IPAddress, port: p.ID}
		seen := watchPairLabel(t, ctx, e, cs, renewed, vip)
		createNode(outer, ctx, e, renewed)
		<-seen
		cps[1] = renewed
	})

	t.Run("upgrade: the nodes are labelled before the DaemonSet requires the label", func(t *testing.T) {
		// The state an older extension left: no pair labels, a DaemonSet that requires only
		// the control-plane label, and an inputs hash of that version (recently verified).
		for _, n := range cps {
			removeLabel(t, ctx, e, n.name)
		}
		dropPairRequirement(t, ctx, cs)
		setInputsHash(t, ctx, e, exp, "hash-of-an-older-version")
		labelledFirst := watchDaemonSetRequirement(t, ctx, e, cs, cps)
		triggerReconcile(t, ctx, e, exp, nil)()
		if !<-labelledFirst {
			t.Errorf("the DaemonSet required the pair label before every control-plane node carried it: running agents would be evicted")
		}
	})

	t.Run("delete removes every pair label", func(t *testing.T) {
		if err := e.cp.Client.Delete(ctx, exp); err != nil {
			t.Fatal(err)
		}
		if err := waitGone(ctx, e, exp); err != nil {
			t.Fatal(err)
		}
		for _, n := range append(cps, worker) {
			if v := nodeLabel(t, ctx, e, n.name); v != "" {
				t.Errorf("node %s keeps the pair label %q after the exposure's deletion", n.name, v)
			}
		}
		checkPairs(t, ctx, e, cps, vip, false)
	})
}

// watchPairLabel watches the Node n.name (also across a re-creation) and, the moment the
// pair label for vip first appears, reads n's port: the test fails unless the port had
// the VIP pair then, or when the label does not appear within a minute. The channel is
// closed when the check is done.
func watchPairLabel(t *testing.T, ctx context.Context, e *sharedEnv, cs kubernetes.Interface, n nodeFixture, vip string) <-chan struct{} {
	t.Helper()
	selector := fields.OneTermEqualSelector("metadata.name", n.name).String()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	value := agentrollout.PairLabelValue(vip)
	for _, node := range list.Items {
		if node.Labels[agentrollout.PairLabel] == value {
			t.Fatalf("node %s carries the pair label before the test", n.name)
		}
	}
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	go func() {
		defer close(seen)
		defer w.Stop()
		timeout := time.After(time.Minute)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Errorf("watch on node %s ended", n.name)
					return
				}
				node, isNode := ev.Object.(*corev1.Node)
				if !isNode || ev.Type == watch.Deleted || node.Labels[agentrollout.PairLabel] != value {
					continue
				}
				p, err := e.neutron.GetPort(ctx, n.port)
				if err != nil {
					t.Errorf("reading port %s: %v", n.port, err)
					return
				}
				if !openstack.HasPair(p, vip) {
					t.Errorf("node %s got the pair label while its port %s had no VIP pair", n.name, n.port)
				}
				return
			case <-timeout:
				t.Errorf("node %s never got the pair label", n.name)
				return
			}
		}
	}()
	return seen
}

func nodeLabel(t *testing.T, ctx context.Context, e *sharedEnv, name string) string {
	t.Helper()
	node := &corev1.Node{}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatalf("reading Node %s: %v", name, err)
	}
	return node.Labels[agentrollout.PairLabel]
}

func waitNodeLabel(t *testing.T, ctx context.Context, e *sharedEnv, name, want string) {
	t.Helper()
	for nodeLabel(t, ctx, e, name) != want {
		select {
		case <-ctx.Done():
			t.Fatalf("node %s: pair label %q, want %q", name, nodeLabel(t, ctx, e, name), want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func waitNodeGone(t *testing.T, ctx context.Context, e *sharedEnv, name string) {
	t.Helper()
	for {
		err := e.cp.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		if err != nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Node %s not deleted", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// setControlPlane adds or removes the control-plane label of the Node.
func setControlPlane(t *testing.T, ctx context.Context, e *sharedEnv, name string, on bool) {
	t.Helper()
	patchNode(t, ctx, e, name, func(node *corev1.Node) {
		if on {
			metav1.SetMetaDataLabel(&node.ObjectMeta, exposure.LabelControlPlane, "")
		} else {
			delete(node.Labels, exposure.LabelControlPlane)
		}
	})
}

func removeLabel(t *testing.T, ctx context.Context, e *sharedEnv, name string) {
	t.Helper()
	patchNode(t, ctx, e, name, func(node *corev1.Node) { delete(node.Labels, agentrollout.PairLabel) })
}

// patchNode changes the Node named name with change, in a merge patch.
func patchNode(t *testing.T, ctx context.Context, e *sharedEnv, name string, change func(*corev1.Node)) {
	t.Helper()
	node := &corev1.Node{}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	change(node)
	if err := e.cp.Client.Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
}

// dropPairRequirement makes the agent DaemonSet's node affinity what it was before the
// pair label: the control-plane label only.
func dropPairRequirement(t *testing.T, ctx context.Context, cs kubernetes.Interface) {
	t.Helper()
	ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, agentrollout.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	terms := ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = slices.DeleteFunc(terms[i].MatchExpressions, func(r corev1.NodeSelectorRequirement) bool { return r.Key == agentrollout.PairLabel })
	}
	if _, err := cs.AppsV1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setInputsHash(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, hash string) {
	t.Helper()
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		t.Fatal(err)
	}
	var status map[string]any
	if err := json.Unmarshal(current.Status.ProviderStatus.Raw, &status); err != nil {
		t.Fatal(err)
	}
	status["inputsHash"] = hash
	raw, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(current.DeepCopy())
	current.Status.ProviderStatus = &runtime.RawExtension{Raw: raw}
	if err := e.cp.Client.Status().Patch(ctx, current, patch); err != nil {
		t.Fatal(err)
	}
}

// watchDaemonSetRequirement watches the agent DaemonSet and, the moment its node affinity
// first requires the pair label, lists the Nodes: the channel tells whether every node of
// cps carried the label then.
func watchDaemonSetRequirement(t *testing.T, ctx context.Context, e *sharedEnv, cs kubernetes.Interface, cps []nodeFixture) <-chan bool {
	t.Helper()
	w, err := cs.AppsV1().DaemonSets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", agentrollout.Name).String()})
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan bool, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			ds, ok := ev.Object.(*appsv1.DaemonSet)
			if !ok || !requiresPairLabel(ds) {
				continue
			}
			list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Errorf("listing Nodes: %v", err)
				result <- false
				return
			}
			labelled := map[string]bool{}
			for _, n := range list.Items {
				labelled[n.Name] = n.Labels[agentrollout.PairLabel] != ""
			}
			all := true
			for _, n := range cps {
				all = all && labelled[n.name]
			}
			result <- all
			return
		}
		t.Errorf("the DaemonSet watch ended before the DaemonSet required the pair label")
		result <- false
	}()
	return result
}

func requiresPairLabel(ds *appsv1.DaemonSet) bool {
	a := ds.Spec.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchExpressions {
			if r.Key == agentrollout.PairLabel {
				return true
			}
		}
	}
	return false
}
