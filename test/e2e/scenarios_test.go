// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/agent"
	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
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

// TestCreate: the controller, installed from its chart, reserves the VIP in Neutron and
// reports the floating IP as ingress; the agents run as pods of its DaemonSet with their
// service-account token, 3/3 Ready, each a child of containerd-shim-runc-v2 with exactly
// NET_ADMIN and NET_RAW effective, and the VIP is on exactly one node and reachable from
// the client.
func TestCreate(t *testing.T) {
	ctx := scenarioContext(t)
	holder := deployed(t, ctx)
	t.Logf("VIP on %s", holder.Name())
	exp := exposed(t, ctx)
	status, err := exposure.DecodeStatus(exp)
	if err != nil {
		t.Fatal(err)
	}
	if status.VIPAddress != cluster.Net().VIP().String() {
		t.Errorf("status VIP %s, want %s", status.VIPAddress, cluster.Net().VIP())
	}
	fips, err := ext.Neutron.FloatingIPsOfPort(ctx, status.PortID)
	if err != nil {
		t.Fatal(err)
	}
	if len(fips) != 1 || exp.Status.Ingress[0].IP != fips[0].FloatingIP {
		t.Errorf("ingress %v, Neutron has floating IPs %+v on the VIP port %s", exp.Status.Ingress, fips, status.PortID)
	}
	controllers := 0
	for _, n := range cluster.Nodes() {
		procs, err := n.Processes("gardener-extension-kube-vip")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			controllers++
			checkParentShim(t, n.Name(), "controller", p)
		}
		agents, err := n.Processes("kube-vip-agent")
		if err != nil {
			t.Fatal(err)
		}
		if len(agents) != 1 {
			t.Fatalf("%s runs %d agent processes, want 1", n.Name(), len(agents))
		}
		checkParentShim(t, n.Name(), "agent", agents[0])
		if agents[0].CapEff != capNetAdminRaw {
			t.Errorf("%s: agent CapEff %#x, want exactly NET_ADMIN|NET_RAW (%#x)", n.Name(), agents[0].CapEff, capNetAdminRaw)
		}
	}
	if controllers != 1 {
		t.Errorf("%d controller processes on the nodes, want 1", controllers)
	}
	pod := leaderPod(t, ctx, holder.Name())
	if pod.Spec.AutomountServiceAccountToken == nil || !*pod.Spec.AutomountServiceAccountToken || pod.Spec.ServiceAccountName != agentrollout.Name {
		t.Errorf("agent pod %s does not run with the token of service account %s", pod.Name, agentrollout.Name)
	}
	for _, a := range pod.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--kubeconfig") {
			t.Errorf("agent pod %s has %s: it must use its service-account token", pod.Name, a)
		}
	}
	res := probe(t, ctx, time.Second).Wait()
	if res.Failures > 0 {
		t.Errorf("%d of %d probes of the VIP failed in the steady state", res.Failures, res.Probes)
	}
}

// checkParentShim fails the test unless the process runs under containerd-shim-runc-v2.
func checkParentShim(t *testing.T, node, what string, p nodes.ProcStatus) {
	t.Helper()
	parent, err := nodes.ReadProcStatus(p.PPID)
	if err != nil {
		t.Fatal(err)
	}
	if parent.Name != "containerd-shim" { // comm of containerd-shim-runc-v2, cut at 15
		t.Errorf("%s: the %s's parent is %q, want containerd-shim-runc-v2", node, what, parent.Name)
	}
}

// TestDeleteLeaderPod: deleting the leader's pod stops its agent with SIGTERM, a graceful
// handover.
func TestDeleteLeaderPod(t *testing.T) {
	ctx := scenarioContext(t)
	leader := deployed(t, ctx)
	pod := leaderPod(t, ctx, leader.Name())
	move := expectMove(t, ctx, election.ReasonRelease)
	p := probe(t, ctx, 8*time.Second)
	time.Sleep(500 * time.Millisecond)
	if err := cluster.Client().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	checkOutage(t, "leader's pod deleted", p.Wait(), gracefulBound)
	// The old agent's pod is gone with its metrics.
	explainedThroughTheAPI(t, ctx, move, leader.Name(), "")
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
	startAgain := stopRuntime(t, ctx, nodeOf(leader))
	checkOutage(t, "leader's kubelet and containerd stopped", p.Wait(), 0)
	rep := sampler.Stop()
	if len(rep.Changes) > 1 {
		t.Errorf("the VIP moved while only kubelet and containerd were down: %+v", rep.Changes)
	}
	startAgain()
	waitReady(t, ctx)
}

