// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package dataplane_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1helper "github.com/gardener/gardener/pkg/api/extensions/v1alpha1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestRouterCreate: the controller reserves the VIP, puts the floating IP on it and the VIP
// into every node port's allowed address pairs, and reports the floating IP as ingress once
// the front door works; the external client then gets 200 from https://<floating IP>/readyz
// (the certificate verified for the VIP), while it cannot reach the VIP itself, and the
// router's neighbour entry for the VIP names the holder.
func TestRouterCreate(t *testing.T) {
	f, ctx := scenario(t)
	holder, st := f.deployed(t, ctx)
	t.Logf("VIP %s on %s, floating IP %s", st.vip, holder, st.fip)
	if st.vip != f.cluster.Net().VIP().String() {
		t.Errorf("VIP %s, want %s", st.vip, f.cluster.Net().VIP())
	}
	f.checkCreated(t, ctx, holder, st)
}

// checkCreated checks a new front door of any IP families: the VIP port has every VIP,
// the IPv4 VIP (if any) has the one floating IP, status.ingress has one door per family in
// the shoot's order (the floating IP for IPv4, the VIP itself for IPv6) and Gardener's DNS
// value is the first; every node port has every VIP as a pair; the external client gets
// 200 from https://<door>/readyz through each door but cannot reach an IPv4 VIP itself; the
// router's neighbour entry for each VIP names the holder; no probe fails in the steady state.
// checkSteady wants one second without a failed probe of the door within the first five:
// right after create, Neutron's L2 agent may still be applying the ports' new pairs (it
// lags the API by seconds), and a probe can fail while it rewrites a port's rules. Every
// failed second is logged, so a transient stays visible.
func (f *frontDoor) checkSteady(t *testing.T, ctx context.Context, door string) {
	t.Helper()
	for range 5 {
		res := f.probe(t, ctx, door, time.Second).Wait()
		if res.Failures == 0 {
			return
		}
		t.Logf("%d of %d probes of the door %s failed in one second after create", res.Failures, res.Probes, door)
	}
	t.Errorf("the door %s never answered every probe for one second in five", door)
}

func (f *frontDoor) checkCreated(t *testing.T, ctx context.Context, holder *netns.Node, st status) {
	t.Helper()
	exp, _ := f.exposed(t, ctx)
	port, err := f.neutron.GetPort(ctx, st.portID)
	if err != nil {
		t.Fatal(err)
	}
	doors := map[gardencorev1beta1.IPFamily]string{}
	for _, v := range st.vips {
		if !openstack.HasFixedIP(port, v) {
			t.Errorf("the VIP port's fixed IPs %v lack the VIP %s", port.FixedIPs, v)
		}
		doors[familyOf(t, v)] = v
	}
	fips, err := f.neutron.FloatingIPsOfPort(ctx, st.portID)
	if err != nil {
		t.Fatal(err)
	}
	if v4, ok := doors[gardencorev1beta1.IPFamilyIPv4]; ok {
		if len(fips) != 1 || fips[0].FloatingIP != st.fip || fips[0].FixedIP != v4 || fips[0].FloatingNetworkID != f.dp.OpenStack.ExternalNetworkID {
			t.Errorf("floating IPs of the VIP port %s: %+v, want %s for %s on the external network", st.portID, fips, st.fip, v4)
		}
		doors[gardencorev1beta1.IPFamilyIPv4] = st.fip
		if f.reaches(ctx, hostPort(v4)) {
			t.Errorf("the external client reaches the VIP %s directly; its only way in must be the floating IP", v4)
		}
	} else if len(fips) != 0 {
		t.Errorf("an IPv6-only exposure has floating IPs %+v", fips)
	}
	families := f.families
	if len(families) == 0 {
		families = []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv4}
	}
	var want []string
	for _, fam := range families {
		want = append(want, doors[fam])
	}
	if !slices.Equal(st.doors, want) {
		t.Errorf("status.ingress %v, want %v (ipFamilies %v)", st.doors, want, families)
	}
	if values, _, err := extensionsv1alpha1helper.DNSValuesFromIngress(exp.Status.Ingress, families); err != nil || !slices.Equal(values, want[:1]) {
		t.Errorf("Gardener's DNS value %v (%v), want %v", values, err, want[:1])
	}
	for _, n := range f.cluster.Net().Nodes() {
		p := f.portOf(t, ctx, n)
		for _, v := range st.vips {
			if !openstack.HasPair(p, v) {
				t.Errorf("%s's port %s has pairs %+v, want the VIP %s", n, p.ID, p.AllowedAddressPairs, v)
			}
		}
	}
	for _, door := range st.doors {
		// The certificate is verified for the harness's VIP, a name it holds whichever
		// door the connection took (a Neutron-picked IPv6 VIP is not in it).
		if err := f.httpsReadyz(ctx, hostPort(door), f.cluster.Net().VIP().String()); err != nil {
			t.Errorf("https://%s/readyz from the external client: %v", hostPort(door), err)
		}
		f.checkSteady(t, ctx, door)
	}
	f.checkRouterFollowsHolder(t, ctx, holder, "during the create checks", st.vips...)
}

