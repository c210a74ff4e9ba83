// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// Deployer writes, reads and removes the agent's objects in the shoot.
type Deployer struct {
	client       client.Client
	reader       client.Reader
	clock        clock.PassiveClock
	handoverWait time.Duration
}

// New returns a Deployer that writes and reads through c. c must be able to apply, get,
// list and delete the objects of this package in the target namespace (see
// docs/design.md, "Agent rollout").
func New(c client.Client) *Deployer {
	return &Deployer{client: c, reader: c, clock: clock.RealClock{}, handoverWait: DefaultHandoverWait}
}

// WithClock replaces the real clock (tests). It returns d.
func (d *Deployer) WithClock(c clock.PassiveClock) *Deployer {
	d.clock = c
	return d
}

// WithReader makes the Deployer read (DaemonSet, Lease, agent pods) through r, e.g. a
// manager's API reader, so that a cached c does not start cluster-wide informers for
// these kinds. It returns d.
func (d *Deployer) WithReader(r client.Reader) *Deployer {
	d.reader = r
	return d
}

// WithHandoverWait replaces DefaultHandoverWait (tests). It returns d.
func (d *Deployer) WithHandoverWait(wait time.Duration) *Deployer {
	d.handoverWait = wait
	return d
}

const (
	// DefaultHandoverWait is how long one Deploy call waits for the previous
	// implementation's pods to stop. Its old agent drops the VIP when its pod stops, so the
	// VIP is dark until the new DaemonSet exists: waiting here, instead of asking for a
	// requeue, starts the new agent within HandoverTick of the last old pod's end (see
	// podCannotHoldVIP).
	DefaultHandoverWait = 10 * time.Second
	// HandoverTick is how often Deploy looks again while it waits.
	HandoverTick = 200 * time.Millisecond
	// HandoverPoll is how soon Deploy asks to be called again when the previous
	// implementation's pods are still there after the handover wait (a node that does not
	// confirm its pod's deletion).
	HandoverPoll = 2 * time.Second
)

// Deploy creates or updates the ServiceAccount, Role, RoleBinding, Lease, metrics Service (see
// metricsService), ServiceMonitor and PrometheusRule (see applyMonitoring) and DaemonSet of
// the chosen implementation with server-side apply. Fields this package stops setting are
// removed from the objects; a changed spec (image, timings, VIP) rolls the DaemonSet one
// node at a time.
//
// Before it writes the DaemonSet, it removes the other implementation (as Delete does) and
// waits until none of its pods can hold the VIP any more: two implementations never run
// at once, as they do not see each other's Lease. It waits up to the handover wait (see
// DefaultHandoverWait), then returns a RequeueAfterError of HandoverPoll. The objects that
// run nothing are written before that wait, so that the VIP, dark from the old agent's
// stop on, waits for the DaemonSet alone.
func (d *Deployer) Deploy(ctx context.Context, spec Spec) error {
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("invalid agent spec: %w", err)
	}
	names := spec.names()
	absent, err := d.refuseForeign(ctx, append(names.supporting(spec.Namespace), names.daemonSetRef(spec.Namespace)))
	if err != nil {
		return err
	}
	if err := d.applySupporting(ctx, spec.Namespace, names, absent); err != nil {
		return err
	}
	for _, other := range others(spec.implementation()) {
		present, err := d.present(ctx, spec.Namespace, other)
		if err != nil {
			return err
		}
		if !present {
			continue
		}
		gone, err := d.awaitRemoval(ctx, spec.Namespace, other)
		if err != nil {
			return err
		}
		if !gone {
			return &reconcilerutils.RequeueAfterError{
				RequeueAfter: HandoverPoll,
				Cause:        fmt.Errorf("waiting for the %s pods to stop before %s starts", other.implementation, spec.implementation()),
			}
		}
	}
	if err := d.apply(ctx, "DaemonSet", spec.Namespace, names, spec.daemonSet()); err != nil {
		return err
	}
	if !names.hasMetricsService {
		return nil
	}
	return d.applyMonitoring(ctx, spec.Namespace, names)
}