// stopRuntime stops n's kubelet and containerd and returns what starts them again. The
// test's cleanup starts them too when the test stops first, so that a failed scenario
// leaves no node down for the tests after it.
func stopRuntime(t *testing.T, ctx context.Context, n *nodes.Node) (startAgain func()) {
	t.Helper()
	started := false
	start := func(ctx context.Context) error {
		if started {
			return nil
		}
		started = true
		return n.StartNode(ctx)
	}
	t.Cleanup(func() {
		// The scenario's deadline may be what stopped the test.
		if err := start(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("starting %s's runtime again: %v", n.Name(), err)
		}
	})
	if err := n.StopNode(); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := start(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaderCrashesWithItsRuntimeDown: the leader node's kubelet and containerd are
// stopped, then its agent is SIGKILLed, so nothing restarts it: the VIP leaves with its
// kernel lifetime, the Lease expires and a follower takes over (reason expiry) within the
// crash bound. Then the node's runtime starts again and restarts the agent.
func TestLeaderCrashesWithItsRuntimeDown(t *testing.T) {
	ctx := scenarioContext(t)
	leader := deployed(t, ctx)
	n := nodeOf(leader)
	agents, err := n.Processes("kube-vip-agent")
	if err != nil || len(agents) != 1 {
		t.Fatalf("agent process on %s: %v (%d found)", leader.Name(), err, len(agents))
	}
	before := restarts(leaderPod(t, ctx, leader.Name()))
	move := expectMove(t, ctx, election.ReasonExpiry)
	startAgain := stopRuntime(t, ctx, n)
	p := probe(t, ctx, 8*time.Second)
	sampler := cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	if err := syscall.Kill(agents[0].PID, syscall.SIGKILL); err != nil {
		t.Error(err)
	}
	checkOutage(t, "leader's agent SIGKILLed with its runtime down", p.Wait(), crashBound)
	// The dead agent's VIP stays until its kernel lifetime ends, which is before the Lease
	// expires.
	if rep := sampler.Stop(); len(rep.TwoHolderSpans()) > 0 {
		dual, longest := dualHolders(rep)
		t.Errorf("the VIP was on two nodes for %s (longest %s) after the kill; holders: %s", dual, longest, changesSince(rep, killed))
	}
	if holder, err := cluster.Net().WaitSingleHolder(ctx, nil); err != nil {
		t.Error(err)
	} else if holder.Name() == leader.Name() {
		t.Errorf("the VIP stayed on %s after its agent died", leader.Name())
	}
	// The old agent is dead, its metrics with it.
	explainedThroughTheAPI(t, ctx, move, leader.Name(), "")
	startAgain()
	// Until the kubelet, started again, sees the container gone, the pod's status still
	// says Ready from before the kill.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if n.KubeletExited() {
			return false, errors.New("the kubelet exited")
		}
		pod, err := ext.AgentPod(ctx, leader.Name())
		return err == nil && restarts(pod) > before, nil
	}); err != nil {
		t.Fatalf("the kubelet on %s did not restart the killed agent: %v\n%s\n%s", leader.Name(), err, n.RuntimeReport(), agentsReport(ctx))
	}
	waitReady(t, ctx)
}

// TestEtcdLeadershipComesToTheLeader: etcd's leadership moves to the VIP holder's member
// (an etcd election, or an operator's move-leader). The holder offers the Lease at its next
// etcd check, so that an election of its member later costs the VIP nothing, and a follower
// takes it (reason offer) within the graceful bound.
func TestEtcdLeadershipComesToTheLeader(t *testing.T) {
	ctx := scenarioContext(t)
	leader := deployed(t, ctx)
	var etcdLeader *netns.Node
	for _, n := range cluster.Net().Nodes() {
		if leads, err := n.EtcdLeads(ctx); err != nil {
			t.Fatal(err)
		} else if leads {
			etcdLeader = n
		}
	}
	if etcdLeader == nil || etcdLeader == leader {
		t.Fatalf("etcd's leader is %v, want a member other than the VIP holder %s's", etcdLeader, leader)
	}
	move := expectMove(t, ctx, election.ReasonOffer)
	p := probe(t, ctx, time.Minute)
	time.Sleep(500 * time.Millisecond)
	if err := etcdLeader.EtcdTransferLeadership(ctx, leader); err != nil {
		t.Fatal(err)
	}
	// The offer comes at the holder's next etcd check, once a second read confirms it.
	offerCtx, cancel := context.WithTimeout(ctx, agent.DefaultConfig().EtcdCheckPeriod+settleTimeout)
	defer cancel()
	holder, err := cluster.Net().WaitSingleHolder(offerCtx, func(n *netns.Node) bool { return n != leader })
	time.Sleep(time.Second)
	checkOutage(t, "etcd's leadership moved to the VIP holder", p.Stop(), gracefulBound)
	if err != nil {
		t.Fatalf("the VIP stayed on %s, whose etcd member leads: %v", leader.Name(), err)
	}
	t.Logf("VIP offered from %s to %s", leader.Name(), holder.Name())
	explainedThroughTheAPI(t, ctx, move, leader.Name(), `kube_vip_agent_etcd_leader{node="`+leader.Name()+`"} 1`)
}

