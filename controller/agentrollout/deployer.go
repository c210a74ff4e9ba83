// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// Deploy creates or updates the ServiceAccount, Role, RoleBinding and DaemonSet with
// server-side apply. Fields this package stops setting are removed from the objects;
// a changed spec (image, timings, VIP) rolls the DaemonSet one node at a time.
func (d *Deployer) Deploy(ctx context.Context, spec Spec) error {
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("invalid agent spec: %w", err)
	}
	objects := []struct {
		kind string
		obj  runtime.ApplyConfiguration
	}{
		{"ServiceAccount", serviceAccount(spec.Namespace)},
		{"Role", role(spec.Namespace)},
		{"RoleBinding", roleBinding(spec.Namespace)},
		{"DaemonSet", daemonSet(spec)},
	}
	for _, o := range objects {
		if err := d.client.Apply(ctx, o.obj, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", o.kind, spec.Namespace, Name, err)
		}
	}
	return nil
}

// Delete removes the agent. It deletes the DaemonSet and reports gone=false while the
// DaemonSet or any agent pod still exists; the caller calls again later. Only when no
// agent pod is left (so no node holds the VIP any more) does it delete the RoleBinding,
// Role, ServiceAccount and the agents' Lease, and report gone=true. A pod stuck in
// Terminating (its node unreachable, so its kubelet never confirms) counts as gone once
// it cannot hold the VIP any more, see podCannotHoldVIP.
func (d *Deployer) Delete(ctx context.Context, namespace string) (bool, error) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: namespace}}
	// Background: the garbage collector deletes the pods; the pod list below waits for it.
	// Foreground would hide the pods' progress behind a finalizer on the DaemonSet.
	if err := d.client.Delete(ctx, ds, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting DaemonSet %s/%s: %w", namespace, Name, err)
	}
	if err := d.reader.Get(ctx, client.ObjectKeyFromObject(ds), ds); err == nil {
		return false, nil
	} else if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading DaemonSet %s/%s: %w", namespace, Name, err)
	}

	pods := &corev1.PodList{}
	if err := d.reader.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(selectorLabels())); err != nil {
		return false, fmt.Errorf("listing agent pods in %s: %w", namespace, err)
	}
	now := d.clock.Now()
	for i := range pods.Items {
		if !podCannotHoldVIP(&pods.Items[i], now) {
			return false, nil
		}
	}

	for _, obj := range []client.Object{
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: namespace}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: namespace}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: namespace}},
	} {
		if err := d.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting %T %s/%s: %w", obj, namespace, obj.GetName(), err)
		}
	}
	return true, nil
}

// Status reports the DaemonSet's desired and ready pods and the holder of the agents'
// Lease. A missing DaemonSet or Lease gives zero values, not an error. The holder is the
// Lease's holderIdentity as written by the agents; an expired Lease keeps its last holder.
func (d *Deployer) Status(ctx context.Context, namespace string) (*v1alpha1.AgentStatus, error) {
	status := &v1alpha1.AgentStatus{}

	ds := &appsv1.DaemonSet{}
	if err := d.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: Name}, ds); err == nil {
		status.DesiredPods = ds.Status.DesiredNumberScheduled
		status.ReadyPods = ds.Status.NumberReady
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading DaemonSet %s/%s: %w", namespace, Name, err)
	}

	lease := &coordinationv1.Lease{}
	if err := d.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: LeaseName}, lease); err == nil {
		if lease.Spec.HolderIdentity != nil {
			status.LeaseHolder = *lease.Spec.HolderIdentity
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Lease %s/%s: %w", namespace, LeaseName, err)
	}
	return status, nil
}

// podCannotHoldVIP tells whether a terminating agent pod can no longer hold the VIP, even
// if its node is unreachable and the pod object is never removed. A pod's
// deletionTimestamp is already the end of its grace period; this waits another grace
// period plus the agent's lease duration or VIP lifetime (the longer one) beyond it. By
// then an agent cut off from the API server has stopped renewing and dropped the VIP, and
// a dead or frozen one has let the kernel expire it. An agent that still reaches the API
// server loses its Role and RoleBinding right after (Delete removes them) and drops the
// VIP within its renew deadline.
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
