// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

const (
	// kubeletPeriod is how often the stand-in reads the DaemonSet.
	kubeletPeriod = 500 * time.Millisecond
	// restartDelay is how long the stand-in waits before it restarts an agent that exited
	// while the DaemonSet still wants it (a kubelet backs off 10s at first; shorter here).
	restartDelay = 3 * time.Second
	// agentGrace is the DaemonSet's terminationGracePeriodSeconds.
	agentGrace = 5 * time.Second
)

// kubelet stands in for the kubelets and the DaemonSet controller of the shoot, which this
// demo does not run: it reads the agent DaemonSet that the controller applied, and runs
// its container's command line in every control-plane node's namespace (the pods have
// hostNetwork). Instead of the service-account token and CA it gives the agent
// --kubeconfig with the node's admin kubeconfig. It restarts an agent that exits, restarts
// all of them one by one when the container changes, and stops them when the DaemonSet is
// deleted. It records what runs as it would be seen in a cluster: a Pod per node (which the
// controller's deletion waits for) and the DaemonSet's status.
type kubelet struct {
	c      client.Client
	bin    string
	nodes  []shootNode
	out    *progress
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	agents map[string]*agentRun
}

// agentRun is the agent "pod" on one node.
type agentRun struct {
	proc     *netns.Process
	args     []string
	env      []string
	exited   time.Time // when the stand-in noticed the exit; zero while it runs
	restarts int32
}

func (d *demo) startKubelet(ctx context.Context) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k := &kubelet{
		c:      d.c,
		bin:    d.opts.agentBinary,
		nodes:  d.nodes,
		out:    d.out,
		cancel: cancel,
		done:   make(chan struct{}),
		agents: map[string]*agentRun{},
	}
	d.kubelet = k
	go k.run(runCtx)
	d.out.Printf("kubelet stand-in: no kubelet runs here, so this process plays it for the agent DaemonSet; agent binary %s", d.opts.agentBinary)
}

func (k *kubelet) run(ctx context.Context) {
	defer close(k.done)
	for {
		if err := k.sync(ctx); err != nil && ctx.Err() == nil {
			k.out.Printf("kubelet stand-in: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(kubeletPeriod):
		}
	}
}

// sync brings the agents in line with the DaemonSet once.
func (k *kubelet) sync(ctx context.Context) error {
	ds := &appsv1.DaemonSet{}
	err := k.c.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: agentrollout.Name}, ds)
	if apierrors.IsNotFound(err) || (err == nil && ds.DeletionTimestamp != nil) {
		if k.stopAll() > 0 {
			k.out.Printf("kubelet stand-in: DaemonSet %s/%s is gone, agents stopped", framework.Namespace, agentrollout.Name)
		}
		return k.deletePods(ctx)
	}
	if err != nil {
		return fmt.Errorf("reading the DaemonSet: %w", err)
	}
	if !selectsControlPlane(ds) {
		return errors.New("the DaemonSet does not select control-plane nodes; not running it")
	}
	restarted := false
	for _, n := range k.nodes {
		args, env, err := k.commandLine(ds, n)
		if err != nil {
			return err
		}
		k.mu.Lock()
		a := k.agents[n.name]
		k.mu.Unlock()
		switch {
		case a == nil:
			k.start(ctx, n, args, env, "")
		case !a.proc.Exited() && (!slices.Equal(a.args, args) || !slices.Equal(a.env, env)):
			// A changed pod template rolls one node at a time (maxUnavailable 1).
			if restarted {
				continue
			}
			restarted = true
			_ = a.proc.Stop(agentGrace)
			k.start(ctx, n, args, env, "the pod template changed")
		case a.proc.Exited() && a.exited.IsZero():
			a.exited = time.Now() // only this goroutine reads and writes exited
			k.out.Printf("kubelet stand-in: agent on %s exited (%v); restarting it in %s", n.name, exitDescription(a.proc), restartDelay)
		case a.proc.Exited() && time.Since(a.exited) >= restartDelay:
			k.start(ctx, n, args, env, "restart after exit")
		}
	}
	return k.record(ctx, ds)
}

