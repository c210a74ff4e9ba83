// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout_test

import (
	"context"
	"errors"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// holdLease writes spec into the existing Lease name, as an agent does with an update.
func holdLease(ctx context.Context, t *testing.T, c client.Client, ns, name string, spec coordinationv1.LeaseSpec) {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lease); err != nil {
		t.Fatalf("reading Lease %s (Deploy creates it): %v", name, err)
	}
	lease.Spec = spec
	if err := c.Update(ctx, lease); err != nil {
		t.Fatalf("updating Lease %s: %v", name, err)
	}
}

// asServiceAccount is a clientset that impersonates the ServiceAccount sa of ns, with the
// groups a token of it carries.
func asServiceAccount(t *testing.T, ns, sa string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(shared.Get(t).Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestAgentLeaseOwnedByController shows, for both implementations, that Deploy creates the
// agents' Lease and their ServiceAccount may read and update it but create no Lease, that
// a redeploy leaves the agents' record alone, and that a Lease deleted out of band is
// reported by Status, which writes nothing, and comes back with the next Deploy.
func TestAgentLeaseOwnedByController(t *testing.T) {
	ctx, c := setup(t)
	for _, tc := range []struct {
		impl        v1alpha1.AgentImplementation
		sa, lease   string
		image       string
		otherLeases []string
	}{
		{v1alpha1.AgentImplementationKubeVIPAgent, agentrollout.Name, agentrollout.LeaseName, image, []string{agentrollout.KubeVIPLeaseName}},
		{v1alpha1.AgentImplementationKubeVIP, agentrollout.KubeVIPName, agentrollout.KubeVIPLeaseName, "registry.example/kube-vip:v1.0.0", []string{agentrollout.LeaseName}},
	} {
		t.Run(string(tc.impl), func(t *testing.T) {
			ns := newNamespace(ctx, t, c)
			d := agentrollout.New(c)
			spec := agentrollout.Spec{Namespace: ns, Implementation: tc.impl, Image: tc.image, VIP: vip}
			if err := d.Deploy(ctx, spec); err != nil {
				t.Fatalf("Deploy: %v", err)
			}
			lease := &coordinationv1.Lease{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.lease}, lease); err != nil {
				t.Fatalf("Deploy created no Lease %s: %v", tc.lease, err)
			}
			for k, v := range agentLabels(tc.sa) {
				if lease.Labels[k] != v {
					t.Errorf("Lease label %s=%q, want %q", k, lease.Labels[k], v)
				}
			}
			if lease.Spec.HolderIdentity != nil {
				t.Errorf("a new Lease names holder %q", *lease.Spec.HolderIdentity)
			}

			agent := asServiceAccount(t, ns, tc.sa).CoordinationV1().Leases(ns)
			for _, name := range append([]string{"another-lease", tc.lease}, tc.otherLeases...) {
				_, err := agent.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				if !apierrors.IsForbidden(err) {
					t.Errorf("the %s ServiceAccount creating Lease %s: err=%v, want Forbidden", tc.sa, name, err)
				}
			}
			own, err := agent.Get(ctx, tc.lease, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the %s ServiceAccount reading its Lease: %v", tc.sa, err)
			}
			own.Spec.HolderIdentity = ptr.To("node1")
			own.Spec.LeaseDurationSeconds = ptr.To[int32](3)
			if _, err := agent.Update(ctx, own, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("the %s ServiceAccount updating its Lease: %v", tc.sa, err)
			}

			// A redeploy keeps the agents' record, and the ServiceAccount keeps its access.
			if err := d.Deploy(ctx, spec); err != nil {
				t.Fatalf("second Deploy: %v", err)
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.lease}, lease); err != nil {
				t.Fatal(err)
			}
			if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "node1" || ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) != 3 {
				t.Errorf("after a redeploy the Lease names %q for %v s, want node1 for 3 s", h, lease.Spec.LeaseDurationSeconds)
			}

			// Deleted out of band: Status reports it and writes nothing; the next Deploy (the
			// reconciliation the agent refresh then starts) creates it again, unheld.
			if err := c.Delete(ctx, lease); err != nil {
				t.Fatal(err)
			}
			if _, err := agent.Get(ctx, tc.lease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("reading the deleted Lease: %v, want NotFound", err)
			}
			if _, err := d.Status(ctx, ns); !errors.Is(err, agentrollout.ErrLeaseMissing) {
				t.Fatalf("Status with the Lease deleted: %v, want ErrLeaseMissing", err)
			}
			if _, err := agent.Get(ctx, tc.lease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("Status wrote the deleted Lease: %v, want NotFound", err)
			}
			if err := d.Deploy(ctx, spec); err != nil {
				t.Fatalf("Deploy after the Lease was deleted: %v", err)
			}
			back, err := agent.Get(ctx, tc.lease, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("Deploy did not create the deleted Lease again: %v", err)
			}
			if back.UID == lease.UID || back.Spec.HolderIdentity != nil || back.Labels[agentrollout.LabelManagedBy] != agentrollout.ManagedByValue {
				t.Errorf("re-created Lease: uid %s (was %s), holder %v, labels %v", back.UID, lease.UID, back.Spec.HolderIdentity, back.Labels)
			}
			back.Spec.HolderIdentity = ptr.To("node2")
			if _, err := agent.Update(ctx, back, metav1.UpdateOptions{}); err != nil {
				t.Errorf("the %s ServiceAccount updating the re-created Lease: %v", tc.sa, err)
			}

			// Delete removes it with the rest (no agent pod exists).
			if gone, err := d.Delete(ctx, ns); err != nil || !gone {
				t.Fatalf("Delete: gone=%v err=%v", gone, err)
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.lease}, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
				t.Errorf("Lease %s left after Delete: %v", tc.lease, err)
			}
			// Without a DaemonSet, Status creates nothing.
			if _, err := d.Status(ctx, ns); err != nil {
				t.Fatalf("Status after Delete: %v", err)
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.lease}, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
				t.Errorf("Status created Lease %s without an agent DaemonSet: %v", tc.lease, err)
			}
		})
	}
}

func agentLabels(name string) map[string]string {
	return map[string]string{
		agentrollout.LabelAppName:   name,
		agentrollout.LabelManagedBy: agentrollout.ManagedByValue,
	}
}
