// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener/gardener-extension-kube-vip/test/extension"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// The extension installed from its chart (test/extension), the Gardener objects and the
// exposure of gardenadm init's step: one for the package, torn down by TestMain.
var (
	extOnce sync.Once
	ext     *extension.Extension
	extErr  error
)

// installed installs the extension on first use. Without a local OpenStack the test ends
// (see framework.Unavailable).
func installed(t *testing.T, ctx context.Context) *extension.Extension {
	t.Helper()
	osEnv := framework.OpenStack(t)
	extOnce.Do(func() {
		ext, extErr = extension.Install(ctx, extension.Options{Cluster: cluster, OpenStack: osEnv, TechnicalID: framework.UniqueTechnicalID("kve2e-"), Log: ctrllog.Log.WithName("gardenadm")})
	})
	if extErr != nil {
		t.Fatalf("installing the extension: %v", extErr)
	}
	return ext
}

// exposed runs gardenadm init's step (Gardener's code) if the exposure is not there, and
// waits until it has Succeeded.
func exposed(t *testing.T, ctx context.Context) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	e := installed(t, ctx)
	if _, err := e.Exposure(ctx); apierrors.IsNotFound(err) {
		if _, err := e.Init(ctx); err != nil {
			t.Fatalf("gardenadm init: %v; controller log:\n%s\nagents:\n%s", err, controllerLog(ctx), agentsReport(ctx))
		}
	}
	exp, err := e.WaitSucceeded(ctx, 3*time.Minute, nil)
	if err != nil {
		t.Fatalf("%v; controller log:\n%s\nagents:\n%s", err, controllerLog(ctx), agentsReport(ctx))
	}
	return exp
}

// controllerLog is the end of the controller pod's log, for failure messages.
func controllerLog(ctx context.Context) string { return ext.ControllerLog(ctx) }

// agentsReport is each agent pod's phase and the end of its log, for failure messages.
func agentsReport(ctx context.Context) string { return ext.AgentsReport(ctx) }

// upgradeAgentImage upgrades the chart to another agent image and has the controller roll
// the DaemonSet to it.
func upgradeAgentImage(t *testing.T, ctx context.Context, agentImage string) {
	t.Helper()
	if err := ext.Upgrade(ctx, extension.Images{Controller: cluster.ImageRef("gardener-extension-kube-vip"), Agent: agentImage}); err != nil {
		t.Fatalf("%v\n%s", err, controllerLog(ctx))
	}
}
