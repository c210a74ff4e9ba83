// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout_test

import (
	"context"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// The tests of the package share one kube-apiserver; each test that can uses its own
// namespace.
var shared framework.SharedControlPlane

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

func setup(t *testing.T) (context.Context, client.Client) {
	t.Helper()
	return t.Context(), shared.Get(t).Client
}