// applySupporting writes the agent's objects besides its DaemonSet and monitoring. absent
// are those refuseForeign did not find.
func (d *Deployer) applySupporting(ctx context.Context, namespace string, names objectNames, absent map[ref]bool) error {
	// Before the DaemonSet: the agents may not create the Lease.
	if err := d.createFreeLease(ctx, namespace, names, absent); err != nil {
		return err
	}
	type object struct {
		kind, namespace string
		obj             runtime.ApplyConfiguration
	}
	objects := []object{
		{"ServiceAccount", namespace, names.serviceAccount(namespace)},
		{"Role", namespace, names.role(namespace)},
		{"RoleBinding", namespace, names.roleBinding(namespace)},
		{"Lease", namespace, names.leaseObject(namespace)},
	}
	if names.readsPeers {
		objects = append(objects,
			object{"Role", PeerNamespace, names.peerRole()},
			object{"RoleBinding", PeerNamespace, names.peerRoleBinding(namespace)})
	}
	if names.hasMetricsService {
		objects = append(objects, object{"Service", namespace, names.metricsService(namespace)})
	}
	for _, o := range objects {
		if err := d.apply(ctx, o.kind, o.namespace, names, o.obj); err != nil {
			return err
		}
	}
	return nil
}

// createFreeLease creates kube-vip-agent's missing Lease as a release record when no pod of
// the agent exists: nobody holds the VIP, and the first agent takes the Lease at once
// instead of waiting a lease duration for it to expire, as it must for a Lease without a
// holder of unknown history (one deleted under a running agent). The apply that follows
// adds the labels. Upstream kube-vip takes a Lease without a holder at once anyway.
func (d *Deployer) createFreeLease(ctx context.Context, namespace string, names objectNames, absent map[ref]bool) error {
	if !names.takesReleases || !absent[ref{leaseGVK, namespace, names.lease}] {
		return nil
	}
	if pods, err := d.pods(ctx, namespace, names, client.Limit(1)); err != nil || len(pods) > 0 {
		return err
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: names.lease, Labels: names.labels(),
		Annotations: map[string]string{election.ReleasedByAnnotation: FieldOwner},
	}}
	if err := d.client.Create(ctx, lease, client.FieldOwner(FieldOwner)); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating Lease %s/%s: %w", namespace, names.lease, err)
	}
	return nil
}

// apply writes one of the agent's objects with server-side apply.
func (d *Deployer) apply(ctx context.Context, kind, namespace string, names objectNames, obj runtime.ApplyConfiguration) error {
	if err := d.client.Apply(ctx, obj, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", kind, namespace, names.name, err)
	}
	return nil
}

// applyMonitoring writes the agent's ServiceMonitor and PrometheusRule where the cluster
// has the prometheus-operator's CRDs, and skips them where it has not: the metrics Service
// alone serves a Prometheus configured otherwise.
func (d *Deployer) applyMonitoring(ctx context.Context, namespace string, names objectNames) error {
	rule, err := names.prometheusRule(namespace)
	if err != nil {
		return err
	}
	for _, u := range []*unstructured.Unstructured{names.serviceMonitor(namespace), rule} {
		err := d.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), namespace, u.GetName(), err)
		}
	}
	return nil
}

// Delete removes the agent, whichever implementation runs. It deletes the DaemonSets and
// reports gone=false while a DaemonSet or any agent pod still exists; the caller calls
// again later. Only when no pod of an implementation is left (so no node holds the VIP any
// more) does it delete that implementation's ServiceMonitor, PrometheusRule, Service, RoleBinding, Role, ServiceAccount and Lease;
// gone=true when that is done for all. A pod stuck in Terminating (its node unreachable,
// so its kubelet never confirms) counts as gone once it cannot hold the VIP any more, see
// podCannotHoldVIP.
func (d *Deployer) Delete(ctx context.Context, namespace string) (bool, error) {
	allGone := true
	for _, names := range allNames() {
		gone, err := d.remove(ctx, namespace, names)
		if err != nil {
			return false, err
		}
		allGone = allGone && gone
	}
	return allGone, nil
}

