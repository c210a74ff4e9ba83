// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networkingtest

import (
	"context"
	"testing"
)

// TestFakeKeepsTheContract: the fake behaves as Neutron does where the rules look
// (test/integration/foundation runs the same Check against the real Neutron).
func TestFakeKeepsTheContract(t *testing.T) {
	f := NewNeutron()
	if err := Check(context.Background(), f, Place{NetworkID: "net", SubnetID: "subnet", ExternalNetworkID: "ext", Name: "contract"}); err != nil {
		t.Error(err)
	}
	if len(f.Ports) != 0 || len(f.FloatingIPs) != 0 {
		t.Errorf("Check left %d ports and %d floating IPs", len(f.Ports), len(f.FloatingIPs))
	}
}
