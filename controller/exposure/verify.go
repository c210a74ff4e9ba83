// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
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
// verification request
// for the actuator; after a successful reconciliation it requeues the exposure after the
// verify interval, so that drift (a deleted port, a disassociated floating IP, a lost
// pair) is found and repaired without waiting for an outside trigger.
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
	// gardenlet also sets the annotation when it changes the spec (e.g. the endpoints); only
	// an annotation on an unchanged spec is an operator asking for a check, and an
	// endpoints-only change keeps costing no OpenStack call.
	if exp.Annotations[v1beta1constants.GardenerOperation] == v1beta1constants.GardenerOperationReconcile && exp.Generation == exp.Status.ObservedGeneration {
		r.actuator.verifications.request(exp.UID)
	}
	result, err := r.inner.Reconcile(ctx, req)
	if err != nil || !result.IsZero() || exp.DeletionTimestamp != nil {
		return result, err
	}
	return reconcile.Result{RequeueAfter: r.actuator.opts.VerifyInterval}, nil
}
