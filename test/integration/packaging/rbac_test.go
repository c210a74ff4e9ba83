// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardener/gardener/pkg/chartrenderer"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// access is one SubjectAccessReview: a verb on a resource (namespace "" is cluster-wide or
// all namespaces, name "" is any object).
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	s := a.verb + " " + a.resource
	if a.subresource != "" {
		s += "/" + a.subresource
	}
	if a.group != "" {
		s += "." + a.group
	}
	ns := a.namespace
	if ns == "" {
		ns = "*"
	}
	name := a.name
	if name == "" {
		name = "*"
	}
	return s + " " + ns + "/" + name
}

const kubeSystem = metav1.NamespaceSystem

// mustAllow is what the controller does (controller/exposure, controller/nodes,
// controller/agentrollout and gardener's framework).
var mustAllow = []access{
	{verb: "get", resource: "secrets", namespace: kubeSystem, name: "cloudprovider"},
	{verb: "list", resource: "pods", namespace: kubeSystem},
	{verb: "list", group: "extensions.gardener.cloud", resource: "selfhostedshootexposures", namespace: kubeSystem},
	{verb: "watch", group: "extensions.gardener.cloud", resource: "selfhostedshootexposures", namespace: kubeSystem},
	{verb: "patch", group: "extensions.gardener.cloud", resource: "selfhostedshootexposures", subresource: "status", namespace: kubeSystem, name: "e"},
	{verb: "list", group: "extensions.gardener.cloud", resource: "infrastructures", namespace: kubeSystem},
	{verb: "list", group: "extensions.gardener.cloud", resource: "clusters"},
	{verb: "watch", resource: "nodes"},
	// The UID of the exposures' Namespace (networking.Mark.Namespace).
	{verb: "get", resource: "namespaces", name: kubeSystem},
	// The pair label (agentrollout.PairLabel); RBAC cannot narrow a patch to one label.
	{verb: "patch", resource: "nodes", name: "n"},
	{verb: "create", resource: "events", namespace: kubeSystem},
	{verb: "get", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.Name},
	{verb: "patch", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.Name},
	{verb: "delete", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.Name},
	{verb: "patch", resource: "serviceaccounts", namespace: kubeSystem, name: agentrollout.Name},
	{verb: "patch", group: "rbac.authorization.k8s.io", resource: "roles", namespace: kubeSystem, name: agentrollout.Name},
	{verb: "patch", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: kubeSystem, name: agentrollout.Name},
	{verb: "patch", resource: "services", namespace: kubeSystem, name: agentrollout.Name},
	{verb: "delete", resource: "services", namespace: kubeSystem, name: agentrollout.Name},
	{verb: "patch", group: "monitoring.coreos.com", resource: "servicemonitors", namespace: kubeSystem, name: agentrollout.MonitoringName()},
	{verb: "delete", group: "monitoring.coreos.com", resource: "servicemonitors", namespace: kubeSystem, name: agentrollout.MonitoringName()},
	{verb: "patch", group: "monitoring.coreos.com", resource: "prometheusrules", namespace: kubeSystem, name: agentrollout.MonitoringName()},
	{verb: "delete", group: "monitoring.coreos.com", resource: "prometheusrules", namespace: kubeSystem, name: agentrollout.MonitoringName()},
	{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: agentrollout.LeaseName},
	{verb: "watch", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: agentrollout.LeaseName},
	{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: agentrollout.LeaseName},
	{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: releaseNamespace, name: "gardener-extension-heartbeat"},
	// Upstream kube-vip's objects (agent.implementation kube-vip).
	{verb: "patch", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.KubeVIPName},
	{verb: "delete", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.KubeVIPName},
	{verb: "patch", resource: "serviceaccounts", namespace: kubeSystem, name: agentrollout.KubeVIPName},
	{verb: "patch", group: "rbac.authorization.k8s.io", resource: "roles", namespace: kubeSystem, name: agentrollout.KubeVIPName},
	{verb: "patch", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: kubeSystem, name: agentrollout.KubeVIPName},
	{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: agentrollout.KubeVIPLeaseName},
	// Its objects under the names of earlier releases: read and removed when labelled ours.
	{verb: "get", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPName},
	{verb: "delete", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPName},
	{verb: "delete", resource: "serviceaccounts", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPName},
	{verb: "delete", group: "rbac.authorization.k8s.io", resource: "roles", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPName},
	{verb: "delete", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPName},
	{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPLeaseName},
	// The agent's Role and RoleBinding for the kube-apiservers' EndpointSlice, and what
	// they grant (escalation rule).
	{verb: "patch", group: "rbac.authorization.k8s.io", resource: "roles", namespace: agentrollout.PeerNamespace, name: agentrollout.Name},
	{verb: "delete", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: agentrollout.PeerNamespace, name: agentrollout.Name},
	{verb: "watch", group: "discovery.k8s.io", resource: "endpointslices", namespace: agentrollout.PeerNamespace, name: "kubernetes"},
}

