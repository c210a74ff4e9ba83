package exposure

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gardener/gardener/extensions/pkg/controller/selfhostedshootexposure"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
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
	return selfhostedshootexposure.Add(mgr, selfhostedshootexposure.AddArgs{
		Actuator:          opts.Actuator,
		ControllerOptions: opts.Controller,
		Predicates:        selfhostedshootexposure.DefaultPredicates(opts.IgnoreOperationAnnotation),
		Type:              opts.Type,
		ExtensionClasses:  opts.ExtensionClasses,
	})
}
