// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// capNetAdminRaw is CAP_NET_ADMIN (12) | CAP_NET_RAW (13).
const capNetAdminRaw = 1<<12 | 1<<13

func scenarioContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestCreate: the agents run as pods of the DaemonSet, 3/3 Ready, each a child of
// containerd-shim-runc-v2 with exactly NET_ADMIN and NET_RAW effective, and the VIP is on
// exactly one node and reachable from the client.
func TestCreate(t *testing.T) {
	ctx := scenarioContext(t)
	holder := deployed(t, ctx)
	t.Logf("VIP on %s", holder.Name())
	for _, n := range cluster.Nodes() {
		agents, err := n.Processes("kube-vip-agent")
		if err != nil {
			t.Fatal(err)
		}
		if len(agents) != 1 {
			t.Fatalf("%s runs %d agent processes, want 1", n.Name(), len(agents))
		}
		parent, err := nodes.ReadProcStatus(agents[0].PPID)
		if err != nil {
			t.Fatal(err)
		}
		if parent.Name != "containerd-shim" { // comm of containerd-shim-runc-v2, cut at 15
			t.Errorf("%s: the agent's parent is %q, want containerd-shim-runc-v2", n.Name(), parent.Name)
		}
		if agents[0].CapEff != capNetAdminRaw {
			t.Errorf("%s: agent CapEff %#x, want exactly NET_ADMIN|NET_RAW (%#x)", n.Name(), agents[0].CapEff, capNetAdminRaw)
		}
	}
	res := probe(t, ctx, time.Second).Wait()
	if res.Failures > 0 {
		t.Errorf("%d of %d probes of the VIP failed in the steady state", res.Failures, res.Probes)
	}
}

// TestDeleteLeaderPod: deleting the leader's pod stops its agent with SIGTERM, a graceful
// handover.
func TestDeleteLeaderPod(t *testing.T) {
	ctx := scenarioContext(t)
	leader := deployed(t, ctx)
	pod := leaderPod(t, ctx, leader.Name())
	p := probe(t, ctx, 8*time.Second)
	time.Sleep(500 * time.Millisecond)
	if err := cluster.Client().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	checkOutage(t, "leader's pod deleted", p.Wait(), gracefulBound)
	waitReady(t, ctx)
}

// TestKillLeaderAgentProcess: SIGKILL to the leader's agent process, as an OOM kill; the
// kubelet restarts the container.
func TestKillLeaderAgentProcess(t *testing.T) {
	ctx := scenarioContext(t)
	leader := deployed(t, ctx)
	agents, err := nodeOf(leader).Processes("kube-vip-agent")
	if err != nil || len(agents) != 1 {
		t.Fatalf("agent process on %s: %v (%d found)", leader.Name(), err, len(agents))
	}
	before := restarts(leaderPod(t, ctx, leader.Name()))
	p := probe(t, ctx, 8*time.Second)
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(agents[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	checkOutage(t, "leader's agent SIGKILLed", p.Wait(), crashBound)
	waitReady(t, ctx)
	// The kill took: the kubelet restarted the container (a restarted agent on the node
	// that still holds the Lease takes it back before the VIP's lifetime ends).
	if after := restarts(leaderPod(t, ctx, leader.Name())); after != before+1 {
		t.Errorf("agent container restarts on %s: %d before the kill, %d after, want one more", leader.Name(), before, after)
	}
	holder, err := cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VIP on %s after the kill (was on %s)", holder.Name(), leader.Name())
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, s := range pod.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// TestStopLeaderKubeletAndContainerd: the leader node's kubelet and containerd stop; the
// containers keep running under their shims, so the agent keeps the VIP: no failover and
// no outage. Then both start again and the node becomes Ready.
func TestStopLeaderKubeletAndContainerd(t *testing.T) {
	ctx := scenarioContext(t)
	leader := deployed(t, ctx)
	p := probe(t, ctx, 10*time.Second)
	sampler := cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{})
	time.Sleep(500 * time.Millisecond)
	n := nodeOf(leader)
	if err := n.StopNode(); err != nil {
		t.Fatal(err)
	}
	checkOutage(t, "leader's kubelet and containerd stopped", p.Wait(), 0)
	rep := sampler.Stop()
	if len(rep.Changes) > 1 {
		t.Errorf("the VIP moved while only kubelet and containerd were down: %+v", rep.Changes)
	}
	if err := n.StartNode(ctx); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx)
}

// TestKillLeaderAPIServer: the leader node's kube-apiserver is SIGKILLed; the agent's
// health gate drops the VIP and another node takes over.
func TestKillLeaderAPIServer(t *testing.T) {
	ctx := scenarioContext(t)
	leader := deployed(t, ctx)
	p := probe(t, ctx, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	leader.KillAPIServer()
	checkOutage(t, "leader's kube-apiserver killed", p.Wait(), apiserverBound)
	holder, err := cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if holder.Name() == leader.Name() {
		t.Errorf("the VIP stayed on %s after its kube-apiserver died", leader.Name())
	}
	if err := leader.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leader.WaitAPIServerReady(ctx); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx)
}

// TestRollNewAgentImage: the DaemonSet is rolled to a new image tag, one node at a time.
// Each replaced leader hands over gracefully: at most one VIP move per node, each outage
// within the graceful bound.
func TestRollNewAgentImage(t *testing.T) {
	ctx := scenarioContext(t)
	deployed(t, ctx)
	ref, err := cluster.LoadImage(ctx, "kube-vip-agent", "e2e-roll")
	if err != nil {
		t.Fatal(err)
	}
	sampler := cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{})
	p := probe(t, ctx, 3*time.Minute)
	if err := agentrollout.New(ctrlClient(t)).Deploy(ctx, agentSpec(ref)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx)
	time.Sleep(2 * time.Second)
	res := p.Stop()
	rep := sampler.Stop()
	lost := vipLosses(rep)
	moves := 0
	for _, n := range lost {
		moves += n
	}
	t.Logf("rolled to %s: %d VIP moves, away from %v", ref, moves, lost)
	checkOutage(t, "rolling update", res, gracefulBound)
	// Each node's pod is replaced once, so a node that held the VIP hands it over at most
	// once: at most one move per updated leader.
	for node, n := range lost {
		if n > 1 {
			t.Errorf("the VIP moved away from %s %d times in one rollout: %+v", node, n, rep.Changes)
		}
	}
	if len(rep.Overlaps) > 0 {
		t.Errorf("the VIP sat on two nodes at once during the rollout: %+v", rep.Overlaps)
	}
}

// vipLosses counts, per node, how often the VIP moved from it to another node (a gap with
// no holder in between is part of the move).
func vipLosses(rep netns.SamplerReport) map[string]int {
	lost, last := map[string]int{}, ""
	for _, c := range rep.Changes {
		if len(c.Holders) != 1 {
			continue
		}
		if last != "" && c.Holders[0] != last {
			lost[last]++
		}
		last = c.Holders[0]
	}
	return lost
}
