// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package app wires the controller manager of the kube-vip exposure extension: options,
// manager, schemes, health checks and the controllers (SelfHostedShootExposure, Nodes,
// heartbeat), the way gardener's own extensions are wired.
package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionscmdcontroller "github.com/gardener/gardener/extensions/pkg/controller/cmd"
	"github.com/gardener/gardener/extensions/pkg/controller/heartbeat"
	heartbeatcmd "github.com/gardener/gardener/extensions/pkg/controller/heartbeat/cmd"
	selfhostedshootexposurecontroller "github.com/gardener/gardener/extensions/pkg/controller/selfhostedshootexposure"
	gardenerhealthz "github.com/gardener/gardener/pkg/healthz"
	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kubevipv1alpha1 "github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/nodes"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

const (
	// ExposureControllerName is the switch name of the SelfHostedShootExposure controller.
	ExposureControllerName = selfhostedshootexposurecontroller.ControllerName
	// NodesControllerName is the switch name of the controller that keeps the VIP pair on
	// the control-plane nodes' Neutron ports.
	NodesControllerName = nodes.ControllerName
	// HeartbeatControllerName is the switch name of gardener's heartbeat controller.
	HeartbeatControllerName = heartbeat.ControllerName

	// servedNamespace is the only namespace with SelfHostedShootExposures (GEP-28); the
	// manager's cache and the chart's RBAC are limited to it.
	servedNamespace = metav1.NamespaceSystem
	// leaderElectionNamespaceEnv names the namespace of the leader election Lease.
	leaderElectionNamespaceEnv = "LEADER_ELECTION_NAMESPACE"
)

// Options are all command line options of the controller manager.
type Options struct {
	REST       *extensionscmdcontroller.RESTOptions
	Manager    *extensionscmdcontroller.ManagerOptions
	General    *extensionscmdcontroller.GeneralOptions
	Reconciler *extensionscmdcontroller.ReconcilerOptions
	Exposure   *extensionscmdcontroller.ControllerOptions
	Nodes      *extensionscmdcontroller.ControllerOptions
	Heartbeat  *heartbeatcmd.Options
	Extension  *ExtensionOptions
	Switches   *extensionscmdcontroller.SwitchOptions
}

// NewOptions returns the options with their defaults. Every call returns fresh values.
func NewOptions() *Options {
	o := &Options{
		REST: &extensionscmdcontroller.RESTOptions{},
		Manager: &extensionscmdcontroller.ManagerOptions{
			LeaderElection:          true,
			LeaderElectionID:        extensionscmdcontroller.LeaderElectionNameID(ExtensionName),
			LeaderElectionNamespace: os.Getenv(leaderElectionNamespaceEnv),
		},
		General:    &extensionscmdcontroller.GeneralOptions{},
		Reconciler: &extensionscmdcontroller.ReconcilerOptions{},
		Exposure:   &extensionscmdcontroller.ControllerOptions{MaxConcurrentReconciles: 5},
		Nodes:      &extensionscmdcontroller.ControllerOptions{MaxConcurrentReconciles: 1},
		Heartbeat: &heartbeatcmd.Options{
			ExtensionName:        ExtensionName,
			RenewIntervalSeconds: 30,
			Namespace:            os.Getenv(leaderElectionNamespaceEnv),
		},
		Extension: &ExtensionOptions{},
	}
	return o
}

func (o *Options) aggregator() extensionscmdcontroller.OptionAggregator {
	return extensionscmdcontroller.NewOptionAggregator(
		o.REST,
		o.Manager,
		o.General,
		o.Reconciler,
		extensionscmdcontroller.PrefixOption(ExposureControllerName+"-", o.Exposure),
		extensionscmdcontroller.PrefixOption("nodes-", o.Nodes),
		extensionscmdcontroller.PrefixOption("heartbeat-", o.Heartbeat),
		o.Extension,
		o.Switches,
	)
}

// NewControllerManagerCommand creates the command that runs the controller manager.
func NewControllerManagerCommand(ctx context.Context) *cobra.Command {
	opts := NewOptions()
	ctrls := &controllers{opts: opts}
	opts.Switches = ctrls.switchOptions()
	agg := opts.aggregator()

	cmd := &cobra.Command{
		Use:           "gardener-extension-kube-vip",
		Short:         "Exposes the kube-apiserver of self-hosted shoots on OpenStack through a virtual IP.",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := agg.Complete(); err != nil {
				return fmt.Errorf("error completing options: %w", err)
			}
			if err := opts.Heartbeat.Validate(); err != nil {
				return err
			}
			return run(ctx, opts)
		},
	}
	agg.AddFlags(cmd.Flags())
	cmd.AddCommand(NewValidateCommand())
	return cmd
}

// NewScheme returns the scheme of the manager: client-go's types, gardener's extension
// resources and this extension's provider config.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		extensionscontroller.AddToScheme, // client-go, extensions.gardener.cloud, resources.gardener.cloud
		kubevipv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// ManagerOptions returns the manager options for the completed options. The cache is limited
