// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// usersKubeVIP are the objects of a user's own kube-vip, named and labelled as its Helm
// chart renders them (release kube-vip, services mode), plus a Lease of the name earlier
// releases of the extension used, which a user may pick too.
func usersKubeVIP(ns string) []client.Object {
	selector := map[string]string{LabelAppName: "kube-vip", "app.kubernetes.io/instance": "kube-vip"}
	helm := map[string]string{LabelAppName: "kube-vip", "app.kubernetes.io/instance": "kube-vip", LabelManagedBy: "Helm"}
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	return []client.Object{
		&appsv1.DaemonSet{ObjectMeta: meta("kube-vip", nil), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector}, Spec: corev1.PodSpec{
				ServiceAccountName: "kube-vip", HostNetwork: true,
				Containers: []corev1.Container{{Name: "kube-vip", Image: "ghcr.io/kube-vip/kube-vip:v1.0.0", Args: []string{"manager"}}},
			}},
		}},
		&corev1.ServiceAccount{ObjectMeta: meta("kube-vip", helm)},
		&rbacv1.Role{ObjectMeta: meta("kube-vip", helm)},
		&rbacv1.RoleBinding{ObjectMeta: meta("kube-vip", helm), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "kube-vip"}},
		&coordinationv1.Lease{ObjectMeta: meta("plndr-svcs-lock", nil)},
		&coordinationv1.Lease{ObjectMeta: meta(LegacyKubeVIPLeaseName, nil)},
		&corev1.Pod{ObjectMeta: meta("kube-vip-x7k2p", selector), Spec: corev1.PodSpec{NodeName: "n1",
			Containers: []corev1.Container{{Name: "kube-vip", Image: "ghcr.io/kube-vip/kube-vip:v1.0.0"}}}},
	}
}

// TestUsersKubeVIPUntouched: a user's own kube-vip in the namespace survives every step of
// the rollout (both implementations, the switch, Status, Delete and ForceDelete) with the
// same resourceVersion, and holds up none of them.
func TestUsersKubeVIPUntouched(t *testing.T) {
	ctx := context.Background()
	ns := "kube-system"
	users := usersKubeVIP(ns)
	c := fake.NewClientBuilder().WithObjects(users...).Build()
	d := New(c)
	versions := map[client.Object]string{}
	for _, o := range users {
		versions[o] = o.GetResourceVersion()
	}
	untouched := func(step string) {
		t.Helper()
		for o, rv := range versions {
			got := o.DeepCopyObject().(client.Object)
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
				t.Fatalf("%s: the user's %T %s: %v", step, o, o.GetName(), err)
			}
			if got.GetResourceVersion() != rv {
				t.Errorf("%s: the user's %T %s was changed (resourceVersion %s, was %s)", step, o, o.GetName(), got.GetResourceVersion(), rv)
			}
		}
	}
	spec := Spec{Namespace: ns, Image: "agent", VIP: "198.18.0.50"}
	kubeVIP := spec
	kubeVIP.Implementation, kubeVIP.Image = v1alpha1.AgentImplementationKubeVIP, "kube-vip:v1.0.0"
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"deploy kube-vip-agent", func() error { return d.Deploy(ctx, spec) }},
		{"status of kube-vip-agent", func() error { _, err := d.Status(ctx, ns); return err }},
		{"switch to kube-vip", func() error { return d.Deploy(ctx, kubeVIP) }},
		{"status of kube-vip", func() error { _, err := d.Status(ctx, ns); return err }},
		{"switch back", func() error { return d.Deploy(ctx, spec) }},
		{"delete", func() error {
			if gone, err := d.Delete(ctx, ns); err != nil || !gone {
				t.Fatalf("Delete = %v, %v; want gone: the user's pods are no agent's", gone, err)
			}
			return nil
		}},
		{"deploy kube-vip again", func() error { return d.Deploy(ctx, kubeVIP) }},
		{"force delete", func() error { return d.ForceDelete(ctx, ns) }},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		untouched(step.name)
	}
	for _, name := range []string{Name, KubeVIPName} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
			t.Errorf("the agent's ServiceAccount %s after ForceDelete: %v, want not found", name, err)
		}
	}
}

// TestPreviousReleasesKubeVIPRemoved: upstream kube-vip under the names of an earlier release
// and with the extension's label is handed over to the current agent and removed; the same
// names without the label would be a user's (TestUsersKubeVIPUntouched).
func TestPreviousReleasesKubeVIPRemoved(t *testing.T) {
	ctx := context.Background()
	ns := "kube-system"
	old := legacyKubeVIPNames()
	labels := old.labels()
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	pod := &corev1.Pod{ObjectMeta: meta("kube-vip-abcde"), Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: KubeVIPContainerName, Image: "kube-vip"}}}}
	c := fake.NewClientBuilder().WithObjects(
		&appsv1.DaemonSet{ObjectMeta: meta(old.name)},
		&corev1.ServiceAccount{ObjectMeta: meta(old.name)},
		&rbacv1.Role{ObjectMeta: meta(old.name)},
		&rbacv1.RoleBinding{ObjectMeta: meta(old.name), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: old.name}},
		&coordinationv1.Lease{ObjectMeta: meta(old.lease)},
		pod,
	).Build()
	d := New(c).WithHandoverWait(HandoverTick)
	kubeVIP := Spec{Namespace: ns, Implementation: v1alpha1.AgentImplementationKubeVIP, Image: "kube-vip:v1.0.0", VIP: "198.18.0.50"}

	if err := d.Deploy(ctx, kubeVIP); err == nil {
		t.Fatal("Deploy while the earlier release's kube-vip pod runs: no error, want a wait for the handover")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: old.name}, &appsv1.DaemonSet{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the earlier release's DaemonSet: %v, want deleted", err)
	}
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := d.Deploy(ctx, kubeVIP); err != nil {
		t.Fatalf("Deploy once its pods are gone: %v", err)
	}
	for _, o := range []client.Object{&corev1.ServiceAccount{ObjectMeta: meta(old.name)}, &rbacv1.Role{ObjectMeta: meta(old.name)}, &coordinationv1.Lease{ObjectMeta: meta(old.lease)}} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("the earlier release's %T %s: %v, want deleted", o, o.GetName(), err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: KubeVIPName}, &appsv1.DaemonSet{}); err != nil {
		t.Errorf("the kube-vip DaemonSet %s: %v", KubeVIPName, err)
	}
}

// TestDeployRefusesAnObjectNotOurs: an object of the agent's name without the extension's
// label is not taken over.
func TestDeployRefusesAnObjectNotOurs(t *testing.T) {
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: KubeVIPName, Namespace: "kube-system"}}
	c := fake.NewClientBuilder().WithObjects(sa).Build()
	err := New(c).Deploy(ctx, Spec{Namespace: "kube-system", Implementation: v1alpha1.AgentImplementationKubeVIP, Image: "kube-vip", VIP: "198.18.0.50"})
	if !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Deploy = %v, want %v", err, ErrNotOurs)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(sa), sa); err != nil || len(sa.Labels) != 0 {
		t.Errorf("the ServiceAccount after Deploy: %v, labels %v; want it as it was", err, sa.Labels)
	}
}
