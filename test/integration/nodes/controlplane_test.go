// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes_test

import (
	"os"
	"testing"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// The tests of the package share one kube-apiserver (with Gardener's extension CRDs);
// each test removes its Nodes and exposures.
var shared framework.SharedControlPlane

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

func startControlPlane(t *testing.T) *framework.ControlPlane { return shared.Get(t) }
