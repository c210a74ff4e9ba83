// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gardener/gardener-extension-kube-vip/cmd/gardener-extension-kube-vip/app"
)

// NewManager returns a controller manager for a test or a harness, not started yet: no
// metrics or health listener, controller names that may repeat within the process (every
// test starts its own controllers), and a development logger that writes to log. Its
// clients are configured as the binary's.
func NewManager(cfg *rest.Config, scheme *runtime.Scheme, log io.Writer) (manager.Manager, error) {
	return ctrl.NewManager(app.RESTConfig(cfg), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 zap.New(zap.UseDevMode(true), zap.WriteTo(log)),
		Controller:             config.Controller{SkipNameValidation: new(true)},
	})
}

// StartManager runs mgr until the test ends, then stops it and fails the test if the
// manager failed. It returns the manager's context.
func StartManager(t testing.TB, mgr manager.Manager) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return ctx
}
