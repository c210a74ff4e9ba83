// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
)

// verificationRequests remembers the exposures whose next reconciliation must read
// OpenStack back, whatever the verify interval says: an operator asked for it with
// gardener.cloud/operation=reconcile, which Gardener's OperationAnnotationWrapper removes
// before the actuator could see it.
type verificationRequests struct {
	mu  sync.Mutex
	set map[types.UID]bool
}

func (v *verificationRequests) request(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.set == nil {
		v.set = map[types.UID]bool{}
	}
	v.set[uid] = true
}

// take reports whether a verification was requested for uid and forgets the request.
func (v *verificationRequests) take(uid types.UID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	requested := v.set[uid]
	delete(v.set, uid)
	return requested
}

// verifyingReconciler wraps Gardener's SelfHostedShootExposure reconciler. Before it runs,
// an explicit gardener.cloud/operation=reconcile on an unchanged spec is turned into a
// verification request for the actuator. After a successful reconciliation it requeues
// the exposure: every agent refresh interval a Succeeded exposure only re-reads the agents
// and the front door (RefreshAgent: Kubernetes reads, no OpenStack call, no change of the
// last operation), and once the verify interval has passed Gardener's reconciler runs and
// the actuator reads OpenStack back, so that drift (a deleted port, a disassociated
// floating IP, a lost pair) is found and repaired without an outside trigger. A refresh that
// finds the agents' Lease deleted runs the reconciliation at once, to deploy it again.
type verifyingReconciler struct {
	inner    reconcile.Reconciler
	reader   client.Reader
	actuator *Actuator
}

func (r *verifyingReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := r.reader.Get(ctx, req.NamespacedName, exp); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	annotated := exp.Annotations[v1beta1constants.GardenerOperation] == v1beta1constants.GardenerOperationReconcile
	// gardenlet also sets the annotation when it changes the spec (e.g. the endpoints); only
	// an annotation on an unchanged spec is an operator asking for a check, and an
	// endpoints-only change keeps costing no OpenStack call.
	if annotated && exp.Generation == exp.Status.ObservedGeneration {
		r.actuator.verifications.request(exp.UID)
	}
	if !annotated && r.actuator.refreshOnly(exp) {
		err := r.actuator.RefreshAgent(ctx, log.FromContext(ctx), exp)
		if !errors.Is(err, agentrollout.ErrLeaseMissing) {
			if err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{RequeueAfter: r.actuator.nextCheck(exp)}, nil
		}
		// The refresh only reads; the reconciliation's deploy step creates the Lease again.
	}
	result, err := r.inner.Reconcile(ctx, req)
	if err != nil || !result.IsZero() || exp.DeletionTimestamp != nil {
		return result, err
	}
	return reconcile.Result{RequeueAfter: r.actuator.nextCheck(nil)}, nil
}

// refreshOnly tells whether exp needs no more than an agent refresh: it succeeded with
// the current spec and its OpenStack resources were verified within the verify interval.
func (a *Actuator) refreshOnly(exp *extensionsv1alpha1.SelfHostedShootExposure) bool {
	lo := exp.Status.LastOperation
	if exp.DeletionTimestamp != nil || lo == nil || lo.State != gardencorev1beta1.LastOperationStateSucceeded || exp.Generation != exp.Status.ObservedGeneration {
		return false
	}
	status, err := DecodeStatus(exp)
	if err != nil || status.Ingress == "" || status.VerifiedAt == nil {
		return false
	}
	return a.opts.Clock.Since(status.VerifiedAt.Time) < a.opts.VerifyInterval
}

// nextCheck is when exp is looked at again: at the next agent refresh, or when its
// verification is due if that comes first. nil stands for an exposure just verified.
func (a *Actuator) nextCheck(exp *extensionsv1alpha1.SelfHostedShootExposure) time.Duration {
	next := a.opts.VerifyInterval
	if exp != nil {
		if status, err := DecodeStatus(exp); err == nil && status.VerifiedAt != nil {
			next = a.opts.VerifyInterval - a.opts.Clock.Since(status.VerifiedAt.Time)
		}
	}
	if a.opts.FrontDoorProbe != FrontDoorOff {
		next = min(next, a.opts.AgentRefreshInterval)
	}
	return max(next, time.Second)
}
