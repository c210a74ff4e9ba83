// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package nodes tracks the control-plane Nodes of a self-hosted shoot. When one appears,
// changes its InternalIP, provider ID or control-plane label, or disappears, every
// SelfHostedShootExposure of the extension's type is synced, so that exactly the current
// control-plane nodes' Neutron ports carry the virtual IP as an allowed address pair.
package nodes

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
)

const (
	// ControllerName is the name of the node tracking controller.
	ControllerName = "kube-vip-nodes"
	// DefaultType is the extension type used when AddOptions.Type is empty.
	DefaultType = "kube-vip"
)

// PairSyncer brings the allowed address pairs of the control-plane nodes' Neutron ports in
// line with the current control-plane Nodes, for one exposure.
type PairSyncer interface {
	SyncNodePairs(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure) error
}

// DefaultRateLimiter retries a failed sync after 200ms, doubling up to 2 minutes. Nothing
// watches Neutron, so a port that appears after its Node is only found by a retry; the
// cap bounds that wait (controller-runtime's default would grow to over 16 minutes).
func DefaultRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](200*time.Millisecond, 2*time.Minute)
}

// AddOptions configure the node tracking controller.
type AddOptions struct {
	// Controller are the controller-runtime options. Without a RateLimiter,
	// DefaultRateLimiter is used.
	Controller controller.Options
	// Type is the SelfHostedShootExposure type this extension serves. Default: DefaultType.
	Type string
	// Syncer is called for every exposure of Type after a relevant Node change.
	Syncer PairSyncer
}

// AddToManager registers the controller with mgr. It watches Nodes and maps relevant
// changes to the exposures of opts.Type; errors from the syncer are retried with the
// controller's rate limiter.
func AddToManager(_ context.Context, mgr manager.Manager, opts AddOptions) error {
	if opts.Syncer == nil {
		return errors.New("nodes: a PairSyncer is required")
	}
	if opts.Type == "" {
		opts.Type = DefaultType
	}
	if opts.Controller.RateLimiter == nil {
		opts.Controller.RateLimiter = DefaultRateLimiter()
	}
	r := &reconciler{
		client:      mgr.GetClient(),
		syncer:      opts.Syncer,
		exposureTyp: opts.Type,
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(opts.Controller).
		Watches(
			&corev1.Node{},
			handler.EnqueueRequestsFromMapFunc(r.exposuresForNode),
			builder.WithPredicates(ControlPlaneNodeChanged()),
		).
		Complete(r)
}
