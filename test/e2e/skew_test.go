// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/hack/tools/imagebuild"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestRollFromPreviousRelease: version skew. The DaemonSet runs the agent of the last
// landed release (framework.PreviousRelease), then the
// controller rolls it to this build, one node at a time, so that both releases elect
// together while the roll lasts. The VIP is never on two nodes (sampled every 5 ms) and
// the client reaches it after the roll.
func TestRollFromPreviousRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	deployed(t, ctx)
	commit, prevRef := loadPreviousAgent(t, ctx)
	upgradeAgentImage(t, ctx, prevRef)
	waitReady(t, ctx)
	t.Logf("the agents run the previous release %.12s (%s)", commit, prevRef)

	current := cluster.ImageRef("kube-vip-agent")
	sampler := cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{})
	p := probe(t, ctx, 5*time.Minute)
	upgradeAgentImage(t, ctx, current)
	waitReady(t, ctx)
	time.Sleep(2 * time.Second)
	res := p.Stop()
	rep := sampler.Stop()

	moves := 0
	for _, n := range vipLosses(rep) {
		moves += n
	}
	t.Logf("rolled %.12s -> %s: %d VIP moves, longest outage %v", commit, current, moves, res.Longest())
	if len(rep.Overlaps) > 0 {
		t.Errorf("the VIP sat on two nodes at once during the roll between releases: %+v", rep.Overlaps)
	}
	holder, err := cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatalf("no single VIP holder after the roll: %v\n%s", err, agentsReport(ctx))
	}
	vip := netip.AddrPortFrom(cluster.Net().VIP(), cluster.Net().APIServerPort())
	conn, err := cluster.Net().Client().DialContext(ctx, "tcp", vip.String())
	if err != nil {
		t.Fatalf("the client cannot reach the VIP on %s after the roll: %v", holder.Name(), err)
	}
	_ = conn.Close()
	checkOutage(t, "roll between releases", res, gracefulBound)
}

// loadPreviousAgent builds the agent image of the previous release from a git archive of
// its commit and imports it into every node; it returns the commit and the image.
func loadPreviousAgent(t *testing.T, ctx context.Context) (string, string) {
	t.Helper()
	commit := framework.PreviousRelease
	src := t.TempDir()
	if err := framework.ExtractPreviousRelease(ctx, src); errors.Is(err, framework.ErrNoPreviousRelease) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.Images()
	cfg.Root, cfg.Version, cfg.Out = src, "previous-"+commit[:12], filepath.Join(cluster.Images().Out, "previous")
	var agent imagebuild.Image
	for _, img := range imagebuild.Images {
		if img.Name == "kube-vip-agent" {
			agent = img
		}
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := imagebuild.BuildAll(ctx, cfg, []imagebuild.Image{agent}); err != nil {
		t.Fatalf("building the agent image of %s: %v", commit, err)
	}
	for _, n := range cluster.Nodes() {
		if err := n.ImportImage(ctx, cfg.Tarball(agent)); err != nil {
			t.Fatalf("%s: %v", n.Name(), err)
		}
	}
	return commit, cfg.Ref(agent)
}