// familyOf is the IP family of the address.
func familyOf(t *testing.T, addr string) gardencorev1beta1.IPFamily {
	t.Helper()
	if netipAddr(t, addr).Is4() {
		return gardencorev1beta1.IPFamilyIPv4
	}
	return gardencorev1beta1.IPFamilyIPv6
}

// failoverCase is one failover scenario: fault is done to the holder while every door is
// probed for probeFor; each door's outage must end, and the longest stay within bound (nil:
// measured and logged only); accept says which new holder is right.
type failoverCase struct {
	name     string
	probeFor time.Duration
	bound    func(leader *netns.Node) time.Duration
	fault    func(leader *netns.Node)
	accept   func(old, n *netns.Node) bool
}

// failover runs c against the holder while probing every door and sampling the VIPs'
// holders every millisecond: no VIP may be on two nodes at any sample, and the router's
// neighbour entry of each VIP must follow the new holder; it returns the old and the new
// holder.
func (f *frontDoor) failover(t *testing.T, ctx context.Context, c failoverCase) (old, holder *netns.Node) {
	t.Helper()
	leader, st := f.deployed(t, ctx)
	var limit time.Duration
	if c.bound != nil {
		limit = c.bound(leader)
	}
	sampler := f.cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
	probers := make([]*netns.Prober, len(st.doors))
	for i, door := range st.doors {
		probers[i] = f.probe(t, ctx, door, c.probeFor)
	}
	time.Sleep(500 * time.Millisecond)
	c.fault(leader)
	for i, p := range probers {
		netns.CheckOutage(t, fmt.Sprintf("%s (through %s)", c.name, st.doors[i]), p.Wait(), limit)
	}
	holder, err := f.cluster.Net().WaitSingleHolder(ctx, func(n *netns.Node) bool { return c.accept(leader, n) })
	rep := sampler.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: the VIPs %v moved from %s to %s; %d sweeps 1 ms apart, %d with a VIP on two nodes, %d with a node holding only some VIPs",
		c.name, st.vips, leader, holder, rep.Sweeps, len(rep.Overlaps), rep.Partial)
	if len(rep.Overlaps) != 0 || rep.Errors != 0 {
		t.Errorf("%s: a VIP sat on two nodes at once: %+v (sampler errors %d: %s)", c.name, rep.Overlaps, rep.Errors, rep.FirstError)
	}
	for _, v := range st.vips {
		f.checkRouterFollows(t, ctx, v, holder)
	}
	return leader, holder
}

// fixed is a bound that does not depend on the leader.
func fixed(d time.Duration) func(*netns.Node) time.Duration {
	return func(*netns.Node) time.Duration { return d }
}

func anyHolder(_, _ *netns.Node) bool   { return true }
func otherNode(old, n *netns.Node) bool { return n != old }