// TestCutLeadersLink: the VIP holder's link goes down right after a renewal. Its etcd
// member, cut off, commits no release, so the Lease stays its own until its term ends; a
// follower that heard the VIP answer takes the Lease on the silence instead (reason early,
// with the cut holder's MAC as the last one heard), well before that. The VIP is never on
// two nodes, also after the link comes back.
func TestCutLeadersLink(t *testing.T) {
	ctx := scenarioContext(t)
	leader := holderOffClientsNode(t, ctx)
	move := expectMove(t, ctx, election.ReasonEarly)
	p := probe(t, ctx, 8*time.Second)
	sampler := cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
	time.Sleep(500 * time.Millisecond)
	// Right after a renewal, so that the holder's term has most of a lease duration left:
	// a takeover before its end can only be an early one.
	renewed := waitRenewal(t, ctx, leader.Name())
	if err := leader.LinkDown(ctx); err != nil {
		t.Fatal(err)
	}
	up := false
	linkUp := func(ctx context.Context) {
		if !up {
			up = true
			if err := leader.LinkUp(ctx); err != nil {
				t.Errorf("bringing %s's link up again: %v", leader.Name(), err)
			}
		}
	}
	t.Cleanup(func() { linkUp(context.WithoutCancel(ctx)) })
	takeCtx, cancel := context.WithTimeout(ctx, defaults.LeaseDuration+time.Second)
	defer cancel()
	holder, err := cluster.Net().WaitSingleHolder(takeCtx, func(n *netns.Node) bool { return n != leader })
	took := time.Since(renewed)
	time.Sleep(time.Second)
	linkUp(ctx)
	checkOutage(t, "leader's link cut", p.Wait(), defaults.LeaseDuration)
	rep := sampler.Stop()
	if err != nil {
		t.Fatalf("no takeover from %s after its link went down: %v; holders: %s", leader.Name(), err, changesSince(rep, renewed))
	}
	t.Logf("VIP on %s %s after %s's last renewal (lease %s)", holder.Name(), took.Round(time.Millisecond), leader.Name(), defaults.LeaseDuration)
	if dual, longest := dualHolders(rep); dual > 0 {
		t.Errorf("the VIP was on two nodes for %s (longest %s) around the cut; holders: %s", dual, longest, changesSince(rep, renewed))
	}
	if holders, err := cluster.Net().Holders(); err != nil || len(holders) != 1 || holders[0] != holder {
		t.Errorf("with the link back, the VIP is on %v (%v), want %s alone", netns.Names(holders), err, holder.Name())
	}
	explainedThroughTheAPI(t, ctx, move, leader.Name(), "")
	if lease, err := cluster.Client().CoordinationV1().Leases(framework.Namespace).Get(ctx, agentrollout.LeaseName, metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if a, _ := election.AcquisitionOf(lease); a.LastHeardMAC != leader.MAC().String() {
		t.Errorf("the early takeover names %q as the MAC last heard, want the cut holder's %s", a.LastHeardMAC, leader.MAC())
	}
	waitReady(t, ctx)
}

// holderOffClientsNode returns a settled holder on another node than the one the test's
// client reaches the cluster through (the first that accepts): a scenario that cuts the
// holder off must still read the cluster. A holder there hands the VIP on by its pod's
// deletion, a graceful release.
func holderOffClientsNode(t *testing.T, ctx context.Context) *netns.Node {
	t.Helper()
	for range 3 {
		leader := deployed(t, ctx)
		if leader != cluster.Net().Nodes()[0] {
			return leader
		}
		pod := leaderPod(t, ctx, leader.Name())
		if err := cluster.Client().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.Net().WaitSingleHolder(ctx, func(n *netns.Node) bool { return n != leader }); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("the VIP stayed on %s, the node the test reads the cluster through", cluster.Net().Nodes()[0].Name())
	return nil
}

// waitRenewal returns when the Lease's renewTime, held by holder, changes.
func waitRenewal(t *testing.T, ctx context.Context, holder string) time.Time {
	t.Helper()
	var last *metav1.MicroTime
	var renewed time.Time
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		lease, err := cluster.Client().CoordinationV1().Leases(framework.Namespace).Get(ctx, agentrollout.LeaseName, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != holder || lease.Spec.RenewTime == nil {
			return false, err
		}
		if last != nil && !lease.Spec.RenewTime.Equal(last) {
			renewed = time.Now()
			return true, nil
		}
		last = lease.Spec.RenewTime
		return false, nil
	}); err != nil {
		t.Fatalf("no renewal by %s: %v", holder, err)
	}
	return renewed
}

// TestKillLeaderAPIServer: the leader node's kube-apiserver is SIGKILLed; the agent's
// health gate drops the VIP and another node takes over.
func TestKillLeaderAPIServer(t *testing.T) {
	ctx := scenarioContext(t)
	leader := deployed(t, ctx)
	move := expectMove(t, ctx, election.ReasonRelease)
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
	explainedThroughTheAPI(t, ctx, move, leader.Name(), `kube_vip_agent_apiserver_healthy{node="`+leader.Name()+`"} 0`)
	if err := leader.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leader.WaitAPIServerReady(ctx); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx)
}

