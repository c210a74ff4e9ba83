// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package dataplane_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	exp, _ := f.exposed(t, ctx)
	t.Logf("VIP %s on %s, floating IP %s", st.vip, holder, st.fip)
	if st.vip != f.cluster.Net().VIP().String() {
		t.Errorf("VIP %s, want %s", st.vip, f.cluster.Net().VIP())
	}
	if got := exp.Status.Ingress[0].IP; got != st.fip || st.fip == "" {
		t.Errorf("ingress %s, want the floating IP %s", got, st.fip)
	}
	fips, err := f.neutron.FloatingIPsOfPort(ctx, st.portID)
	if err != nil {
		t.Fatal(err)
	}
	if len(fips) != 1 || fips[0].FloatingIP != st.fip || fips[0].FloatingNetworkID != f.dp.OpenStack.ExternalNetworkID {
		t.Errorf("floating IPs of the VIP port %s: %+v, want %s on the external network", st.portID, fips, st.fip)
	}
	for _, n := range f.cluster.Net().Nodes() {
		if p := f.portOf(t, ctx, n); !openstack.HasPair(p, st.vip) {
			t.Errorf("%s's port %s has pairs %+v, want the VIP %s", n, p.ID, p.AllowedAddressPairs, st.vip)
		}
	}
	if err := f.httpsReadyz(ctx, hostPort(st.fip), st.vip); err != nil {
		t.Errorf("https://%s/readyz from the external client: %v", hostPort(st.fip), err)
	}
	if f.reaches(ctx, hostPort(st.vip)) {
		t.Errorf("the external client reaches the VIP %s directly; its only way in must be the floating IP", st.vip)
	}
	f.checkRouterFollows(t, ctx, st.vip, holder)
	res := f.probe(t, ctx, st.fip, time.Second).Wait()
	if res.Failures > 0 {
		t.Errorf("%d of %d probes of the floating IP failed in the steady state", res.Failures, res.Probes)
	}
}

