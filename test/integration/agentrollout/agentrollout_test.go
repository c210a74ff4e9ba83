// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package agentrollout_test runs the agent rollout against a real kube-apiserver (envtest
// with the binaries from hack/build-kube-binaries.sh): the objects pass the apiserver's own
// validation and defaulting, RBAC is checked by the apiserver's authorizer, and deletion
// waits for real pods.
package agentrollout_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

const (
	image  = "registry.example/kube-vip-agent:v0.1.0"
	image2 = "registry.example/kube-vip-agent:v0.2.0"
	vip    = "198.18.0.100"
)

func newNamespace(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "agentrollout-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}

func getDaemonSet(ctx context.Context, t *testing.T, c client.Client, ns string) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: agentrollout.Name}, ds); err != nil {
		t.Fatalf("reading DaemonSet: %v", err)
	}
	return ds
}

func TestDeployCreatesObjectsTheAPIServerAccepts(t *testing.T) {
	ctx, c := setup(t)
	ns := "kube-system"
	d := agentrollout.New(c)

	spec := agentrollout.Spec{Namespace: ns, Image: image, VIP: vip, APIServerPort: 443}
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	t.Cleanup(func() { _, _ = d.Delete(context.Background(), ns) })

	wantLabels := map[string]string{
		"app.kubernetes.io/name":       "kube-vip-agent",
		"app.kubernetes.io/managed-by": "gardener-extension-kube-vip",
	}
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &appsv1.DaemonSet{}} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kube-vip-agent"}, obj); err != nil {
			t.Fatalf("reading %T: %v", obj, err)
		}
		for k, v := range wantLabels {
			if obj.GetLabels()[k] != v {
				t.Errorf("%T label %s=%q, want %q", obj, k, obj.GetLabels()[k], v)
			}
		}
		owned := slices.ContainsFunc(obj.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == "gardener-extension-kube-vip" && m.Operation == metav1.ManagedFieldsOperationApply
		})
		if !owned {
			t.Errorf("%T not applied by field manager gardener-extension-kube-vip: %+v", obj, obj.GetManagedFields())
		}
	}

	ds := getDaemonSet(ctx, t, c, ns)
	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork=%v dnsPolicy=%q", pod.HostNetwork, pod.DNSPolicy)
	}
	if pod.PriorityClassName != "system-node-critical" || pod.ServiceAccountName != "kube-vip-agent" {
		t.Errorf("priorityClass=%q serviceAccount=%q", pod.PriorityClassName, pod.ServiceAccountName)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds != 5 {
		t.Errorf("terminationGracePeriodSeconds=%v", pod.TerminationGracePeriodSeconds)
	}
	terms := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	// The control-plane nodes whose port carries the VIP pair (controller/exposure sets
	// agentrollout.PairLabel after the pair).
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 2 ||
		terms[0].MatchExpressions[0].Key != "node-role.kubernetes.io/control-plane" ||
		terms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpExists ||
		terms[0].MatchExpressions[1].Key != agentrollout.PairLabel ||
		terms[0].MatchExpressions[1].Operator != corev1.NodeSelectorOpIn ||
		!slices.Equal(terms[0].MatchExpressions[1].Values, []string{agentrollout.PairLabelValue(spec.VIP)}) {
		t.Errorf("node affinity = %+v", terms)
	}
	if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == "node-role.kubernetes.io/control-plane" && tol.Effect == corev1.TaintEffectNoSchedule && tol.Operator == corev1.TolerationOpExists
	}) {
		t.Errorf("no control-plane toleration: %+v", pod.Tolerations)
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxUnavailable.IntValue() != 1 {
		t.Errorf("update strategy = %+v", ds.Spec.UpdateStrategy)
	}

	if len(pod.Containers) != 1 {
		t.Fatalf("containers = %d", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	sc := ctr.SecurityContext
	if sc == nil || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) ||
		!ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) || ptr.Deref(sc.Privileged, true) {
		t.Errorf("security context = %+v", sc)
	}
	if ctr.Resources.Requests.Cpu().String() != "100m" || !ctr.Resources.Limits.Cpu().IsZero() || ctr.Resources.Requests.Memory().String() != "32Mi" || ctr.Resources.Limits.Memory().String() != "64Mi" {
		t.Errorf("resources = %+v", ctr.Resources)
	}
	for _, want := range []string{"--vip=" + vip, "--apiserver-url=https://127.0.0.1:443", "--metrics-address=[$(KUBE_VIP_HOST_IP)]:9482", "--lease-namespace=kube-system"} {
		if !slices.Contains(ctr.Args, want) {
			t.Errorf("args %q lack %q", ctr.Args, want)
		}
	}
	// The node name and address from the downward API, and a Go memory limit under the container's.
	if len(ctr.Env) != 3 || ctr.Env[0].Name != "KUBE_VIP_NODE_NAME" || ctr.Env[0].ValueFrom == nil || ctr.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" ||
		ctr.Env[1].Name != "KUBE_VIP_HOST_IP" || ctr.Env[1].ValueFrom == nil || ctr.Env[1].ValueFrom.FieldRef.FieldPath != "status.hostIP" ||
		ctr.Env[2].Name != "GOMEMLIMIT" || ctr.Env[2].Value != "48MiB" {
		t.Errorf("env = %+v", ctr.Env)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": ctr.LivenessProbe, "/readyz": ctr.ReadinessProbe} {
		// No host: the kubelet probes the pod's IP, the node's address the agent listens on.
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Host != "" || p.HTTPGet.Path != name || p.HTTPGet.Port.IntValue() != 9482 {
			t.Errorf("probe %s = %+v", name, p)
		}
	}
	// hostNetwork: the port is the node's; declared so the scheduler sees conflicts.
	if len(ctr.Ports) != 1 || ctr.Ports[0].HostPort != 9482 {
		t.Errorf("ports = %+v", ctr.Ports)
	}

	// The metrics Service: headless, over the agent pods' metrics port, not-ready ones too.
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: agentrollout.Name}, svc); err != nil {
		t.Fatalf("reading the metrics Service: %v", err)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses ||
		!maps.Equal(svc.Spec.Selector, ds.Spec.Selector.MatchLabels) || !maps.Equal(svc.Labels, agentrollout.Labels()) ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9482 || svc.Spec.Ports[0].TargetPort.String() != ctr.Ports[0].Name {
		t.Errorf("metrics Service = %+v, labels %v", svc.Spec, svc.Labels)
	}

	// A second Deploy with the same spec changes nothing.
	gen := ds.Generation
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("second Deploy: %v", err)
	}
	if got := getDaemonSet(ctx, t, c, ns).Generation; got != gen {
		t.Errorf("idempotent Deploy bumped generation %d -> %d", gen, got)
	}
}

