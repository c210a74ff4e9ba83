// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package foundation

import (
	"context"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/controller/networking/networkingtest"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestNeutronKeepsTheContract runs against the real Neutron the checks that the unit
// tests' in-memory Neutron passes (networkingtest.TestFakeKeepsTheContract): where the
// fake and Neutron differ, one of the two fails.
func TestNeutronKeepsTheContract(t *testing.T) {
	osEnv := framework.OpenStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := osEnv.Network(ctx)
	if err != nil {
		t.Fatal(err)
	}
	place := networkingtest.Place{NetworkID: osEnv.NetworkID, SubnetID: osEnv.SubnetID, ExternalNetworkID: osEnv.ExternalNetworkID,
		Name: framework.UniqueTechnicalID("kvcontract-")}
	if err := networkingtest.Check(ctx, n, place); err != nil {
		t.Error(err)
	}
}
