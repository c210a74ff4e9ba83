// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestKeepalivedRunsOnLAN runs the runner with real keepalived daemons on a harness LAN
// (no control plane: every node's check fails alike, so the priorities keep their order)
// and checks that a graceful stop and a link-down of the holder are seen as failovers to
// another node, and that a frozen-then-resumed holder is measured too.
func TestKeepalivedRunsOnLAN(t *testing.T) {
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		t.Fatalf("keepalived not installed (hack/bench/ensure-keepalived.sh): %v", err)
	}
	h := netns.NewForTest(t, netns.Options{Prefix: "kvb-t-"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A stand-in for the apiserver: something that accepts on 6443 on every node.
	for _, n := range h.Nodes() {
		l, err := n.Listen(ctx, "tcp", ":6443")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
	}
	d, err := Deploy(ctx, h, sut.KeepalivedTuned(bin, 300*time.Millisecond), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Teardown(context.Background()) })
	r := New(h, Options{})
	for _, name := range []string{"graceful", "link-down", "freeze"} {
		sc, _ := ScenarioByName(name)
		res, err := r.Run(ctx, d, sc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %+v", name, res)
		if !res.Failover || res.NewHolder == "" || res.NewHolder == res.Leader {
			t.Fatalf("%s: no failover seen: %+v", name, res)
		}
		if res.Outage > 5*time.Second {
			t.Fatalf("%s: outage %v", name, res.Outage)
		}
	}
	// keepalived keeps the VIP on a frozen node: the sampler must have seen two holders.
	sc, _ := ScenarioByName("freeze")
	res, err := r.Run(ctx, d, sc)
	if err != nil {
		t.Fatal(err)
	}
	// The bench holds the freeze for 0.5s after the failover; the 5ms sampler may see a
	// little less of it.
	if res.TwoHolders < 400*time.Millisecond {
		t.Fatalf("freeze: two-holder time %v, want the frozen node's VIP counted", res.TwoHolders)
	}
}