// to the served namespace, plus the Leases of leader election and heartbeat.
func ManagerOptions(opts *Options) (manager.Options, error) {
	scheme, err := NewScheme()
	if err != nil {
		return manager.Options{}, fmt.Errorf("building scheme: %w", err)
	}
	mgrOpts := opts.Manager.Completed().Options()
	mgrOpts.Scheme = scheme

	leaseNamespaces := map[string]cache.Config{servedNamespace: {}}
	for _, ns := range []string{opts.Manager.Completed().LeaderElectionNamespace, opts.Heartbeat.Completed().Namespace} {
		if ns != "" {
			leaseNamespaces[ns] = cache.Config{}
		}
	}
	mgrOpts.Cache = cache.Options{
		DefaultNamespaces: map[string]cache.Config{servedNamespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: leaseNamespaces},
		},
	}
	return mgrOpts, nil
}

// RESTConfig returns the config of the controller's clients: without a QPS of its own, it
// is not throttled on the client side, as controller-runtime's GetConfig does (the
// kube-apiserver's priority and fairness protects it). client-go's default of 5 requests/s
// would stretch one agent rollout (about 30 requests) over seconds, and with it the outage
// of a switch between agent implementations.
func RESTConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg
}

func run(ctx context.Context, opts *Options) error {
	mgrOpts, err := ManagerOptions(opts)
	if err != nil {
		return err
	}
	mgr, err := manager.New(RESTConfig(opts.REST.Completed().Config), mgrOpts)
	if err != nil {
		return fmt.Errorf("could not instantiate manager: %w", err)
	}

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("could not add healthz check: %w", err)
	}
	if err := mgr.AddHealthzCheck("informer-sync", gardenerhealthz.NewCacheSyncHealthzWithDeadline(mgr.GetLogger(), clock.RealClock{}, mgr.GetCache(), gardenerhealthz.DefaultCacheSyncDeadline)); err != nil {
		return fmt.Errorf("could not add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informer-sync", gardenerhealthz.NewCacheSyncHealthz(mgr.GetCache())); err != nil {
		return fmt.Errorf("could not add readyz check: %w", err)
	}

	mgr.GetLogger().Info("Adding controllers to manager", "extensionType", opts.Extension.Completed().Type,
		"selfHostedShootCluster", opts.General.Completed().SelfHostedShootCluster)
	if opts.Extension.Completed().FrontDoorProbe == exposure.FrontDoorOff {
		mgr.GetLogger().Info("WARNING: the front door is not checked (--front-door-probe=off, for tests without agents): Succeeded will not mean that it works")
	}
	if err := opts.Switches.Completed().AddToManager(ctx, mgr); err != nil {
		return fmt.Errorf("could not add controllers to manager: %w", err)
	}

	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("error running manager: %w", err)
	}
	return nil
}

// controllers builds the AddToManager functions of the controller switches from the
// completed options. The SelfHostedShootExposure and the Nodes controller share one actuator.
type controllers struct {
	opts *Options

	once     sync.Once
	actuator *exposure.Actuator
}

func (c *controllers) switchOptions() *extensionscmdcontroller.SwitchOptions {
	return extensionscmdcontroller.NewSwitchOptions(
		extensionscmdcontroller.Switch(ExposureControllerName, c.addExposure),
		extensionscmdcontroller.Switch(NodesControllerName, c.addNodes),
		extensionscmdcontroller.Switch(HeartbeatControllerName, c.addHeartbeat),
	)
}

func (c *controllers) actuatorFor(mgr manager.Manager) *exposure.Actuator {
	c.once.Do(func() {
		ext := c.opts.Extension.Completed()
		c.actuator = exposure.NewActuator(mgr, exposure.ActuatorOptions{
			ClientFactory: openstack.NewClientFactory(openstack.FactoryOptions{
				Metrics: openstack.NewMetrics(ctrlmetrics.Registry),
				Log:     mgr.GetLogger().WithName("openstack"),
			}),
			AgentImage:     ext.AgentImage,
			KubeVIPImage:   ext.KubeVIPImage,
			VerifyInterval: ext.VerifyInterval,
			FrontDoorProbe: ext.FrontDoorProbe,
			NodeName:       ext.NodeName,
		})
	})
	return c.actuator
}

func (c *controllers) addExposure(ctx context.Context, mgr manager.Manager) error {
	return exposure.AddToManager(ctx, mgr, exposure.AddOptions{
		Actuator:                  c.actuatorFor(mgr),
		Controller:                c.opts.Exposure.Completed().Options(),
		IgnoreOperationAnnotation: c.opts.Reconciler.Completed().IgnoreOperationAnnotation,
		ExtensionClasses:          slices.Clone(c.opts.General.Completed().ExtensionClasses),
		Type:                      c.opts.Extension.Completed().Type,
	})
}

func (c *controllers) addNodes(ctx context.Context, mgr manager.Manager) error {
	return nodes.AddToManager(ctx, mgr, nodes.AddOptions{
		Controller: c.opts.Nodes.Completed().Options(),
		Type:       c.opts.Extension.Completed().Type,
		Syncer:     c.actuatorFor(mgr),
	})
}

func (c *controllers) addHeartbeat(_ context.Context, mgr manager.Manager) error {
	hb := c.opts.Heartbeat.Completed()
	return heartbeat.Add(mgr, heartbeat.AddArgs{
		ExtensionName:        hb.ExtensionName,
		Namespace:            hb.Namespace,
		RenewIntervalSeconds: hb.RenewIntervalSeconds,
		Clock:                clock.RealClock{},
	})
}
