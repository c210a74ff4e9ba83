// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
)

// Steps of an agent pod, as its watch shows them.
const (
	stepCreated  = "created"
	stepRunning  = "running"
	stepReady    = "ready"
	stepDeleting = "deleting"
	// stepExited0: every container exited with code 0; the controller counts such a
	// terminating pod as unable to hold the VIP.
	stepExited0 = "exited 0"
	stepStopped = "stopped"
	stepRemoved = "removed"
)

// podStep is one step of one agent pod, at a time relative to the timeline's start.
type podStep struct {
	at              time.Duration
	app, pod, node  string
	step, exitCodes string
}

// podTimeline records, from a watch, when the agent pods (either implementation) were
// created, started, became ready, were marked for deletion, had every container stopped
// and were removed: a switch's outage is mostly the kubelets' work, which the test
// measures, around the controller's and the agent's, which it bounds.
type podTimeline struct {
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	steps []podStep
	seen  map[string]map[string]bool
}

// watchPods starts a podTimeline; its times are relative to start.
func watchPods(ctx context.Context, start time.Time) (*podTimeline, error) {
	selector := labels.SelectorFromSet(labels.Set{agentrollout.LabelManagedBy: agentrollout.ManagedByValue}).String()
	pods := cluster.Client().CoreV1().Pods(metav1.NamespaceSystem)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the agent pods: %w", err)
	}
	tl := &podTimeline{start: start, done: make(chan struct{}), seen: map[string]map[string]bool{}}
	for i := range list.Items {
		tl.observe(watch.Added, &list.Items[i])
	}
	ctx, tl.cancel = context.WithCancel(ctx)
	// The cluster's client ends every request, a watch too, after 5 s: the RetryWatcher
	// watches again from the last resourceVersion it saw.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return pods.Watch(ctx, opts)
		},
	})
	if err != nil {
		tl.cancel()
		return nil, fmt.Errorf("watching the agent pods: %w", err)
	}
	go func() {
		defer close(tl.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				tl.observe(ev.Type, pod)
			}
		}
	}()
	return tl, nil
}

// stepsOf are the steps pod shows in an event of type typ, and its containers' exit codes.
func stepsOf(typ watch.EventType, pod *corev1.Pod) (steps []string, exitCodes string) {
	statuses := pod.Status.ContainerStatuses
	running, stopped, exited0 := len(statuses) > 0, len(statuses) > 0, len(statuses) > 0
	var codes []string
	for _, c := range statuses {
		running = running && c.State.Running != nil
		stopped = stopped && c.State.Terminated != nil
		if c.State.Terminated != nil {
			codes = append(codes, fmt.Sprint(c.State.Terminated.ExitCode))
		}
		exited0 = exited0 && c.State.Terminated != nil && c.State.Terminated.ExitCode == 0
	}
	steps = []string{stepCreated}
	if running {
		steps = append(steps, stepRunning)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			steps = append(steps, stepReady)
		}
	}
	if pod.DeletionTimestamp != nil {
		steps = append(steps, stepDeleting)
		if exited0 {
			steps = append(steps, stepExited0)
		}
	}
	if stopped {
		steps = append(steps, stepStopped)
	}
	if typ == watch.Deleted {
		steps = append(steps, stepRemoved)
	}
	return steps, strings.Join(codes, ",")
}

// observe notes each step of pod the first time it is seen.
func (tl *podTimeline) observe(typ watch.EventType, pod *corev1.Pod) {
	at := time.Since(tl.start)
	steps, codes := stepsOf(typ, pod)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	seen := tl.seen[pod.Name]
	if seen == nil {
		seen = map[string]bool{}
		tl.seen[pod.Name] = seen
		if pod.CreationTimestamp.Time.Before(tl.start) {
			seen[stepCreated] = true // a pod from before the start: its creation is not news
		}
	}
	for _, s := range steps {
		if !seen[s] {
			seen[s] = true
			tl.steps = append(tl.steps, podStep{at: at, app: pod.Labels[agentrollout.LabelAppName], pod: pod.Name, node: pod.Spec.NodeName, step: s, exitCodes: codes})
		}
	}
}

// Stop ends the watch.
func (tl *podTimeline) Stop() {
	tl.cancel()
	<-tl.done
}

// String lists the steps, one per line.
func (tl *podTimeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	for _, s := range tl.steps {
		fmt.Fprintf(&b, "+%s %s on %s: %s", s.at.Round(time.Millisecond), s.pod, s.node, s.step)
		if s.step == stepStopped {
			fmt.Fprintf(&b, " (exit %s)", s.exitCodes)
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// lastUnableToHold is when the last pod of app became unable to hold the VIP as the
// controller judges it: all its containers exited with 0 while terminating, or removed.
func (tl *podTimeline) lastUnableToHold(app string) (time.Duration, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	first := map[string]time.Duration{}
	for _, s := range tl.steps {
		if s.app != app || (s.step != stepExited0 && s.step != stepRemoved) {
			continue
		}
		if _, ok := first[s.pod]; !ok {
			first[s.pod] = s.at
		}
	}
	var last time.Duration
	for _, at := range first {
		last = max(last, at)
	}
	return last, len(first) > 0
}

// first is when a pod of app (on node, unless empty) first showed step.
func (tl *podTimeline) first(app, node, step string) (time.Duration, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, s := range tl.steps {
		if s.app == app && s.step == step && (node == "" || s.node == node) {
			return s.at, true
		}
	}
	return 0, false
}