func TestConfigChangeUpdatesDaemonSet(t *testing.T) {
	ctx, c := setup(t)
	ns := newNamespace(ctx, t, c)
	d := agentrollout.New(c)

	spec := agentrollout.Spec{
		Namespace: ns, Image: image, VIP: vip, APIServerPort: 6443,
		Agent: &v1alpha1.AgentConfig{
			LeaseDuration: &metav1.Duration{Duration: 3 * time.Second},
			HealthCheck:   &v1alpha1.HealthCheck{FailureThreshold: ptr.To[int32](4)},
		},
	}
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	before := getDaemonSet(ctx, t, c, ns)
	if args := before.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--lease-duration=3s") || !slices.Contains(args, "--health-failure-threshold=4") {
		t.Fatalf("args %q lack the configured timings", args)
	}

	// New image, changed timing, one timing dropped, interface added.
	spec.Image = image2
	spec.Agent = &v1alpha1.AgentConfig{
		Interface:     ptr.To("eth1"),
		LeaseDuration: &metav1.Duration{Duration: 2 * time.Second},
	}
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy with new config: %v", err)
	}
	after := getDaemonSet(ctx, t, c, ns)
	ctr := after.Spec.Template.Spec.Containers[0]
	if ctr.Image != image2 {
		t.Errorf("image = %q, want %q", ctr.Image, image2)
	}
	if !slices.Contains(ctr.Args, "--lease-duration=2s") || slices.Contains(ctr.Args, "--lease-duration=3s") {
		t.Errorf("lease duration not updated: %q", ctr.Args)
	}
	if slices.ContainsFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--health-failure-threshold") }) {
		t.Errorf("dropped timing still set: %q", ctr.Args)
	}
	if !slices.Contains(ctr.Args, "--interface=eth1") {
		t.Errorf("interface not set: %q", ctr.Args)
	}
	if after.Generation <= before.Generation {
		t.Errorf("generation %d -> %d, want a rollout", before.Generation, after.Generation)
	}

	// A foreign change to a field the extension owns is overwritten by the next Deploy.
	patch := client.MergeFrom(after.DeepCopy())
	after.Spec.Template.Spec.Containers[0].Image = "evil:latest"
	if err := c.Patch(ctx, after, patch, client.FieldOwner("someone-else")); err != nil {
		t.Fatalf("foreign patch: %v", err)
	}
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy after foreign change: %v", err)
	}
	if got := getDaemonSet(ctx, t, c, ns).Spec.Template.Spec.Containers[0].Image; got != image2 {
		t.Errorf("image = %q after re-Deploy, want %q", got, image2)
	}
}