// failover runs fault against the holder while probing the floating IP for d, checks the
// outage against bound and that the router's neighbour entry follows the new holder; it
// returns the old and the new holder.
func (f *frontDoor) failover(t *testing.T, ctx context.Context, name string, d time.Duration, bound func(leader *netns.Node) time.Duration, fault func(leader *netns.Node), accept func(old, n *netns.Node) bool) (old, holder *netns.Node) {
	t.Helper()
	leader, st := f.deployed(t, ctx)
	limit := bound(leader)
	p := f.probe(t, ctx, st.fip, d)
	time.Sleep(500 * time.Millisecond)
	fault(leader)
	netns.CheckOutage(t, name+" (through the floating IP)", p.Wait(), limit)
	holder, err := f.cluster.Net().WaitSingleHolder(ctx, func(n *netns.Node) bool { return accept(leader, n) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: the VIP moved from %s to %s", name, leader, holder)
	f.checkRouterFollows(t, ctx, st.vip, holder)
	return leader, holder
}

// fixed is a bound that does not depend on the leader.
func fixed(d time.Duration) func(*netns.Node) time.Duration {
	return func(*netns.Node) time.Duration { return d }
}

func anyHolder(_, _ *netns.Node) bool   { return true }
func otherNode(old, n *netns.Node) bool { return n != old }

// TestRouterGracefulHandover: deleting the leader's pod stops its agent with SIGTERM.
func TestRouterGracefulHandover(t *testing.T) {
	f, ctx := scenario(t)
	f.failover(t, ctx, "leader's pod deleted", 8*time.Second, fixed(gracefulBound), func(leader *netns.Node) {
		pod := f.leaderPod(t, ctx, leader.Name())
		if err := f.cluster.Client().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}, otherNode)
	f.waitReady(t, ctx)
}

// TestRouterLeaderCrash: SIGKILL to the leader's agent process; the kubelet restarts it.
func TestRouterLeaderCrash(t *testing.T) {
	f, ctx := scenario(t)
	f.failover(t, ctx, "leader's agent SIGKILLed", 8*time.Second, fixed(crashBound), func(leader *netns.Node) {
		agents, err := f.cluster.Node(leader.Name()).Processes("kube-vip-agent")
		if err != nil || len(agents) != 1 {
			t.Fatalf("agent process on %s: %v (%d found)", leader, err, len(agents))
		}
		if err := syscall.Kill(agents[0].PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}, anyHolder) // the restarted agent may win the Lease back
	f.waitReady(t, ctx)
}

// TestRouterLeaderLinkDown: the leader's NIC goes down inside the node, as a cut cable.
func TestRouterLeaderLinkDown(t *testing.T) {
	f, ctx := scenario(t)
	leader, _ := f.failover(t, ctx, "leader's link down", 8*time.Second, func(leader *netns.Node) time.Duration {
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
	}, func(leader *netns.Node) {
		if err := leader.LinkDown(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = leader.LinkUp(context.Background()) })
	}, otherNode)
	if err := leader.LinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	// Back on the network, the node must have its way out (the default route) again, or
	// the floating IP dies the next time it holds the VIP.
	if _, err := leader.Run(ctx, "ping", "-c", "1", "-W", "2", f.dp.ClientIP); err != nil {
		routes, _ := leader.Run(ctx, "ip", "route")
		t.Errorf("%s cannot reach %s through the router after its link came back: %v; routes:\n%s", leader, f.dp.ClientIP, err, routes)
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
	leader, _ := f.failover(t, ctx, "leader's kube-apiserver killed", 10*time.Second, fixed(apiserverBound), func(leader *netns.Node) {
		leader.KillAPIServer()
	}, otherNode)
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
	holder, st := f.deployed(t, ctx)
	port := f.portOf(t, ctx, holder)
	start := time.Now()
	if _, err := f.neutron.RemovePairFromPort(ctx, port, st.vip); err != nil {
		t.Fatal(err)
	}
	if err := f.waitReachable(ctx, st.fip, false, 30*time.Second); err != nil {
		t.Fatalf("after removing the pair from %s's port: %v", holder, err)
	}
	t.Logf("pair removed from %s's port %s: the floating IP is dead after %s", holder, port.ID, time.Since(start).Round(time.Millisecond))

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
		return err == nil && openstack.HasPair(p, st.vip), nil
	}); err != nil {
		t.Fatalf("the controller did not put the VIP back into %s's port after a reconcile: %v", holder, err)
	}
	if err := f.waitReachable(ctx, st.fip, true, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("the reconcile repaired the pair; the floating IP answers %s after the annotation", time.Since(start).Round(time.Millisecond))
	f.waitSucceeded(t, ctx, exp)
	if now, err := f.cluster.Net().WaitSingleHolder(ctx, nil); err != nil || now != holder {
		t.Errorf("the VIP moved during the repair: holder %v (%v), was %s", now, err, holder)
	}
}

// TestRouterZDeleteExposure: deleting the exposure removes the floating IP and the VIP port
// from Neutron and the VIP from every node port's pairs; the floating IP answers no more.
// It runs last.
func TestRouterZDeleteExposure(t *testing.T) {
	f, ctx := scenario(t)
	_, st := f.deployed(t, ctx)
	exp := f.newExposure()
	if err := f.cl.Delete(ctx, exp); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(f.cl.Get(ctx, client.ObjectKeyFromObject(exp), exp)), nil
	}); err != nil {
		t.Fatalf("the exposure was not deleted: %v (controller log in %s)", err, f.ctrlLog)
	}
	if _, err := f.neutron.GetFloatingIP(ctx, st.fipID); !openstack.IsNotFound(err) {
		t.Errorf("the floating IP %s is still in Neutron (get: %v)", st.fip, err)
	}
	if _, err := f.neutron.GetPort(ctx, st.portID); !openstack.IsNotFound(err) {
		t.Errorf("the VIP port %s is still in Neutron (get: %v)", st.portID, err)
	}
	for _, n := range f.cluster.Net().Nodes() {
		if p := f.portOf(t, ctx, n); openstack.HasPair(p, st.vip) {
			t.Errorf("%s's port %s still has the VIP in its pairs: %+v", n, p.ID, p.AllowedAddressPairs)
		}
	}
	if _, err := f.cluster.Client().AppsV1().DaemonSets(framework.Namespace).Get(ctx, agentrollout.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the agent DaemonSet is still there (get: %v)", err)
	}
	if err := f.waitReachable(ctx, st.fip, false, 30*time.Second); err != nil {
		t.Error(err)
	}
}