// ForceDelete deletes every object of every agent at once, without waiting for the pods to
// stop (the pods go with their DaemonSet). It goes on after errors and returns them all.
func (d *Deployer) ForceDelete(ctx context.Context, namespace string) error {
	var errs []error
	for _, names := range allNames() {
		for _, r := range append([]ref{names.daemonSetRef(namespace)}, names.supporting(namespace)...) {
			errs = append(errs, d.deleteOwned(ctx, r, client.PropagationPolicy(metav1.DeletePropagationBackground)))
		}
	}
	return errors.Join(errs...)
}

// remove removes one implementation, see Delete. It reads, and deletes, only objects that
// carry the extension's label.
func (d *Deployer) remove(ctx context.Context, namespace string, names objectNames) (bool, error) {
	dsRef := names.daemonSetRef(namespace)
	// Background: the garbage collector deletes the pods; the pod list below waits for it.
	// Foreground would hide the pods' progress behind a finalizer on the DaemonSet.
	if err := d.deleteOwned(ctx, dsRef, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return false, err
	}
	if left, err := d.getOwned(ctx, client.ObjectKey{Namespace: namespace, Name: names.name}, dsRef.metadata()); err != nil || left {
		return false, err
	}

	pods, err := d.pods(ctx, namespace, names)
	if err != nil {
		return false, err
	}
	now := d.clock.Now()
	for i := range pods {
		if !podCannotHoldVIP(&pods[i], now) {
			return false, nil
		}
	}
	for _, r := range names.supporting(namespace) {
		if err := d.deleteOwned(ctx, r); err != nil {
			return false, err
		}
	}
	return true, nil
}

// awaitRemoval is remove, repeated every HandoverTick until the implementation is gone
// or the handover wait has passed.
func (d *Deployer) awaitRemoval(ctx context.Context, namespace string, names objectNames) (bool, error) {
	gone := false
	// remove gets ctx, not the poll's context: a request cut off by the wait's deadline is
	// no error, just the end of the wait.
	err := wait.PollUntilContextTimeout(ctx, HandoverTick, d.handoverWait, true, func(context.Context) (bool, error) {
		var err error
		gone, err = d.remove(ctx, namespace, names)
		return gone, err
	})
	if err != nil && !wait.Interrupted(err) {
		return false, err
	}
	return gone, nil
}

// pods lists the pods of one agent: by its name and the extension's label, so that a
// user's pods of the same app name are never counted.
func (d *Deployer) pods(ctx context.Context, namespace string, names objectNames, opts ...client.ListOption) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	opts = append(opts, client.InNamespace(namespace), client.MatchingLabels(names.labels()))
	if err := d.reader.List(ctx, pods, opts...); err != nil {
		return nil, fmt.Errorf("listing %s pods in %s: %w", names.name, namespace, err)
	}
	return pods.Items, nil
}

// present tells whether anything of an implementation may be left: its DaemonSet, a pod, or
// its ServiceAccount, which remove deletes last; each only with the extension's label. It
// spares Deploy the deletions of remove on every reconciliation once a handover is done.
func (d *Deployer) present(ctx context.Context, namespace string, names objectNames) (bool, error) {
	for _, r := range []ref{names.daemonSetRef(namespace), {serviceAccountGVK, namespace, names.name}} {
		obj := r.metadata()
		if owned, err := d.getOwned(ctx, client.ObjectKeyFromObject(obj), obj); err != nil || owned {
			return owned, err
		}
	}
	pods, err := d.pods(ctx, namespace, names, client.Limit(1))
	return len(pods) > 0, err
}

