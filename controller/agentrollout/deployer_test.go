// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
)

func TestPodCannotHoldVIP(t *testing.T) {
	deleted := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(args ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: deleted}, DeletionGracePeriodSeconds: ptr.To[int64](5)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: Name, Args: args}}},
		}
	}
	exited := func(code int32) *corev1.Pod {
		p := pod()
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: Name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}
		return p
	}
	restarting := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: Name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}}}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		after time.Duration
		want  bool
	}{
		{"running pod", &corev1.Pod{}, time.Hour, false},
		// A container restarted by its kubelet: only a terminating pod's exit counts.
		{"running pod with an exited container", restarting, time.Hour, false},
		{"terminating, exited with 0", exited(0), 0, true},
		{"terminating, killed at the end of its grace period", exited(137), 6800 * time.Millisecond, false},
		{"terminating, no container status yet", pod(), time.Second, false},
		{"within grace and VIP lifetime", pod(), 6800 * time.Millisecond, false},
		{"after grace and default VIP lifetime", pod(), 7100 * time.Millisecond, true},
		{"longer configured lease", pod("--lease-duration=30s"), 20 * time.Second, false},
		{"after longer configured lease", pod("--lease-duration=30s"), 36 * time.Second, true},
		{"longer VIP lifetime", pod("--vip-lifetime=10s"), 12 * time.Second, false},
	} {
		if got := podCannotHoldVIP(tc.pod, deleted.Add(tc.after)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDeleteStuckPod: a pod stuck in Terminating (unreachable node) blocks the deletion
// only until it cannot hold the VIP any more.
func TestDeleteStuckPod(t *testing.T) {
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	stuck := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-vip-agent-abcde", Namespace: "kube-system", Labels: kubeVIPAgentNames().labels(),
			// The API server keeps the pod until its kubelet confirms; the fake client needs a
			// finalizer to hold an object with a deletionTimestamp.
			Finalizers:                 []string{"example.org/unreachable-node"},
			DeletionTimestamp:          &metav1.Time{Time: now},
			DeletionGracePeriodSeconds: ptr.To[int64](5),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: Name, Image: "agent"}}},
	}
	c := fake.NewClientBuilder().WithObjects(stuck).Build()
	clock := clocktesting.NewFakeClock(now.Add(time.Second))
	d := New(c).WithClock(clock)

	gone, err := d.Delete(ctx, "kube-system")
	if err != nil || gone {
		t.Fatalf("Delete right after the pod's deletion = %v, %v; want not gone", gone, err)
	}
	clock.SetTime(now.Add(8 * time.Second))
	gone, err = d.Delete(ctx, "kube-system")
	if err != nil || !gone {
		t.Fatalf("Delete after grace period and VIP lifetime = %v, %v; want gone", gone, err)
	}
}

// TestDeployCreatesAFreeLease: kube-vip-agent's Lease, created where no agent pod exists, is
// a release record, which the first agent takes at once; created under running agents (it
// was deleted out of band) or found, it is no release.
func TestDeployCreatesAFreeLease(t *testing.T) {
	ctx := context.Background()
	const ns = "kube-system"
	spec := Spec{Namespace: ns, Image: "agent", VIP: "198.18.0.50"}
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: ns, Labels: kubeVIPAgentNames().labels()},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node1")},
	}
	for _, tc := range []struct {
		name     string
		existing []client.Object
		want     string
	}{
		{"no agent pod, no Lease", nil, FieldOwner},
		{"Lease deleted under a running agent", []client.Object{agentPod(ns)}, ""},
		{"Lease held", []client.Object{held}, ""},
	} {
		c := fake.NewClientBuilder().WithObjects(tc.existing...).Build()
		if err := New(c).Deploy(ctx, spec); err != nil {
			t.Fatalf("%s: Deploy: %v", tc.name, err)
		}
		lease := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: LeaseName}, lease); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := lease.Annotations[election.ReleasedByAnnotation]; got != tc.want {
			t.Errorf("%s: the Lease's %s is %q, want %q", tc.name, election.ReleasedByAnnotation, got, tc.want)
		}
		if !Owned(lease) {
			t.Errorf("%s: the Lease has no label %s", tc.name, LabelManagedBy)
		}
	}
}
