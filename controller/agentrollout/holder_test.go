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
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
)

func TestHolderReadyNeedsACurrentLeaseAndAReadyPodOnTheHolder(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(renewed time.Duration, durationMS string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: "kube-system", Labels: kubeVIPAgentNames().labels(), Annotations: map[string]string{election.LeaseDurationAnnotation: durationMS}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To("cp-0"), LeaseDurationSeconds: ptr.To[int32](2),
				AcquireTime: &metav1.MicroTime{Time: now.Add(-time.Minute)},
				RenewTime:   &metav1.MicroTime{Time: now.Add(-renewed)},
			},
		}
	}
	pod := func(node string, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "agent-" + node, Namespace: "kube-system", Labels: kubeVIPAgentNames().labels()},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
	}
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
		pods  []*corev1.Pod
		ready bool
	}{
		{"current Lease, ready pod on the holder", lease(time.Second, "1500"), []*corev1.Pod{pod("cp-0", corev1.ConditionTrue)}, true},
		{"expired by the exact annotation, although within leaseDurationSeconds", lease(1600*time.Millisecond, "1500"), []*corev1.Pod{pod("cp-0", corev1.ConditionTrue)}, false},
		{"holder's pod not ready", lease(time.Second, "1500"), []*corev1.Pod{pod("cp-0", corev1.ConditionFalse), pod("cp-1", corev1.ConditionTrue)}, false},
		{"no pod on the holder", lease(time.Second, "1500"), []*corev1.Pod{pod("cp-1", corev1.ConditionTrue)}, false},
	} {
		b := fake.NewClientBuilder().WithObjects(tc.lease)
		for _, p := range tc.pods {
			b = b.WithObjects(p)
		}
		d := New(b.Build()).WithClock(clocktesting.NewFakePassiveClock(now))
		status, err := d.Status(context.Background(), "kube-system")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if status.LeaseHolder != "cp-0" || status.HolderSince == nil || !status.HolderSince.Time.Equal(now.Add(-time.Minute)) {
			t.Errorf("%s: holder %q since %v, want cp-0 since %s", tc.name, status.LeaseHolder, status.HolderSince, now.Add(-time.Minute))
		}
		if status.HolderReady != tc.ready {
			t.Errorf("%s: HolderReady %v, want %v", tc.name, status.HolderReady, tc.ready)
		}
	}
}
