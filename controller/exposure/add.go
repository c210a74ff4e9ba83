// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/util/workqueue"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gardener/gardener/extensions/pkg/controller/selfhostedshootexposure"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	predicateutils "github.com/gardener/gardener/pkg/controllerutils/predicate"
)

// DefaultType is the extension type of the SelfHostedShootExposures this controller handles.
const DefaultType = "kube-vip"

// AddOptions configure AddToManager.
type AddOptions struct {
	// Actuator is the actuator, see NewActuator. Required.
	Actuator *Actuator
	// Controller are the controller-runtime options.
	Controller controller.Options
	// IgnoreOperationAnnotation makes the controller react to every generation change
	// instead of only to the gardener.cloud/operation annotation.
	IgnoreOperationAnnotation bool
	// ExtensionClasses are the classes of the resources handled.
	ExtensionClasses []extensionsv1alpha1.ExtensionClass
	// Type is the extension type; default DefaultType.
	Type string
}

// AddToManager registers the SelfHostedShootExposure controller with gardener's
// extensions library.
func AddToManager(_ context.Context, mgr manager.Manager, opts AddOptions) error {
	if opts.Actuator == nil {
		return errors.New("exposure: an Actuator is required")
	}
	if opts.Type == "" {
		opts.Type = DefaultType
	}
	if opts.Controller.RateLimiter == nil {
		// A failed reconciliation (a configuration error included) is retried from 1 s on,
		// doubling up to 5 min, not from controller-runtime's 5 ms: an exposure with a typo
		// must not hammer Keystone and Neutron.
		opts.Controller.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute)
	}
	// As selfhostedshootexposure.Add, with Gardener's reconciler wrapped so that an explicit
	// reconcile verifies OpenStack and a healthy exposure is re-verified periodically.
	if err := registerLeaseCollector(mgr, opts.Type); err != nil {
		return err
	}
	predicates := predicateutils.AddTypeAndClassPredicates(
		selfhostedshootexposure.DefaultPredicates(opts.IgnoreOperationAnnotation), opts.ExtensionClasses, opts.Type)
	return builder.ControllerManagedBy(mgr).
		Named(selfhostedshootexposure.ControllerName).
		WithOptions(opts.Controller).
		Watches(&extensionsv1alpha1.SelfHostedShootExposure{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicates...)).
		Complete(&verifyingReconciler{
			inner:    selfhostedshootexposure.NewReconciler(mgr, opts.Actuator),
			reader:   mgr.GetClient(),
			actuator: opts.Actuator,
		})
}
