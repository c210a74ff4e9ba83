// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package harness_test is the quick smoke of the network-namespace harness with the real
// agent: one graceful handover, measured by the client's prober.
package harness_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

func TestSmokeGracefulHandover(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the harness smoke needs root: it builds network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin, err := agent.BuildAgent(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := netns.NewForTest(t, netns.Options{Prefix: "kvt-", ControlPlane: true})
	c := agent.NewCluster(h, bin)
	if err := c.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	old, err := c.WaitStable(wctx, time.Second)
	if err != nil {
		t.Fatalf("no stable leader: %v", err)
	}

	sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{})
	prober, err := h.Client().StartProber(ctx, netns.ProbeOptions{Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := c.Agent(old).Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ectx, ecancel := context.WithTimeout(ctx, 2*time.Second)
	defer ecancel()
	if err := c.Agent(old).Wait(ectx); err != nil {
		t.Errorf("old leader's agent after SIGTERM: %v", err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	defer tcancel()
	newLeader, err := h.WaitSingleHolder(tctx, func(n *netns.Node) bool { return n != old })
	if err != nil {
		t.Fatalf("no takeover: %v", err)
	}
	// Probe on until the client has reached the VIP again for a while.
	time.Sleep(time.Second)
	res := prober.Stop()
	rep := sampler.Stop()

	if len(rep.Overlaps) != 0 {
		t.Errorf("VIP on two nodes at once: %+v", rep.Overlaps)
	}
	for _, o := range res.Outages {
		if o.Open() {
			t.Errorf("client still cut off at the end: %+v", o)
		}
	}
	if res.Probes == res.Failures {
		t.Errorf("no probe succeeded (%d probes)", res.Probes)
	}
	t.Logf("graceful handover %s -> %s: %d probes every 10ms, %d failed, longest outage %s",
		old, newLeader, res.Probes, res.Failures, res.Longest().Round(time.Millisecond))
}
