// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
)

// reconciler syncs the node pairs of one SelfHostedShootExposure per request. Requests are
// keyed by exposure, so a burst of Node events for one exposure collapses into one sync.
type reconciler struct {
	client      client.Client
	syncer      PairSyncer
	exposureTyp string
}

// exposuresForNode maps a Node event to every exposure of the configured type. The Node
// itself is not passed on: the syncer reads the current set of control-plane Nodes.
func (r *reconciler) exposuresForNode(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &extensionsv1alpha1.SelfHostedShootExposureList{}
	if err := r.client.List(ctx, list); err != nil {
		// A map function cannot return an error, so this change is lost; the pairs are synced
		// again by the next control-plane Node event or by the exposure's next reconciliation
		// that reaches OpenStack (changed inputs, the operation annotation, or a verification
		// older than the verify interval), which also adds and removes pairs.
		// The list is served from the informer cache and fails only if that is unusable.
		logf.FromContext(ctx).Error(err, "Listing SelfHostedShootExposures failed; node change not mapped")
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		exp := &list.Items[i]
		if exp.Spec.Type != r.exposureTyp {
			continue
		}
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(exp)})
	}
	return requests
}

// Reconcile calls the syncer for the requested exposure. An error is returned to
// controller-runtime, which requeues the request with the controller's rate limiter (for
// example when a new node's Neutron port does not exist yet).
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx).WithValues("selfHostedShootExposure", req.NamespacedName)

	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := r.client.Get(ctx, req.NamespacedName, exp); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if exp.DeletionTimestamp != nil {
		log.V(1).Info("Exposure is being deleted; node pairs are left to its deletion")
		return reconcile.Result{}, nil
	}
	if exp.Spec.Type != r.exposureTyp {
		return reconcile.Result{}, nil
	}

	log.V(1).Info("Syncing node pairs after a control-plane node change")
	if err := r.syncer.SyncNodePairs(ctx, log, exp); err != nil {
		return reconcile.Result{}, fmt.Errorf("syncing node pairs of SelfHostedShootExposure %s: %w", req.NamespacedName, err)
	}
	return reconcile.Result{}, nil
}
