// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubectl/pkg/util/podutils"
)

// WaitDaemonSetReady waits until the DaemonSet is rolled out with a Ready pod on every
// node of the cluster and no pod of it is being deleted. The DaemonSet's status counts a
// pod that is being deleted as Ready until it is gone, so the status alone ends the wait
// while a node's pod is being replaced; a pod that went away is logged with why.
func (c *Cluster) WaitDaemonSetReady(ctx context.Context, namespace, name string, timeout time.Duration) error {
	want := int32(len(c.nodes))
	var unsettled string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ds, err := c.client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		s := ds.Status
		if s.ObservedGeneration != ds.Generation || s.DesiredNumberScheduled != want ||
			s.NumberReady != want || s.UpdatedNumberScheduled != want || s.NumberAvailable != want {
			return false, nil
		}
		pods, err := c.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(ds.Spec.Selector)})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		was := unsettled
		unsettled = c.unsettledPods(ctx, pods.Items, int(want))
		if unsettled != "" && unsettled != was {
			c.log.Info("DaemonSet counted Ready with its pods unsettled", "daemonSet", namespace+"/"+name, "pods", unsettled)
		}
		return unsettled == "", nil
	})
	if err != nil {
		return fmt.Errorf("DaemonSet %s/%s not %d/%d Ready: %w %s", namespace, name, want, want, err, unsettled)
	}
	return nil
}

// unsettledPods describes the DaemonSet's pods unless each of want nodes runs one Ready
// pod that is not being deleted; it is empty when they do.
func (c *Cluster) unsettledPods(ctx context.Context, pods []corev1.Pod, want int) string {
	nodes := sets.New[string]()
	settled := true
	for i := range pods {
		p := &pods[i]
		nodes.Insert(p.Spec.NodeName)
		settled = settled && p.DeletionTimestamp == nil && podutils.IsPodReady(p)
	}
	if settled && nodes.Len() == want && len(pods) == want {
		return ""
	}
	return c.describePods(ctx, pods)
}

// describePods is each pod's node, phase, deletion and the Events about it: what says
// who removed a pod a scenario expected to find.
func (c *Cluster) describePods(ctx context.Context, pods []corev1.Pod) string {
	var b strings.Builder
	for i := range pods {
		p := &pods[i]
		fmt.Fprintf(&b, "\n  %s on %s: %s ready=%t", p.Name, p.Spec.NodeName, p.Status.Phase, podutils.IsPodReady(p))
		if p.DeletionTimestamp != nil {
			fmt.Fprintf(&b, " deleted at %s", p.DeletionTimestamp.UTC().Format(time.RFC3339))
		}
		if p.Status.Reason != "" || p.Status.Message != "" {
			fmt.Fprintf(&b, " (%s: %s)", p.Status.Reason, p.Status.Message)
		}
		events, err := c.client.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
		if err != nil {
			fmt.Fprintf(&b, "; events: %v", err)
			continue
		}
		for _, e := range events.Items {
			at, by := e.LastTimestamp.Time, e.Source.Component
			if at.IsZero() {
				at, by = e.EventTime.Time, e.ReportingController
			}
			fmt.Fprintf(&b, "; %s %s %s: %s", at.UTC().Format(time.TimeOnly), by, e.Reason, e.Message)
		}
	}
	return b.String()
}

// PodOn returns the one pod matching selector in namespace on the node, not counting pods
// being deleted; it fails if there is none or more than one, describing what it found.
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
		return nil, fmt.Errorf("%d pods %s on %s, want 1:%s", len(pods), selector, node, c.describePods(ctx, list.Items))
	}
	return &pods[0], nil
}
