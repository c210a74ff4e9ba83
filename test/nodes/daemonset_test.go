// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestWaitDaemonSetReadyWaitsOutADeletedPod: the DaemonSet's status still counts a pod
// being deleted as Ready; the wait goes on until its node runs a replacement, and says
// which pod it waited for.
func TestWaitDaemonSetReadyWaitsOutADeletedPod(t *testing.T) {
	ctx := context.Background()
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent", Generation: 1},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 2, NumberReady: 2,
			UpdatedNumberScheduled: 2, NumberAvailable: 2},
	}
	pod := func(name, node string, deleted bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: labels},
			Spec:       corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		if deleted {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			p.Finalizers = []string{"test"} // the fake deletes an object without one at once
		}
		return p
	}
	client := fake.NewClientset(ds, pod("agent-a", "node1", true), pod("agent-b", "node2", false))
	c := &Cluster{client: client, log: testr.New(t), nodes: []*Node{{}, {}}}

	err := c.WaitDaemonSetReady(ctx, "kube-system", "agent", time.Second)
	if err == nil || !strings.Contains(err.Error(), "agent-a on node1: Running ready=true deleted at") {
		t.Fatalf("with node1's pod being deleted: %v, want a timeout naming agent-a as deleted", err)
	}

	if err := client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "kube-system", "agent-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("kube-system").Create(ctx, pod("agent-c", "node1", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitDaemonSetReady(ctx, "kube-system", "agent", time.Second); err != nil {
		t.Fatalf("with node1's pod replaced: %v", err)
	}
}