// deleteHolderPod stops the holder's agent with SIGTERM: its pod is deleted.
func (f *frontDoor) deleteHolderPod(t *testing.T, ctx context.Context) func(*netns.Node) {
	return func(leader *netns.Node) {
		pod := f.leaderPod(t, ctx, leader.Name())
		if err := f.cluster.Client().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// killHolderAgent SIGKILLs the holder's agent process; the kubelet restarts it.
func (f *frontDoor) killHolderAgent(t *testing.T) func(*netns.Node) {
	return func(leader *netns.Node) {
		agents, err := f.cluster.Node(leader.Name()).Processes("kube-vip-agent")
		if err != nil || len(agents) != 1 {
			t.Fatalf("agent process on %s: %v (%d found)", leader, err, len(agents))
		}
		if err := syscall.Kill(agents[0].PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
}

// cutHolderLink takes the holder's NIC down inside the node, as a cut cable.
func cutHolderLink(t *testing.T, ctx context.Context) func(*netns.Node) {
	return func(leader *netns.Node) {
		if err := leader.LinkDown(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = leader.LinkUp(context.Background()) })
	}
}

// TestRouterGracefulHandover: deleting the leader's pod stops its agent with SIGTERM.
func TestRouterGracefulHandover(t *testing.T) {
	f, ctx := scenario(t)
	f.failover(t, ctx, failoverCase{name: "leader's pod deleted", probeFor: 8 * time.Second, bound: fixed(gracefulBound),
		fault: f.deleteHolderPod(t, ctx), accept: otherNode})
	f.waitReady(t, ctx)
}

// TestRouterLeaderCrash: SIGKILL to the leader's agent process; the kubelet restarts it.
func TestRouterLeaderCrash(t *testing.T) {
	f, ctx := scenario(t)
	// the restarted agent may win the Lease back
	f.failover(t, ctx, failoverCase{name: "leader's agent SIGKILLed", probeFor: 8 * time.Second, bound: fixed(crashBound),
		fault: f.killHolderAgent(t), accept: anyHolder})
	f.waitReady(t, ctx)
}

// TestRouterLeaderLinkDown: the leader's NIC goes down inside the node, as a cut cable.
func TestRouterLeaderLinkDown(t *testing.T) {
	f, ctx := scenario(t)
	leader, _ := f.failover(t, ctx, failoverCase{name: "leader's link down", probeFor: 8 * time.Second, bound: func(leader *netns.Node) time.Duration {
		// Read just before the cut: whether the cut also costs etcd's election.
		leads, err := leader.EtcdLeads(ctx)
		if err != nil {
			t.Fatalf("reading whether %s leads etcd: %v", leader, err)
		}
		if leads {
			t.Logf("%s leads etcd too: the bound allows etcd's election", leader)
			return linkDownBound + etcdElection
		}
		return linkDownBound
	}, fault: cutHolderLink(t, ctx), accept: otherNode})
	f.relinked(t, ctx, leader, f.dp.ClientIP)
}

// relinked brings the cut node's link up again and checks that it has its way out (the
// default route of peer's family) again, or the front door dies the next time it holds the
// VIP; then it waits for its kube-apiserver and the agents.
func (f *frontDoor) relinked(t *testing.T, ctx context.Context, leader *netns.Node, peer string) {
	t.Helper()
	if err := leader.LinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Run(ctx, "ping", "-c", "1", "-W", "2", peer); err != nil {
		routes, _ := leader.Run(ctx, "ip", "route", "show", "table", "all")
		t.Errorf("%s cannot reach %s through the router after its link came back: %v; routes:\n%s", leader, peer, err, routes)
	}
	if err := leader.WaitAPIServerReady(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitReady(t, ctx)
}

// TestRouterLeaderAPIServerDead: the leader node's kube-apiserver is SIGKILLed; the agent's
// health gate drops the VIP and another node takes over.
func TestRouterLeaderAPIServerDead(t *testing.T) {
	f, ctx := scenario(t)
	leader, _ := f.failover(t, ctx, failoverCase{name: "leader's kube-apiserver killed", probeFor: 10 * time.Second, bound: fixed(apiserverBound),
		fault: func(leader *netns.Node) { leader.KillAPIServer() }, accept: otherNode})
	if err := leader.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leader.WaitAPIServerReady(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitReady(t, ctx)
}

// TestRouterPairRemovedByHand: somebody removes the VIP from the holder port's allowed
// address pairs; port security then drops the holder's answers and the front door dies.
// An explicit reconcile (gardener.cloud/operation=reconcile) puts the pair back, at the
// latest, and the front door works again without a failover.
func TestRouterPairRemovedByHand(t *testing.T) {
	f, ctx := scenario(t)
	_, st := f.deployed(t, ctx)
	f.repairsPair(t, ctx, st.vip, st.fip)
}

// repairsPair removes vip from the holder port's pairs, waits until door (the VIP's front
// door) is dead, annotates the exposure for a reconcile, and checks that the pair comes
// back, door answers again and the VIPs stay where they were.
func (f *frontDoor) repairsPair(t *testing.T, ctx context.Context, vip, door string) {
	t.Helper()
	holder, err := f.cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	port := f.portOf(t, ctx, holder)
	start := time.Now()
	if _, err := f.neutron.RemovePairFromPort(ctx, port, vip); err != nil {
		t.Fatal(err)
	}
	if err := f.waitReachable(ctx, door, false, 30*time.Second); err != nil {
		t.Fatalf("after removing the pair %s from %s's port: %v", vip, holder, err)
	}
	t.Logf("pair %s removed from %s's port %s: the door %s is dead after %s", vip, holder, port.ID, door, time.Since(start).Round(time.Millisecond))

	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := f.cl.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: exposureName}, exp); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(exp.DeepCopy())
	metav1.SetMetaDataAnnotation(&exp.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	start = time.Now()
	if err := f.cl.Patch(ctx, exp, patch); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := f.neutron.GetPort(ctx, port.ID)
		return err == nil && openstack.HasPair(p, vip), nil
	}); err != nil {
		t.Fatalf("the controller did not put the VIP %s back into %s's port after a reconcile: %v", vip, holder, err)
	}
	if err := f.waitReachable(ctx, door, true, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("the reconcile repaired the pair; the door %s answers %s after the annotation", door, time.Since(start).Round(time.Millisecond))
	f.waitSucceeded(t, ctx, exp)
	// Port security drops the holder's answers for the VIP while its pair is gone, so a
	// follower may hear the VIP fall silent and take the Lease early: the VIP may rest on
	// another node afterwards, and exactly one must hold it.
	now, err := f.cluster.Net().WaitSingleHolder(ctx, nil)
	switch {
	case err != nil:
		t.Errorf("after the repair: no single holder: %v", err)
	case now != holder:
		t.Logf("the VIP moved from %s to %s while the pair was gone (a follower took the silent holder's Lease early)", holder, now)
	}
}

// TestRouterZDeleteExposure: deleting the exposure removes the floating IP and the VIP port
// from Neutron and the VIP from every node port's pairs; the floating IP answers no more.
// It runs last.
func TestRouterZDeleteExposure(t *testing.T) {
	f, ctx := scenario(t)
	_, st := f.deployed(t, ctx)
	f.checkDeleted(t, ctx, st)
}

// checkDeleted deletes the exposure and checks that nothing of it is left: no floating
// IP, no VIP port, no VIP in a node port's pairs, no agent DaemonSet, and no door answers.
func (f *frontDoor) checkDeleted(t *testing.T, ctx context.Context, st status) {
	t.Helper()
	exp := f.newExposure()
	if err := f.cl.Delete(ctx, exp); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(f.cl.Get(ctx, client.ObjectKeyFromObject(exp), exp)), nil
	}); err != nil {
		t.Fatalf("the exposure was not deleted: %v (%s)", err, f.controllerLog(ctx))
	}
	if st.fipID != "" {
		if _, err := f.neutron.GetFloatingIP(ctx, st.fipID); !openstack.IsNotFound(err) {
			t.Errorf("the floating IP %s is still in Neutron (get: %v)", st.fip, err)
		}
	}
	if _, err := f.neutron.GetPort(ctx, st.portID); !openstack.IsNotFound(err) {
		t.Errorf("the VIP port %s is still in Neutron (get: %v)", st.portID, err)
	}
	if left, err := f.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(f.identity)}}); err != nil || len(left) != 0 {
		t.Errorf("Neutron still holds %d ports of the exposure (%v)", len(left), err)
	}
	for _, n := range f.cluster.Net().Nodes() {
		p := f.portOf(t, ctx, n)
		for _, v := range st.vips {
			if openstack.HasPair(p, v) {
				t.Errorf("%s's port %s still has the VIP %s in its pairs: %+v", n, p.ID, v, p.AllowedAddressPairs)
			}
		}
	}
	if _, err := f.cluster.Client().AppsV1().DaemonSets(framework.Namespace).Get(ctx, agentrollout.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the agent DaemonSet is still there (get: %v)", err)
	}
	for _, door := range st.doors {
		if err := f.waitReachable(ctx, door, false, 30*time.Second); err != nil {
			t.Error(err)
		}
	}
}
