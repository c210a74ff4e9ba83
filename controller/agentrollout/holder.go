// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"context"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener/gardener/pkg/utils/kubernetes/health"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// fillHolder sets status.LeaseHolder, HolderSince and HolderReady from the Lease of the
// implementation names stands for:
// the holder is ready when the Lease is current (renewed within the duration its writer
// published) and the agent pod on the holder's node is Ready. A released or expired Lease
// keeps its last holder name but is not ready.
func (d *Deployer) fillHolder(ctx context.Context, namespace string, names objectNames, lease *coordinationv1.Lease, status *v1alpha1.AgentStatus) error {
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return nil
	}
	status.LeaseHolder = *lease.Spec.HolderIdentity
	if t := lease.Spec.AcquireTime; t != nil {
		// metav1.Time keeps whole seconds in JSON; so does the status, to compare equal.
		status.HolderSince = &metav1.Time{Time: t.UTC().Truncate(time.Second)}
	}
	if lease.Spec.RenewTime == nil || d.clock.Now().After(lease.Spec.RenewTime.Add(leaseDuration(lease))) {
		return nil
	}
	pods, err := d.pods(ctx, namespace, names)
	if err != nil {
		return err
	}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == status.LeaseHolder && p.DeletionTimestamp == nil && health.IsPodReady(p) {
			status.HolderReady = true
			return nil
		}
	}
	return nil
}

// leaseDuration is the duration the Lease's writer published: exact in the agent's
// annotation, else spec.leaseDurationSeconds (other writers, e.g. upstream kube-vip).
func leaseDuration(lease *coordinationv1.Lease) time.Duration {
	if ms, err := strconv.ParseInt(lease.Annotations[election.LeaseDurationAnnotation], 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	if lease.Spec.LeaseDurationSeconds != nil {
		return time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	return 0
}
