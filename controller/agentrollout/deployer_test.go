// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestPodCannotHoldVIP(t *testing.T) {
	deleted := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(args ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: deleted}, DeletionGracePeriodSeconds: ptr.To[int64](5)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: Name, Args: args}}},
		}
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		after time.Duration
		want  bool
	}{
		{"running pod", &corev1.Pod{}, time.Hour, false},
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
