// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gardener/gardener/pkg/logger"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gardener/gardener-extension-kube-vip/cmd/gardener-extension-kube-vip/app"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/nodes"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// agentImage is what the DaemonSet names; no container runtime runs here, the kubelet
// stand-in runs the locally built binary instead.
const agentImage = "local/kube-vip-agent:demo"

// controllerRun is the controller manager running in this process.
type controllerRun struct {
	cancel context.CancelFunc
	done   chan error
}

// startController wires the manager the way cmd/gardener-extension-kube-vip does (its
// manager options, scheme and cache limits; the exposure and node controllers sharing one
// actuator), with leader election off, and starts it against the shoot.
func (d *demo) startController(ctx context.Context) error {
	opts := app.NewOptions()
	opts.Manager.LeaderElection = false
	opts.Manager.MetricsBindAddress = d.opts.metricsAddress
	opts.Manager.HealthBindAddress = "0"
	opts.Manager.LogLevel = logger.InfoLevel
	opts.Manager.LogFormat = logger.FormatText
	for _, c := range []interface{ Complete() error }{opts.Manager, opts.Heartbeat, opts.Exposure, opts.Nodes} {
		if err := c.Complete(); err != nil {
			return fmt.Errorf("completing the controller options: %w", err)
		}
	}
	mgrOpts, err := app.ManagerOptions(opts)
	if err != nil {
		return err
	}
	mgrOpts.Logger = d.log.WithName("controller")
	mgr, err := manager.New(d.restConfig, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}

	actuator := exposure.NewActuator(mgr, exposure.ActuatorOptions{
		ClientFactory:  openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(ctrlmetrics.Registry)}),
		AgentImage:     agentImage,
		VerifyInterval: app.DefaultVerifyInterval,
		// The demo's controller runs on the host, outside the nodes' network: it checks
		// that a ready agent holds the Lease, not the VIP itself.
		FrontDoorProbe: exposure.FrontDoorLease,
	})
	if err := exposure.AddToManager(ctx, mgr, exposure.AddOptions{
		Actuator:   actuator,
		Controller: opts.Exposure.Completed().Options(),
		Type:       app.DefaultExtensionType,
	}); err != nil {
		return fmt.Errorf("adding the exposure controller: %w", err)
	}
	if err := nodes.AddToManager(ctx, mgr, nodes.AddOptions{
		Controller: opts.Nodes.Completed().Options(),
		Type:       app.DefaultExtensionType,
		Syncer:     actuator,
	}); err != nil {
		return fmt.Errorf("adding the node controller: %w", err)
	}

	// The manager lives until down stops it, not until the signal context ends: the
	// teardown needs it to delete the exposure.
	mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run := &controllerRun{cancel: cancel, done: make(chan error, 1)}
	go func() { run.done <- mgr.Start(mgrCtx) }()
	d.controller = run

	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return fmt.Errorf("the controller's caches did not sync: %w", syncCtx.Err())
	}
	d.out.Printf("controller manager runs: extension type %q, controllers %s + %s, metrics on http://%s/metrics; log: %s/controller.log",
		app.DefaultExtensionType, app.ExposureControllerName, app.NodesControllerName, d.opts.metricsAddress, d.opts.stateDir)
	return nil
}

// stop stops the manager and waits for it.
func (r *controllerRun) stop() error {
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			return fmt.Errorf("controller manager: %w", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("controller manager did not stop within 30s")
	}
}
