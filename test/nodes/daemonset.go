// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitDaemonSetReady waits until the DaemonSet is rolled out with a Ready pod on every
// node of the cluster.
func (c *Cluster) WaitDaemonSetReady(ctx context.Context, namespace, name string, timeout time.Duration) error {
	want := int32(len(c.nodes))
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ds, err := c.client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		s := ds.Status
		return s.ObservedGeneration == ds.Generation && s.DesiredNumberScheduled == want &&
			s.NumberReady == want && s.UpdatedNumberScheduled == want && s.NumberAvailable == want, nil
	})
	if err != nil {
		return fmt.Errorf("DaemonSet %s/%s not %d/%d Ready: %w", namespace, name, want, want, err)
	}
	return nil
}

// PodOn returns the one pod matching selector in namespace on the node, not counting pods
// being deleted; it fails if there is none or more than one.
func (c *Cluster) PodOn(ctx context.Context, namespace, selector, node string) (*corev1.Pod, error) {
	list, err := c.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector, FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, fmt.Errorf("listing pods %s on %s: %w", selector, node, err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	if len(pods) != 1 {
		return nil, fmt.Errorf("%d pods %s on %s, want 1", len(pods), selector, node)
	}
	return &pods[0], nil
}