// record writes a Pod per node and the DaemonSet's status for what runs now.
func (k *kubelet) record(ctx context.Context, ds *appsv1.DaemonSet) error {
	ready := int32(0)
	for _, n := range k.nodes {
		k.mu.Lock()
		a := k.agents[n.name]
		var running bool
		var restarts int32
		if a != nil {
			running, restarts = !a.proc.Exited(), a.restarts
		}
		k.mu.Unlock()
		if running {
			ready++
		}
		if err := k.recordPod(ctx, ds, n, running, restarts); err != nil {
			return err
		}
	}
	desired := int32(len(k.nodes))
	st := ds.Status
	if st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled == desired && st.CurrentNumberScheduled == desired &&
		st.UpdatedNumberScheduled == desired && st.NumberReady == ready && st.NumberAvailable == ready {
		return nil
	}
	patch := client.MergeFrom(ds.DeepCopy())
	ds.Status.ObservedGeneration = ds.Generation
	ds.Status.DesiredNumberScheduled = desired
	ds.Status.CurrentNumberScheduled = desired
	ds.Status.UpdatedNumberScheduled = desired
	ds.Status.NumberReady = ready
	ds.Status.NumberAvailable = ready
	ds.Status.NumberUnavailable = desired - ready
	if err := k.c.Status().Patch(ctx, ds, patch); err != nil {
		return fmt.Errorf("writing the DaemonSet's status: %w", err)
	}
	return nil
}

func podName(node string) string { return agentrollout.Name + "-" + node }

// recordPod creates the node's agent Pod if needed and sets its status.
func (k *kubelet) recordPod(ctx context.Context, ds *appsv1.DaemonSet, n shootNode, running bool, restarts int32) error {
	pod := &corev1.Pod{}
	err := k.c.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: podName(n.name)}, pod)
	if apierrors.IsNotFound(err) {
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:      podName(n.name),
				Namespace: ds.Namespace,
				Labels:    ds.Spec.Template.Labels,
			},
			Spec: *ds.Spec.Template.Spec.DeepCopy(),
		}
		pod.Spec.NodeName = n.name
		if err := controllerutil.SetControllerReference(ds, pod, k.c.Scheme()); err != nil {
			return err
		}
		if err := k.c.Create(ctx, pod); err != nil {
			return fmt.Errorf("recording the agent Pod of %s: %w", n.name, err)
		}
	} else if err != nil {
		return fmt.Errorf("reading the agent Pod of %s: %w", n.name, err)
	}

	want := pod.DeepCopy()
	cond := corev1.ConditionFalse
	if running {
		cond = corev1.ConditionTrue
	}
	want.Status.Phase = corev1.PodRunning
	want.Status.HostIP = n.ns.IP().String()
	want.Status.PodIP = n.ns.IP().String()
	if !hasCondition(pod, corev1.PodReady, cond) {
		now := metav1.Now()
		want.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: cond, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: cond, LastTransitionTime: now},
		}
	}
	cs := corev1.ContainerStatus{Name: agentrollout.Name, Image: pod.Spec.Containers[0].Image, Ready: running, RestartCount: restarts}
	if running {
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
		if len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].State.Running != nil {
			cs.State.Running = pod.Status.ContainerStatuses[0].State.Running
		}
	} else {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	}
	want.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	if equality.Semantic.DeepEqual(pod.Status, want.Status) {
		return nil
	}
	if err := k.c.Status().Patch(ctx, want, client.MergeFrom(pod)); err != nil {
		return fmt.Errorf("writing the status of the agent Pod of %s: %w", n.name, err)
	}
	return nil
}

func hasCondition(pod *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == s
		}
	}
	return false
}

// deletePods removes the agent Pods once their agents are stopped (the garbage collector
// of a real cluster deletes a deleted DaemonSet's pods, and each kubelet confirms).
func (k *kubelet) deletePods(ctx context.Context) error {
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(framework.Namespace), client.MatchingLabels{agentrollout.LabelAppName: agentrollout.Name}); err != nil {
		return fmt.Errorf("listing the agent Pods: %w", err)
	}
	for i := range pods.Items {
		if err := k.c.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Pod %s: %w", pods.Items[i].Name, err)
		}
	}
	if len(pods.Items) > 0 {
		k.out.Printf("kubelet stand-in: %d agent Pods deleted", len(pods.Items))
	}
	return nil
}