// rbacCannotDeny is what the controller needs and RBAC cannot narrow: a create carries no
// name, so the grant for the agent's first server-side apply covers any name
// (docs/operations.md, "What RBAC cannot restrict"). Asserted, so that the docs stay true.
var rbacCannotDeny = []access{
	{verb: "create", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: "any-daemonset"},
	{verb: "create", resource: "serviceaccounts", namespace: kubeSystem, name: "any-serviceaccount"},
	{verb: "create", resource: "services", namespace: kubeSystem, name: "any-service"},
	{verb: "create", group: "monitoring.coreos.com", resource: "servicemonitors", namespace: kubeSystem, name: "any-servicemonitor"},
	{verb: "create", group: "monitoring.coreos.com", resource: "prometheusrules", namespace: kubeSystem, name: "any-prometheusrule"},
	{verb: "create", group: "rbac.authorization.k8s.io", resource: "roles", namespace: kubeSystem, name: "any-role"},
	{verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: kubeSystem, name: "any-rolebinding"},
	{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: "any-lease"},
}

// mustDeny is what a compromised controller must not be able to do.
var mustDeny = []access{
	// Namespaces beyond reading kube-system's.
	{verb: "list", resource: "namespaces"},
	{verb: "get", resource: "namespaces", name: metav1.NamespaceDefault},
	{verb: "update", resource: "namespaces", name: kubeSystem},
	// Any other Secret: the CA and service-account keys of a self-hosted shoot live there.
	{verb: "get", resource: "secrets", namespace: kubeSystem, name: "ca"},
	{verb: "get", resource: "secrets", namespace: kubeSystem, name: "service-account-key"},
	{verb: "get", resource: "secrets", namespace: kubeSystem, name: "etcd-ca"},
	{verb: "list", resource: "secrets", namespace: kubeSystem},
	{verb: "watch", resource: "secrets", namespace: kubeSystem},
	{verb: "list", resource: "secrets"},
	{verb: "get", resource: "secrets", namespace: metav1.NamespaceDefault, name: "cloudprovider"},
	{verb: "get", resource: "secrets", namespace: releaseNamespace, name: "cloudprovider"},
	{verb: "create", resource: "secrets", namespace: kubeSystem},
	{verb: "update", resource: "secrets", namespace: kubeSystem, name: "cloudprovider"},
	// Pods across namespaces, and anything beyond listing them in kube-system.
	{verb: "list", resource: "pods"},
	{verb: "list", resource: "pods", namespace: metav1.NamespaceDefault},
	{verb: "list", resource: "pods", namespace: releaseNamespace},
	{verb: "get", resource: "pods", namespace: kubeSystem, name: "kube-apiserver"},
	{verb: "watch", resource: "pods", namespace: kubeSystem},
	{verb: "create", resource: "pods", namespace: kubeSystem},
	{verb: "delete", resource: "pods", namespace: kubeSystem, name: "kube-apiserver"},
	{verb: "create", resource: "pods", subresource: "exec", namespace: kubeSystem, name: "kube-apiserver"},
	// Arbitrary DaemonSets, as far as RBAC can deny them: reading, changing and deleting
	// any but the agent's, listing them, and creating them anywhere but kube-system.
	{verb: "get", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: "kube-proxy"},
	{verb: "patch", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: "kube-proxy"},
	{verb: "update", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: "kube-proxy"},
	{verb: "delete", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: "kube-proxy"},
	{verb: "list", group: "apps", resource: "daemonsets", namespace: kubeSystem},
	{verb: "watch", group: "apps", resource: "daemonsets", namespace: kubeSystem},
	{verb: "create", group: "apps", resource: "daemonsets", namespace: metav1.NamespaceDefault},
	{verb: "create", group: "apps", resource: "daemonsets"},
	{verb: "create", group: "apps", resource: "deployments", namespace: kubeSystem},
	// Other objects of kube-system it could take over.
	{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: kubeSystem, name: "kube-proxy"},
	{verb: "patch", resource: "serviceaccounts", namespace: kubeSystem, name: "kube-proxy"},
	// Other Services (kube-dns, the kubernetes Service of default).
	{verb: "patch", resource: "services", namespace: kubeSystem, name: "kube-dns"},
	{verb: "delete", resource: "services", namespace: kubeSystem, name: "kube-dns"},
	{verb: "list", resource: "services", namespace: kubeSystem},
	{verb: "patch", resource: "services", namespace: kubeSystem, name: agentrollout.KubeVIPName},
	{verb: "patch", group: "monitoring.coreos.com", resource: "prometheusrules", namespace: kubeSystem, name: "shoot-kube-apiserver"},
	{verb: "list", group: "monitoring.coreos.com", resource: "servicemonitors", namespace: kubeSystem},
	{verb: "patch", group: "rbac.authorization.k8s.io", resource: "roles", namespace: kubeSystem, name: "extension-apiserver-authentication-reader"},
	{verb: "bind", group: "rbac.authorization.k8s.io", resource: "roles", namespace: kubeSystem, name: "any-role"},
	{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "roles", namespace: kubeSystem, name: "any-role"},
	{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
	{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: "kube-controller-manager"},
	{verb: "list", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem},
	{verb: "get", group: "apps", resource: "daemonsets", namespace: metav1.NamespaceDefault, name: agentrollout.Name},
	// A user's kube-vip (its Helm chart's names) is never changed, even where it may be
	// deleted when labelled ours (the controller checks the label).
	{verb: "patch", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPName},
	{verb: "update", resource: "serviceaccounts", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPName},
	{verb: "patch", group: "rbac.authorization.k8s.io", resource: "roles", namespace: kubeSystem, name: agentrollout.LegacyKubeVIPName},
	{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: "plndr-svcs-lock"},
	{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: "plndr-svcs-lock"},
	// In default: only the agent's Role and RoleBinding, and only the kube-apiservers'
	// EndpointSlice; no Service at all (externalIPs Services).
	{verb: "create", resource: "services", namespace: metav1.NamespaceDefault, name: "any-service"},
	{verb: "patch", resource: "services", namespace: metav1.NamespaceDefault, name: agentrollout.Name},
	{verb: "delete", resource: "services", namespace: metav1.NamespaceDefault, name: agentrollout.Name},
	{verb: "patch", group: "rbac.authorization.k8s.io", resource: "roles", namespace: metav1.NamespaceDefault, name: "any-role"},
	{verb: "get", group: "discovery.k8s.io", resource: "endpointslices", namespace: metav1.NamespaceDefault, name: "any-service"},
	{verb: "list", group: "discovery.k8s.io", resource: "endpointslices", namespace: metav1.NamespaceDefault},
	// Cluster-scoped objects beyond reading Clusters, and reading and patching Nodes.
	{verb: "update", resource: "nodes", name: "n"},
	{verb: "update", resource: "nodes", subresource: "status", name: "n"},
	{verb: "patch", resource: "nodes", subresource: "status", name: "n"},
	{verb: "delete", resource: "nodes", name: "n"},
	{verb: "patch", group: "extensions.gardener.cloud", resource: "clusters", name: "c"},
	{verb: "delete", group: "extensions.gardener.cloud", resource: "selfhostedshootexposures", namespace: kubeSystem, name: "e"},
}

// TestRBACSubjectAccessReviews installs the chart's RBAC into a real kube-apiserver and asks
// it, through SubjectAccessReviews for the controller's ServiceAccount, what the controller
// may and may not do.
func TestRBACSubjectAccessReviews(t *testing.T) {
	root := repoRoot(t)
	cp := framework.StartControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clientset, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := chartrenderer.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}); err != nil {
		t.Fatal(err)
	}
	chartDir := filepath.Join(root, gen.ChartDir)
	// install applies the chart's RBAC as released into namespace.
	install := func(t *testing.T, namespace string, values map[string]any) {
		t.Helper()
		archive, err := gen.PackageChart(chartDir)
		if err != nil {
			t.Fatal(err)
		}
		chart, err := renderer.RenderArchive(archive, releaseName, namespace, values)
		if err != nil {
			t.Fatalf("rendering: %v", err)
		}
		for _, obj := range toObjects(t, chart).objects {
			switch obj.GetKind() {
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			default:
				continue
			}
			_ = cp.Client.Delete(ctx, obj.DeepCopy())
			if err := cp.Client.Create(ctx, obj); err != nil {
				t.Fatalf("installing %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
	reviews := 0
	// reviewAs asks whether the controller's ServiceAccount, released into namespace, may do a.
	reviewAs := func(t *testing.T, namespace string, a access) bool {
		t.Helper()
		reviews++
		sar, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   "system:serviceaccount:" + namespace + ":" + controllerName,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
					Namespace: a.namespace, Name: a.name,
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview %s: %v", a, err)
		}
		return sar.Status.Allowed
	}
	review := func(t *testing.T, a access) bool { t.Helper(); return reviewAs(t, releaseNamespace, a) }
	expect := func(t *testing.T, want bool, list []access) {
		t.Helper()
		for _, a := range list {
			if got := review(t, a); got != want {
				t.Errorf("%s: allowed = %v, want %v", a, got, want)
			}
		}
	}

	install(t, releaseNamespace, map[string]any{})
	t.Run("allows what the controller does", func(t *testing.T) { expect(t, true, mustAllow) })
	t.Run("allows create by any name, which RBAC cannot narrow", func(t *testing.T) { expect(t, true, rbacCannotDeny) })
	t.Run("denies everything else", func(t *testing.T) { expect(t, false, mustDeny) })
	t.Run("no list or watch on the agent's objects", func(t *testing.T) {
		// The review's unused verbs (M3): every read of the agent's objects is a get by name.
		for _, r := range []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}},
		} {
			for _, res := range r.Resources {
				for _, verb := range []string{"list", "watch"} {
					a := access{verb: verb, group: r.APIGroups[0], resource: res, namespace: kubeSystem}
					if review(t, a) {
						t.Errorf("%s: allowed, want denied", a)
					}
				}
			}
		}
	})
	t.Run("credentials.secretNames replaces the readable Secrets", func(t *testing.T) {
		install(t, releaseNamespace, map[string]any{"credentials": map[string]any{"secretNames": []any{"openstack-a", "openstack-b"}}})
		expect(t, true, []access{
			{verb: "get", resource: "secrets", namespace: kubeSystem, name: "openstack-a"},
			{verb: "get", resource: "secrets", namespace: kubeSystem, name: "openstack-b"},
		})
		expect(t, false, []access{
			{verb: "get", resource: "secrets", namespace: kubeSystem, name: "cloudprovider"},
			{verb: "list", resource: "secrets", namespace: kubeSystem},
		})
	})
	t.Run("released into the served namespace, leader election is still allowed", func(t *testing.T) {
		// One Role there, not two of the same name (the second replaced the first, and the
		// controller could not read its leader-election Lease).
		install(t, kubeSystem, map[string]any{})
		for _, a := range []access{
			{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: "kube-vip-leader-election"},
			{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem},
			{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: kubeSystem, name: "gardener-extension-heartbeat"},
			{verb: "patch", group: "apps", resource: "daemonsets", namespace: kubeSystem, name: agentrollout.Name},
			{verb: "get", resource: "secrets", namespace: kubeSystem, name: "cloudprovider"},
		} {
			if !reviewAs(t, kubeSystem, a) {
				t.Errorf("%s: denied, want allowed", a)
			}
		}
	})
	t.Logf("%d SubjectAccessReviews", reviews)
}