// Status reports the DaemonSet's desired and ready pods and the holder of the Lease of the
// implementation that runs (upstream kube-vip's when its DaemonSet exists, else
// kube-vip-agent's). A missing DaemonSet or Lease gives zero values, not an error, but a
// missing Lease of a running DaemonSet gives ErrLeaseMissing. Status writes nothing. The holder is the Lease's
// holderIdentity as written by the agents; an expired Lease keeps its last holder (see
// fillHolder for when the holder counts as ready).
func (d *Deployer) Status(ctx context.Context, namespace string) (*v1alpha1.AgentStatus, error) {
	status := &v1alpha1.AgentStatus{}

	names := kubeVIPAgentNames()
	running := false
	for _, candidate := range []objectNames{kubeVIPNames(), legacyKubeVIPNames(), kubeVIPAgentNames()} {
		ds := &appsv1.DaemonSet{}
		owned, err := d.getOwned(ctx, client.ObjectKey{Namespace: namespace, Name: candidate.name}, ds)
		if err != nil {
			return nil, err
		}
		if owned {
			names = candidate
			running = ds.DeletionTimestamp == nil
			status.DesiredPods = ds.Status.DesiredNumberScheduled
			status.ReadyPods = ds.Status.NumberReady
			break
		}
	}

	lease := &coordinationv1.Lease{}
	owned, err := d.getOwned(ctx, client.ObjectKey{Namespace: namespace, Name: names.lease}, lease)
	switch {
	case err != nil:
		return nil, err
	case owned:
		if err := d.fillHolder(ctx, namespace, names, lease, status); err != nil {
			return nil, err
		}
	case running:
		// Deleted out of band: the agents may not create it (see role); Deploy does.
		return nil, fmt.Errorf("%w: %s/%s, while its DaemonSet runs", ErrLeaseMissing, namespace, names.lease)
	}
	return status, nil
}

// exitedCleanly tells whether every container of pod has exited with code 0.
func exitedCleanly(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) < len(pod.Spec.Containers) || len(pod.Spec.Containers) == 0 {
		return false
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return true
}

// ErrLeaseMissing is Status's error when the Lease of a running DaemonSet is gone: nobody can
// hold the VIP until Deploy creates it again.
var ErrLeaseMissing = errors.New("the agents' Lease is missing")

// podCannotHoldVIP tells whether a terminating agent pod can no longer hold the VIP, even
// if its node is unreachable and the pod object is never removed. A pod's
// deletionTimestamp is already the end of its grace period; this waits another grace
// period plus the agent's lease duration or VIP lifetime (the longer one) beyond it. By
// then an agent cut off from the API server has stopped renewing and dropped the VIP, and
// a dead or frozen one has let the kernel expire it. An agent that still reaches the API
// server loses its Role and RoleBinding right after (Delete removes them) and drops the
// VIP within its renew deadline. Upstream kube-vip sets no kernel lifetime, so for its pods
// only the lease duration counts; a frozen kube-vip holds the VIP until it is killed.
// Before all that, a pod whose containers all exited with code 0 cannot hold it: either
// agent exits so only after its SIGTERM handling removed the VIP, a second or more before
// its kubelet has torn the pod down and the pod object is removed.
func podCannotHoldVIP(pod *corev1.Pod, now time.Time) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	if exitedCleanly(pod) {
		return true
	}
	var grace time.Duration
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	// The agent's own defaults, for pods that do not set the flags.
	lease, lifetime := timing.Defaults().LeaseDuration, timing.Defaults().VIPLifetime
	for _, c := range pod.Spec.Containers {
		if c.Name == KubeVIPContainerName {
			// kube-vip has no kernel lifetime on the VIP: an instance cut off from the API
			// server drops it when its renew deadline (shorter than the lease) has passed.
			lifetime = 0
			for _, e := range c.Env {
				if e.Name == "vip_leaseduration" {
					if n, err := strconv.Atoi(e.Value); err == nil {
						lease = time.Duration(n) * time.Second
					}
				}
			}
			continue
		}
		if c.Name != Name {
			continue
		}
		for _, arg := range c.Args {
			if v, ok := strings.CutPrefix(arg, "--lease-duration="); ok {
				if d, err := time.ParseDuration(v); err == nil {
					lease = d
				}
			}
			if v, ok := strings.CutPrefix(arg, "--vip-lifetime="); ok {
				if d, err := time.ParseDuration(v); err == nil {
					lifetime = d
				}
			}
		}
	}
	return now.After(pod.DeletionTimestamp.Add(grace + max(lease, lifetime)))
}
