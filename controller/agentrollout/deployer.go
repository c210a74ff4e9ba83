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
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// Deployer writes, reads and removes the agent's objects in the shoot.
type Deployer struct {
	client client.Client
	reader client.Reader
	clock  clock.PassiveClock
}

// New returns a Deployer that writes and reads through c. c must be able to apply, get,
// list and delete the objects of this package in the target namespace (see
// docs/design.md, "Agent rollout").
func New(c client.Client) *Deployer {
	return &Deployer{client: c, reader: c, clock: clock.RealClock{}}
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

// HandoverPoll is how soon Deploy asks to be called again while the previous
// implementation's pods are still stopping.
const HandoverPoll = 2 * time.Second

// Deploy creates or updates the ServiceAccount, Role, RoleBinding, Lease, metrics Service (see
// metricsService), ServiceMonitor and PrometheusRule (see applyMonitoring) and DaemonSet of
// the chosen implementation with server-side apply. Fields this package stops setting are
// removed from the objects; a changed spec (image, timings, VIP) rolls the DaemonSet one
// node at a time.
//
// Before it writes anything, it removes the other implementation (as Delete does) and
// waits until none of its pods can hold the VIP any more: two implementations never run
// at once, as they do not see each other's Lease. While it waits it returns a
// RequeueAfterError of HandoverPoll.
func (d *Deployer) Deploy(ctx context.Context, spec Spec) error {
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("invalid agent spec: %w", err)
	}
	for _, other := range others(spec.implementation()) {
		present, err := d.present(ctx, spec.Namespace, other)
		if err != nil {
			return err
		}
		if !present {
			continue
		}
		gone, err := d.remove(ctx, spec.Namespace, other)
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
	names := spec.names()
	type object struct {
		kind, namespace string
		obj             runtime.ApplyConfiguration
	}
	objects := []object{
		{"ServiceAccount", spec.Namespace, names.serviceAccount(spec.Namespace)},
		{"Role", spec.Namespace, names.role(spec.Namespace)},
		{"RoleBinding", spec.Namespace, names.roleBinding(spec.Namespace)},
		// Before the DaemonSet: the agents may not create it.
		{"Lease", spec.Namespace, names.leaseObject(spec.Namespace)},
	}
	if names.readsPeers {
		objects = append(objects,
			object{"Role", PeerNamespace, names.peerRole()},
			object{"RoleBinding", PeerNamespace, names.peerRoleBinding(spec.Namespace)})
	}
	if names.hasMetricsService {
		objects = append(objects, object{"Service", spec.Namespace, names.metricsService(spec.Namespace)})
	}
	objects = append(objects, object{"DaemonSet", spec.Namespace, spec.daemonSet()})
	for _, o := range objects {
		if err := d.client.Apply(ctx, o.obj, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", o.kind, o.namespace, names.name, err)
		}
	}
	if !names.hasMetricsService {
		return nil
	}
	return d.applyMonitoring(ctx, spec.Namespace, names)
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

// monitoringObjects are the ServiceMonitor and PrometheusRule as keys for deletion.
func monitoringObjects(namespace string) []client.Object {
	var out []client.Object
	for _, gvk := range []schema.GroupVersionKind{ServiceMonitorGVK, PrometheusRuleGVK} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(namespace)
		u.SetName(MonitoringName())
		out = append(out, u)
	}
	return out
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
	for _, names := range []objectNames{kubeVIPAgentNames(), kubeVIPNames()} {
		gone, err := d.remove(ctx, namespace, names)
		if err != nil {
			return false, err
		}
		allGone = allGone && gone
	}
	return allGone, nil
}

// remove removes one implementation, see Delete.
func (d *Deployer) remove(ctx context.Context, namespace string, names objectNames) (bool, error) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: names.name, Namespace: namespace}}
	// Background: the garbage collector deletes the pods; the pod list below waits for it.
	// Foreground would hide the pods' progress behind a finalizer on the DaemonSet.
	if err := d.client.Delete(ctx, ds, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting DaemonSet %s/%s: %w", namespace, names.name, err)
	}
	if err := d.reader.Get(ctx, client.ObjectKeyFromObject(ds), ds); err == nil {
		return false, nil
	} else if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading DaemonSet %s/%s: %w", namespace, names.name, err)
	}

	pods := &corev1.PodList{}
	if err := d.reader.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(names.selectorLabels())); err != nil {
		return false, fmt.Errorf("listing %s pods in %s: %w", names.implementation, namespace, err)
	}
	now := d.clock.Now()
	for i := range pods.Items {
		if !podCannotHoldVIP(&pods.Items[i], now) {
			return false, nil
		}
	}

	var objects []client.Object
	if names.readsPeers {
		objects = append(objects,
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: names.name, Namespace: PeerNamespace}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: names.name, Namespace: PeerNamespace}})
	}
	if names.hasMetricsService {
		objects = append(objects, monitoringObjects(namespace)...)
		objects = append(objects, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: names.name, Namespace: namespace}})
	}
	objects = append(objects,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: names.name, Namespace: namespace}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: names.name, Namespace: namespace}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: names.lease, Namespace: namespace}},
		// Last: present takes its absence for "nothing of this implementation is left".
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: names.name, Namespace: namespace}},
	)
	for _, obj := range objects {
		// No match: the cluster has no prometheus-operator CRDs, so no such object.
		if err := d.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil && !meta.IsNoMatchError(err) {
			return false, fmt.Errorf("deleting %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return true, nil
}

// present tells whether anything of an implementation may be left: its DaemonSet, a pod, or
// its ServiceAccount, which remove deletes last. It spares Deploy the deletions of remove
// on every reconciliation once a handover is done.
func (d *Deployer) present(ctx context.Context, namespace string, names objectNames) (bool, error) {
	for _, obj := range []client.Object{&appsv1.DaemonSet{}, &corev1.ServiceAccount{}} {
		err := d.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: names.name}, obj)
		if err == nil {
			return true, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("reading %T %s/%s: %w", obj, namespace, names.name, err)
		}
	}
	pods := &corev1.PodList{}
	if err := d.reader.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(names.selectorLabels()), client.Limit(1)); err != nil {
		return false, fmt.Errorf("listing %s pods in %s: %w", names.implementation, namespace, err)
	}
	return len(pods.Items) > 0, nil
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
	for _, candidate := range []objectNames{kubeVIPNames(), kubeVIPAgentNames()} {
		ds := &appsv1.DaemonSet{}
		err := d.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: candidate.name}, ds)
		if err == nil {
			names = candidate
			running = ds.DeletionTimestamp == nil
			status.DesiredPods = ds.Status.DesiredNumberScheduled
			status.ReadyPods = ds.Status.NumberReady
			break
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading DaemonSet %s/%s: %w", namespace, candidate.name, err)
		}
	}

	lease := &coordinationv1.Lease{}
	err := d.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: names.lease}, lease)
	switch {
	case err == nil:
		if err := d.fillHolder(ctx, namespace, names, lease, status); err != nil {
			return nil, err
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Lease %s/%s: %w", namespace, names.lease, err)
	case running:
		// Deleted out of band: the agents may not create it (see role); Deploy does.
		return nil, fmt.Errorf("%w: %s/%s, while its DaemonSet runs", ErrLeaseMissing, namespace, names.lease)
	}
	return status, nil
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
func podCannotHoldVIP(pod *corev1.Pod, now time.Time) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	var grace time.Duration
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	// The agent's own defaults, for pods that do not set the flags.
	lease, lifetime := timing.Defaults().LeaseDuration, timing.Defaults().VIPLifetime
	for _, c := range pod.Spec.Containers {
		if c.Name == KubeVIPName {
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
