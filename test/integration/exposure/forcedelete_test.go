// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// forceDelete deletes the exposure with confirmation.gardener.cloud/force-deletion=true on
// the Cluster's shoot, as an operator force-deletes a Shoot: gardener's reconciler then calls
// the actuator's ForceDelete instead of Delete. The exposure must be gone within a minute;
// the tests leave an agent pod running or the credentials gone, which Delete would wait out
// or fail on.
func forceDelete(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) {
	t.Helper()
	if err := framework.SetShootAnnotation(ctx, e.cp.Client, v1beta1constants.AnnotationConfirmationForceDeletion, "true"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := framework.SetShootAnnotation(context.Background(), e.cp.Client, v1beta1constants.AnnotationConfirmationForceDeletion, ""); err != nil {
			t.Error(err)
		}
	})
	if err := e.cp.Client.Delete(ctx, exp); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := waitGone(gone, e, exp); err != nil {
		last := &extensionsv1alpha1.SelfHostedShootExposure{}
		_ = e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), last)
		t.Fatalf("force deletion: %v; last status: %s", err, describe(last))
	}
}

// runningAgentPod stands for the agent pod the DaemonSet runs on node (no kubelet here, so
// the pod stays until deleted): it carries the pod template's labels. The cleanup removes it
// at once, as the kubelet would after the agent exited: a terminating pod that no kubelet
// confirms makes the final deletion wait out the time rule for a minute.
func runningAgentPod(t *testing.T, ctx context.Context, e *sharedEnv, node string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: agentrollout.Name + "-" + node, Namespace: ns, Labels: agentrollout.Labels()},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: agentrollout.Name, Image: "example.org/kube-vip-agent:test"}}},
	}
	if err := e.cp.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
}

// agentObjects are every object the agent rollout of kube-vip-agent creates (the cluster
// has no prometheus-operator CRDs, so no monitoring objects).
func agentObjects() []client.Object {
	in := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name}
	}
	return []client.Object{
		&appsv1.DaemonSet{ObjectMeta: in(ns, agentrollout.Name)},
		&corev1.ServiceAccount{ObjectMeta: in(ns, agentrollout.Name)},
		&rbacv1.Role{ObjectMeta: in(ns, agentrollout.Name)},
		&rbacv1.RoleBinding{ObjectMeta: in(ns, agentrollout.Name)},
		&coordinationv1.Lease{ObjectMeta: in(ns, agentrollout.LeaseName)},
		&corev1.Service{ObjectMeta: in(ns, agentrollout.Name)},
		&rbacv1.Role{ObjectMeta: in(agentrollout.PeerNamespace, agentrollout.Name)},
		&rbacv1.RoleBinding{ObjectMeta: in(agentrollout.PeerNamespace, agentrollout.Name)},
	}
}

// checkAgentGone fails for every object of agentObjects that is left.
func checkAgentGone(t *testing.T, ctx context.Context, e *sharedEnv, what string) {
	t.Helper()
	for _, o := range agentObjects() {
		if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the agent's %T %s/%s is left (get: %v)", what, o, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// forceDeleteCase is a Succeeded exposure of a new identity on one node, its controller and
// its front door.
type forceDeleteCase struct {
	ctl   *controllerUnderTest
	id    string
	nodes []nodeFixture
	exp   *extensionsv1alpha1.SelfHostedShootExposure
	door  frontDoorOf
}

// newForceDeleteCase creates it; a credentials Secret of its own when ownSecret.
func newForceDeleteCase(t *testing.T, ctx context.Context, e *sharedEnv, ownSecret bool) forceDeleteCase {
	t.Helper()
	c := forceDeleteCase{id: useIdentity(t, ctx, e)}
	c.nodes = createNodes(t, ctx, e, c.id, 1)
	c.ctl = startController(t, e)
	opts := exposureOptions{name: c.id, nodes: c.nodes}
	if ownSecret {
		opts.secretName = passwordSecret(t, ctx, e, c.id, e.os.Password)
	}
	c.exp = newExposure(opts)
	create(t, ctx, e, c.exp, c.id)
	c.door = readFrontDoor(t, ctx, e, waitFor(t, ctx, e, c.exp, "success", succeeded))
	return c
}

// TestForceDeleteRemovesEverything: a force deletion while an agent pod still runs removes
// every object of the agent rollout at once (the pods go with their DaemonSet) and the
// front door in Neutron.
func TestForceDeleteRemovesEverything(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newForceDeleteCase(t, ctx, e, false)
	for _, o := range agentObjects() {
		if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("before the force deletion, the agent's %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
	runningAgentPod(t, ctx, e, c.nodes[0].name)

	forceDelete(t, ctx, e, c.exp)
	checkAgentGone(t, ctx, e, "after ForceDelete")
	if left := taggedPorts(t, ctx, e, c.id); len(left) > 0 {
		t.Errorf("after ForceDelete Neutron has %d VIP ports of %s", len(left), c.id)
	}
	if _, err := e.neutron.GetFloatingIP(ctx, c.door.fipID); err == nil {
		t.Errorf("after ForceDelete the floating IP %s exists", c.door.fip)
	}
}

// TestForceDeleteOfARefusedDuplicateSparesTheOwner: force-deleting a second exposure of the
// cluster, refused because the first owns the front door, leaves the first's agent (same
// DaemonSet, same UID) and front door alone.
func TestForceDeleteOfARefusedDuplicateSparesTheOwner(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newForceDeleteCase(t, ctx, e, false)
	ds := &appsv1.DaemonSet{}
	if err := e.cp.Client.Get(ctx, clientKey(agentrollout.Name), ds); err != nil {
		t.Fatal(err)
	}
	second, _ := secondExposure(t, ctx, e, c.id, c.nodes)

	forceDelete(t, ctx, e, second)
	got := &appsv1.DaemonSet{}
	if err := e.cp.Client.Get(ctx, clientKey(agentrollout.Name), got); err != nil || got.UID != ds.UID || got.DeletionTimestamp != nil {
		t.Errorf("the owner's agent DaemonSet after force-deleting the refused exposure: %v (uid %s, was %s; deleting %v)", err, got.UID, ds.UID, got.DeletionTimestamp)
	}
	checkFrontDoorIntact(t, ctx, e, c.door, "after force-deleting the refused exposure")
}

// TestForceDeleteWithoutCredentials: with the credentials Secret gone, the force deletion
// still ends and removes the agent; the OpenStack resources it cannot reach stay, and are
// removed by hand as docs/operations.md ("Manual clean-up") says.
func TestForceDeleteWithoutCredentials(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newForceDeleteCase(t, ctx, e, true)
	runningAgentPod(t, ctx, e, c.nodes[0].name)

	secret := &corev1.Secret{}
	if err := e.cp.Client.Get(ctx, clientKey(c.exp.Spec.CredentialsRef.Name), secret); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.Client.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	forceDelete(t, ctx, e, c.exp)
	checkAgentGone(t, ctx, e, "after ForceDelete without credentials")
	checkFrontDoorIntact(t, ctx, e, c.door, "after ForceDelete without credentials (nothing can reach it)")

	forceCleanup(ctx, e, c.id)
	if left := taggedPorts(t, ctx, e, c.id); len(left) > 0 {
		t.Errorf("after the manual clean-up Neutron has %d VIP ports of %s", len(left), c.id)
	}
	if _, err := e.neutron.GetFloatingIP(ctx, c.door.fipID); err == nil {
		t.Errorf("after the manual clean-up the floating IP %s exists", c.door.fip)
	}
}
