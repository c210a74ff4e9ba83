// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"testing"

	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// clusterOptions is what the tests' clusters differ in.
type clusterOptions struct {
	// Net is the harness; it always gets a control plane (ControlPlane is set).
	Net netns.Options
	// ExtraArgs are given to every agent.
	ExtraArgs []string
}

// startCluster starts a harness with a control plane and an agent on every node.
func startCluster(ctx context.Context, t *testing.T, o clusterOptions) (*netns.Harness, *agent.Cluster) {
	t.Helper()
	o.Net.ControlPlane = true
	h := netns.NewForTest(t, o.Net)
	c := agent.NewCluster(h, agentBin)
	c.ExtraArgs = o.ExtraArgs
	if err := c.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	return h, c
}