// TestRollNewAgentImage: the operator upgrades the chart to a new agent image tag; the
// controller rolls the DaemonSet, one node at a time.
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
	upgradeAgentImage(t, ctx, ref)
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

// TestDeleteExposure: deleting the exposure removes the agents' DaemonSet, pods and RBAC,
// the VIP from every node, and the VIP port with its floating IP from Neutron; a user's own
// kube-vip from its Helm chart, named as the chart names it, runs on untouched. The
// exposure is created again by the next test that needs it.
func TestDeleteExposure(t *testing.T) {
	ctx := scenarioContext(t)
	deployed(t, ctx)
	exp := exposed(t, ctx)
	status, err := exposure.DecodeStatus(exp)
	if err != nil {
		t.Fatal(err)
	}
	users := installUsersKubeVIP(t, ctx, exp.Spec.Port)
	cl := ext.Client
	if err := ext.DeleteExposure(ctx, 2*time.Minute); err != nil {
		t.Fatalf("the exposure was not deleted: %v\n%s", err, controllerLog(ctx))
	}
	kube := cluster.Client()
	sel := metav1.ListOptions{LabelSelector: agentrollout.LabelAppName + "=" + agentrollout.Name}
	if pods, err := kube.CoreV1().Pods(framework.Namespace).List(ctx, sel); err != nil || len(pods.Items) > 0 {
		t.Errorf("agent pods left: %v (%v)", podNames(pods), err)
	}
	for _, obj := range []client.Object{&appsv1.DaemonSet{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		err := cl.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: agentrollout.Name}, obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s not deleted (get: %v)", obj, agentrollout.Name, err)
		}
	}
	if _, err := ext.Neutron.GetPort(ctx, status.PortID); err == nil || !openstack.IsNotFound(err) {
		t.Errorf("the VIP port %s is still in Neutron (get: %v)", status.PortID, err)
	}
	if fips, err := ext.Neutron.FloatingIPsOfPort(ctx, status.PortID); err != nil || len(fips) > 0 {
		t.Errorf("floating IPs left on the VIP port: %+v (%v)", fips, err)
	}
	if left, err := ext.TaggedPorts(ctx); err != nil || len(left) > 0 {
		t.Errorf("Neutron still has ports tagged for %s: %v (%v)", ext.TechnicalID, left, err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		h, err := cluster.Net().Holders()
		return err == nil && len(h) == 0, nil
	}); err != nil {
		h, _ := cluster.Net().Holders()
		t.Errorf("the VIP is still on %v", netns.Names(h))
	}
	users.check(t, ctx, "after the exposure's deletion")
}

func podNames(pods *corev1.PodList) []string {
	if pods == nil {
		return nil
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	return out
}
