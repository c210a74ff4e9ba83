// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// releasedViaPeer matches the agent's log line of a release through another node's
// kube-apiserver (not "the local kube-apiserver").
var releasedViaPeer = regexp.MustCompile(`"msg":"Released the Lease"[^\n]*"via":"kube-apiserver `)

// TestReleaseThroughJoinedPeer: the cluster was initialised with its first node only, so
// the only kube-apiserver the agents were ever told about is that node's own; the other two
// joined later. The first node holds the VIP and its kube-apiserver dies: the agent must
// release the Lease through a kube-apiserver of a joined node, found at run time, so that a
// follower takes over at once instead of at lease expiry.
func TestReleaseThroughJoinedPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := netns.NewForTest(t, netns.Options{Prefix: "kvp-", ControlPlane: true})
	first := h.Nodes()[0]
	c := agent.NewCluster(h, agentBin)
	// What the agents were given at init: the first node's kube-apiserver.
	c.ExtraArgs = []string{"--peer-apiserver-urls=https://" + first.IP().String() + ":6443"}

	// Init: the first node's agent alone, so it holds the VIP; then the nodes join.
	if _, err := c.Start(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WaitSingleHolder(ctxFor(t, ctx, takeoverTimeout), func(n *netns.Node) bool { return n == first }); err != nil {
		t.Fatalf("the first node did not take the VIP: %v", err)
	}
	if err := c.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	if leader, err := c.WaitStable(ctxFor(t, ctx, time.Minute), 2*time.Second); err != nil || leader != first {
		t.Fatalf("want %s to keep the VIP while the others join, got %v (%v)", first, leader, err)
	}

	observeTakeover(ctx, t, h, first, first.KillAPIServer)

	log, err := os.ReadFile(c.Agent(first).LogPath())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case releasedViaPeer.Match(log):
		t.Logf("%s released the Lease through a joined node's kube-apiserver", first)
	case bytes.Contains(log, []byte("Releasing the Lease failed; it will expire")):
		t.Errorf("%s could not release the Lease through any kube-apiserver (it knew only its own), so the takeover waited for the lease to expire; log %s", first, c.Agent(first).LogPath())
	default:
		t.Errorf("%s logged no release through another kube-apiserver; log %s", first, c.Agent(first).LogPath())
	}
}