// selectsControlPlane checks that the pod template's node affinity wants nodes with the
// control-plane label, which all of the demo's nodes have.
func selectsControlPlane(ds *appsv1.DaemonSet) bool {
	aff := ds.Spec.Template.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, expr := range term.MatchExpressions {
			if expr.Key == exposure.LabelControlPlane && expr.Operator == corev1.NodeSelectorOpExists {
				return true
			}
		}
	}
	return false
}

// commandLine turns the DaemonSet's agent container into the command line and environment
// for node n: the container's args, the environment with the downward API resolved
// (spec.nodeName is the Node's name), and --kubeconfig in place of the service account.
func (k *kubelet) commandLine(ds *appsv1.DaemonSet, n shootNode) (args, env []string, err error) {
	var c *corev1.Container
	for i := range ds.Spec.Template.Spec.Containers {
		if ds.Spec.Template.Spec.Containers[i].Name == agentrollout.Name {
			c = &ds.Spec.Template.Spec.Containers[i]
		}
	}
	if c == nil {
		return nil, nil, fmt.Errorf("the DaemonSet has no container %q", agentrollout.Name)
	}
	args = append(slices.Clone(c.Command[min(len(c.Command), 1):]), c.Args...)
	args = append(args, "--kubeconfig="+n.kubeconfig)
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName":
			env = append(env, e.Name+"="+n.name)
		default:
			return nil, nil, fmt.Errorf("container env %s: only plain values and fieldRef spec.nodeName are supported here", e.Name)
		}
	}
	return args, env, nil
}

func (k *kubelet) start(ctx context.Context, n shootNode, args, env []string, why string) {
	p, err := n.ns.Start(ctx, netns.ProcessOptions{Name: "agent", Path: k.bin, Args: args, Env: env})
	if err != nil {
		k.out.Printf("kubelet stand-in: starting the agent on %s: %v", n.name, err)
		return
	}
	k.mu.Lock()
	restarts := int32(0)
	if old := k.agents[n.name]; old != nil {
		restarts = old.restarts + 1
	}
	k.agents[n.name] = &agentRun{proc: p, args: args, env: env, restarts: restarts}
	k.mu.Unlock()
	suffix := ""
	if why != "" {
		suffix = " (" + why + ")"
	}
	k.out.Printf("kubelet stand-in: started kube-vip-agent on %s in %s, pid %d%s: %s %s",
		n.name, n.ns.Namespace(), p.PID(), suffix, strings.Join(env, " "), strings.Join(args, " "))
}

// agent returns the agent process on the node, or nil.
func (k *kubelet) agent(node string) *netns.Process {
	k.mu.Lock()
	defer k.mu.Unlock()
	if a := k.agents[node]; a != nil {
		return a.proc
	}
	return nil
}

// terminate sends SIGTERM to the agent on node, as a kubelet does when a pod is deleted;
// the stand-in restarts it after restartDelay.
func (k *kubelet) terminate(node string) (*netns.Process, error) {
	p := k.agent(node)
	if p == nil || p.Exited() {
		return nil, fmt.Errorf("no agent runs on %s", node)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return nil, err
	}
	return p, nil
}

// stopAll stops every agent (SIGTERM, SIGKILL after the grace period) and forgets them;
// it returns how many were running.
func (k *kubelet) stopAll() int {
	k.mu.Lock()
	agents := k.agents
	k.agents = map[string]*agentRun{}
	k.mu.Unlock()
	running := 0
	var wg sync.WaitGroup
	for _, a := range agents {
		if !a.proc.Exited() {
			running++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = a.proc.Stop(agentGrace)
		}()
	}
	wg.Wait()
	return running
}

// stop ends the stand-in and stops the agents.
func (k *kubelet) stop() {
	k.cancel()
	<-k.done
	k.stopAll()
}

func exitDescription(p *netns.Process) string {
	if code := p.ExitCode(); code >= 0 {
		return fmt.Sprintf("exit code %d", code)
	}
	return "killed by a signal"
}
