// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// usersKubeVIP is a user's own upstream kube-vip in kube-system as its Helm chart renders
// it (framework.UsersKubeVIP). Besides it a Role and RoleBinding named kube-vip (a tighter
// RBAC a user may write instead), the Leases kube-vip's services mode elects with
// (plndr-svcs-lock) and one of the name earlier releases of the extension used
// (kube-vip-cp), and one running pod of the DaemonSet on a control-plane node (no kubelet
// here: the pod object stands for it).
func usersKubeVIP(node string) []client.Object {
	objs := framework.UsersKubeVIP("ghcr.io/kube-vip/kube-vip:v1.0.0")
	ds := objs[len(objs)-1].(*appsv1.DaemonSet)
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	pod := &corev1.Pod{ObjectMeta: meta("kube-vip-x7k2p", ds.Spec.Template.Labels), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = node
	return append(objs,
		&rbacv1.Role{ObjectMeta: meta(framework.UsersKubeVIPName, ds.Labels), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update", "create"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: meta(framework.UsersKubeVIPName, ds.Labels),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: framework.UsersKubeVIPName},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: framework.UsersKubeVIPName, Namespace: ns}}},
		&coordinationv1.Lease{ObjectMeta: meta("plndr-svcs-lock", nil), Spec: coordinationv1.LeaseSpec{HolderIdentity: &node}},
		&coordinationv1.Lease{ObjectMeta: meta(agentrollout.LegacyKubeVIPLeaseName, nil), Spec: coordinationv1.LeaseSpec{HolderIdentity: &node}},
		pod,
	)
}

// installed are objects as the kube-apiserver returned them on creation.
type installed []client.Object

func install(t *testing.T, ctx context.Context, c client.Client, objs []client.Object) installed {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating the user's %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
	return objs
}

// check fails unless every object still exists with its UID, labels and spec (rules,
// subjects) as installed.
func (objs installed) check(t *testing.T, ctx context.Context, c client.Client, step string) {
	t.Helper()
	for _, want := range objs {
		got := want.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			t.Errorf("%s: the user's %T %s: %v", step, want, want.GetName(), err)
			continue
		}
		if got.GetUID() != want.GetUID() || !equality.Semantic.DeepEqual(got.GetLabels(), want.GetLabels()) || got.GetDeletionTimestamp() != nil {
			t.Errorf("%s: the user's %T %s was replaced or changed: uid %s (was %s), labels %v, deleting %v", step, want, want.GetName(), got.GetUID(), want.GetUID(), got.GetLabels(), got.GetDeletionTimestamp())
			continue
		}
		if diff := specDiff(want, got); diff != "" {
			t.Errorf("%s: the user's %T %s changed: %s", step, want, want.GetName(), diff)
		}
	}
}

func specDiff(want, got client.Object) string {
	var w, g any
	switch x := want.(type) {
	case *appsv1.DaemonSet:
		w, g = x.Spec, got.(*appsv1.DaemonSet).Spec
	case *corev1.Pod:
		w, g = x.Spec, got.(*corev1.Pod).Spec
	case *rbacv1.Role:
		w, g = x.Rules, got.(*rbacv1.Role).Rules
	case *rbacv1.ClusterRole:
		w, g = x.Rules, got.(*rbacv1.ClusterRole).Rules
	case *rbacv1.RoleBinding:
		w, g = x.Subjects, got.(*rbacv1.RoleBinding).Subjects
	case *rbacv1.ClusterRoleBinding:
		w, g = x.Subjects, got.(*rbacv1.ClusterRoleBinding).Subjects
	case *coordinationv1.Lease:
		w, g = x.Spec, got.(*coordinationv1.Lease).Spec
	default:
		return ""
	}
	if equality.Semantic.DeepEqual(w, g) {
		return ""
	}
	return fmt.Sprintf("%+v, was %+v", g, w)
}

// TestUsersKubeVIPSurvives: a user's own kube-vip from its Helm chart in kube-system
// survives the exposure's first reconcile, a switch to upstream kube-vip and back, and the
// deletion, each with the same UID and spec; the exposure goes Succeeded each time, and
// upstream kube-vip of the extension runs under its own names beside the user's.
func TestUsersKubeVIPSurvives(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)
	users := install(t, ctx, e.cp.Client, usersKubeVIP(nodes[0].name))
	startController(t, e)

	exp := newExposure(exposureOptions{name: id, nodes: nodes})
	create(t, ctx, e, exp, id)
	waitFor(t, ctx, e, exp, "success beside the user's kube-vip", succeeded)
	users.check(t, ctx, e.cp.Client, "after the first reconcile")

	kubeVIP := fmt.Sprintf(`{%s,"agent":{"implementation":"kube-vip","image":"example.org/kube-vip:v1.0.0"}}`, exposureConfigHead)
	triggerReconcile(t, ctx, e, exp, func(x *extensionsv1alpha1.SelfHostedShootExposure) { x.Spec.ProviderConfig = rawConfig(kubeVIP) })()
	users.check(t, ctx, e.cp.Client, "after the switch to kube-vip")
	ds := &appsv1.DaemonSet{}
	if err := e.cp.Client.Get(ctx, clientKey(agentrollout.KubeVIPName), ds); err != nil || !agentrollout.Owned(ds) {
		t.Errorf("the extension's kube-vip DaemonSet %s: %v, labels %v", agentrollout.KubeVIPName, err, ds.Labels)
	}

	triggerReconcile(t, ctx, e, exp, func(x *extensionsv1alpha1.SelfHostedShootExposure) { x.Spec.ProviderConfig = nil })()
	users.check(t, ctx, e.cp.Client, "after the switch back to kube-vip-agent")

	deleteAndWait(t, ctx, e, exp)
	users.check(t, ctx, e.cp.Client, "after the deletion")
}
