// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestLeaderThatStepsDownReadsEtcdAgain: a node that stops leading must know its etcd
// member's leadership soon, since as a follower it decides on it whether to defer a
// takeover. A fresh holder (the agents' defaults: the holder reads its member every 20 s)
// loses the lead when its kube-apiserver is killed, and etcd's leadership is handed to its
// member: the agent must report kube_vip_agent_etcd_leader 1 within a follower's read period
// (2 s) plus the confirmation (5 s) and some room, not a leader's 20 s after its last read.
func TestLeaderThatStepsDownReadsEtcdAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kvr-"}})
	assertEtcdMetricsRead(ctx, t, h)
	first, _ := holderAwayFromEtcdLeader(ctx, t, h, c)

	// A fresh holder: its read right after the takeover starts its 20 s period.
	if err := c.Agent(first).Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	holder, err := h.WaitSingleHolder(ctxFor(t, ctx, takeoverTimeout), func(n *netns.Node) bool { return n != first })
	if err != nil {
		t.Fatalf("no takeover after stopping %s's agent: %v", first, err)
	}
	time.Sleep(3 * time.Second)
	etcdLeader := waitEtcdLeader(ctx, t, h)
	if etcdLeader == holder {
		t.Fatalf("the new holder %s leads etcd already; the test needs it to follow", holder)
	}

	holder.KillAPIServer()
	t.Cleanup(func() { _ = holder.StartAPIServer(context.Background()) })
	if _, err := h.WaitSingleHolder(ctxFor(t, ctx, takeoverTimeout), func(n *netns.Node) bool { return n != holder }); err != nil {
		t.Fatalf("%s kept the VIP after its kube-apiserver was killed: %v", holder, err)
	}
	if err := etcdLeader.EtcdTransferLeadership(ctx, holder); err != nil {
		t.Fatal(err)
	}
	moved := time.Now()
	const bound = 10 * time.Second
	for {
		v, err := metric(ctx, holder, "kube_vip_agent_etcd_leader")
		if err == nil && v == 1 {
			t.Logf("%s, no longer leading, reported its etcd member's leadership %s after the handover", holder, time.Since(moved).Round(time.Millisecond))
			return
		}
		if time.Since(moved) > bound {
			t.Fatalf("%s, no longer leading, did not report its etcd member's leadership within %s of the handover (kube_vip_agent_etcd_leader %v, %v)",
				holder, bound, v, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