func TestAgentRBAC(t *testing.T) {
	ctx, c := setup(t)
	ns := newNamespace(ctx, t, c)
	if err := agentrollout.New(c).Deploy(ctx, agentrollout.Spec{Namespace: ns, Image: image, VIP: vip}); err != nil {
		t.Fatalf("Deploy: %v", err)
	}

	sa := "system:serviceaccount:" + ns + ":kube-vip-agent"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	lease := func(verb, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: name}
	}
	// A list or watch by name carries the metadata.name field selector, which the
	// authorizer sees as the name.
	peerSlice := func(verb, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: "default", Verb: verb, Group: "discovery.k8s.io", Resource: "endpointslices", Name: name}
	}
	cases := []struct {
		attr    authorizationv1.ResourceAttributes
		allowed bool
	}{
		{lease("update", "kube-vip-agent"), true},
		{lease("get", "kube-vip-agent"), true},
		{lease("watch", "kube-vip-agent"), true},
		{lease("create", ""), false},
		{lease("update", "other-lease"), false},
		{lease("get", "other-lease"), false},
		{lease("delete", "kube-vip-agent"), false},
		{lease("patch", "kube-vip-agent"), false},
		{lease("list", ""), false},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: "cloudprovider"}, false},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Name: "node1"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "default", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "kube-vip-agent"}, false},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}, false},
		// The kube-apiservers' EndpointSlice, to find the other control-plane nodes'.
		{peerSlice("get", "kubernetes"), true},
		{peerSlice("list", "kubernetes"), true},
		{peerSlice("watch", "kubernetes"), true},
		{peerSlice("update", "kubernetes"), false},
		{peerSlice("get", "other-service"), false},
		{peerSlice("list", ""), false},
		{authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "endpoints", Name: "kubernetes"}, false},
	}
	for _, tc := range cases {
		attr := tc.attr
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa, Groups: groups, ResourceAttributes: &attr,
		}}
		if err := c.Create(ctx, sar); err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		if sar.Status.Allowed != tc.allowed {
			t.Errorf("%s %s/%s %q in %q: allowed=%v, want %v (%s)", attr.Verb, attr.Group, attr.Resource, attr.Name, attr.Namespace, sar.Status.Allowed, tc.allowed, sar.Status.Reason)
		}
	}
}

func TestDeleteWaitsForAgentPods(t *testing.T) {
	ctx, c := setup(t)
	ns := newNamespace(ctx, t, c)
	d := agentrollout.New(c)
	if err := d.Deploy(ctx, agentrollout.Spec{Namespace: ns, Image: image, VIP: vip}); err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	ds := getDaemonSet(ctx, t, c, ns)

	// envtest runs no DaemonSet controller: create the pod it would have created.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "kube-vip-agent-x1",
			Namespace: ns,
			Labels:    ds.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("creating agent pod: %v", err)
	}
	holdLease(ctx, t, c, ns, "kube-vip-agent", coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node1")})

	gone, err := d.Delete(ctx, ns)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if gone {
		t.Fatal("Delete reported gone while an agent pod exists")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ds), &appsv1.DaemonSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("DaemonSet still there after Delete: %v", err)
	}
	// RBAC and the Lease stay while a pod may still hold the VIP.
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &coordinationv1.Lease{}} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kube-vip-agent"}, obj); err != nil {
			t.Errorf("%T removed before the pods: %v", obj, err)
		}
	}
	if gone, err := d.Delete(ctx, ns); err != nil || gone {
		t.Fatalf("second Delete with pod left: gone=%v err=%v", gone, err)
	}

	// The pod has no node, so the apiserver removes it at once.
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatalf("deleting agent pod: %v", err)
	}
	gone, err = d.Delete(ctx, ns)
	if err != nil || !gone {
		t.Fatalf("Delete after the pod is gone: gone=%v err=%v", gone, err)
	}
	for _, obj := range []client.Object{&corev1.Service{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &coordinationv1.Lease{}} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kube-vip-agent"}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T not removed: %v", obj, err)
		}
	}
	for _, obj := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: agentrollout.PeerNamespace, Name: "kube-vip-agent"}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T in %s (the EndpointSlice's) not removed: %v", obj, agentrollout.PeerNamespace, err)
		}
	}
	// Deleting again is a no-op.
	if gone, err := d.Delete(ctx, ns); err != nil || !gone {
		t.Fatalf("repeated Delete: gone=%v err=%v", gone, err)
	}
}

func TestStatus(t *testing.T) {
	ctx, c := setup(t)
	ns := newNamespace(ctx, t, c)
	d := agentrollout.New(c)

	st, err := d.Status(ctx, ns)
	if err != nil {
		t.Fatalf("Status without objects: %v", err)
	}
	if *st != (v1alpha1.AgentStatus{}) {
		t.Errorf("Status without objects = %+v, want zero", st)
	}

	if err := d.Deploy(ctx, agentrollout.Spec{Namespace: ns, Image: image, VIP: vip}); err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	// Play the DaemonSet controller and an agent.
	ds := getDaemonSet(ctx, t, c, ns)
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, ObservedGeneration: ds.Generation}
	if err := c.Status().Update(ctx, ds); err != nil {
		t.Fatalf("updating DaemonSet status: %v", err)
	}
	holdLease(ctx, t, c, ns, "kube-vip-agent", coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node2"), LeaseDurationSeconds: ptr.To[int32](2)})

	st, err = d.Status(ctx, ns)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if want := (v1alpha1.AgentStatus{DesiredPods: 3, ReadyPods: 2, LeaseHolder: "node2"}); *st != want {
		t.Errorf("Status = %+v, want %+v", *st, want)
	}
}
