// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package dataplane_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// The IPv6-only and dual-stack front doors through the router: Neutron has no IPv6
// floating IPs, so the IPv6 VIP itself is the door, routed (not NATed) by the router to
// the holder, whose unsolicited neighbour advertisements the router's neighbour entry
// follows. Each scenario runs on the package's cluster with the shoot's ipFamilies and the
// Infrastructure's nodes-ipv6 subnet set, and leaves it as an IPv4 shoot without exposure.

// TestRouterIPv6Only: an IPv6-only exposure, create -> failovers -> pair repair -> delete.
func TestRouterIPv6Only(t *testing.T) {
	f, ctx := scenario(t)
	f.familyScenarios(t, ctx, []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv6})
}

// TestRouterDualStack: a dual-stack exposure (IPv4 first: the DNS value is the floating
// IP), create -> failovers -> pair repair of the IPv6 VIP -> delete; both VIPs move
// together.
func TestRouterDualStack(t *testing.T) {
	f, ctx := scenario(t)
	f.familyScenarios(t, ctx, []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv4, gardencorev1beta1.IPFamilyIPv6})
}

// familyScenarios walks an exposure of the families through the router. The failovers
// assert the IPv4 bounds for the graceful handover and the crash; the link-down outage is
// measured and logged ("not bounded"), as the IPv4 one also depends on etcd's election.
func (f *frontDoor) familyScenarios(t *testing.T, ctx context.Context, families []gardencorev1beta1.IPFamily) {
	f.useFamilies(t, ctx, families)
	holder, st := f.deployed(t, ctx)
	t.Logf("VIPs %v on %s, doors %v", st.vips, holder, st.doors)
	var vip6 string
	for _, v := range st.vips {
		if familyOf(t, v) == gardencorev1beta1.IPFamilyIPv6 {
			vip6 = v
		}
	}
	if vip6 == "" {
		t.Fatalf("the exposure has no IPv6 VIP: %v", st.vips)
	}

	var fromAnotherNode bool
	t.Run("create", func(t *testing.T) {
		f.checkCreated(t, ctx, holder, st)
		fromAnotherNode = f.checkIPv6Proof(t, ctx, vip6)
	})
	t.Run("graceful", func(t *testing.T) {
		f.failover(t, ctx, failoverCase{name: "leader's pod deleted", probeFor: 8 * time.Second, bound: fixed(gracefulBound),
			fault: f.deleteHolderPod(t, ctx), accept: otherNode})
		f.waitReady(t, ctx)
		// The VIP moved to another node, so the controller's node did not hold it at one
		// of the two checks at least.
		if !f.checkIPv6Proof(t, ctx, vip6) && !fromAnotherNode {
			t.Error("the IPv6 door was never proven from a node that does not hold it")
		}
	})
	t.Run("crash", func(t *testing.T) {
		f.failover(t, ctx, failoverCase{name: "leader's agent SIGKILLed", probeFor: 8 * time.Second, bound: fixed(crashBound),
			fault: f.killHolderAgent(t), accept: anyHolder})
		f.waitReady(t, ctx)
	})
	t.Run("link down", func(t *testing.T) {
		leader, _ := f.failover(t, ctx, failoverCase{name: "leader's link down", probeFor: 10 * time.Second,
			fault: cutHolderLink(t, ctx), accept: otherNode})
		f.relinked(t, ctx, leader, f.dp.ClientIP6)
	})
	t.Run("IPv6 pair removed by hand", func(t *testing.T) {
		f.repairsPair(t, ctx, vip6, vip6)
	})
	t.Run("delete", func(t *testing.T) {
		_, st := f.deployed(t, ctx)
		f.checkDeleted(t, ctx, st)
	})
}

// useFamilies removes the package's exposure, sets the shoot's ipFamilies and adds the
// node network's IPv6 subnet to the Infrastructure's status; the test's cleanup removes
// the families' exposure and puts both back.
func (f *frontDoor) useFamilies(t *testing.T, ctx context.Context, families []gardencorev1beta1.IPFamily) {
	t.Helper()
	if f.dp.OpenStack.Subnet6ID == "" || f.dp.ClientIP6 == "" {
		t.Skip("the dataplane has no IPv6 (an env file of an older hack/openstack.sh or hack/dataplane.sh)")
	}
	f.removeExposure()
	var restore func(context.Context) error
	f.withControllerStopped(t, func() error {
		var err error
		if restore, err = framework.AddInfrastructureSubnet(ctx, f.cl, exposure.PurposeNodesIPv6, f.dp.OpenStack.Subnet6ID, framework.NodeSubnet6CIDR); err != nil {
			return err
		}
		return framework.SetIPFamilies(ctx, f.cl, families)
	})
	t.Cleanup(func() {
		f.removeExposure()
		f.families = nil
		f.withControllerStopped(t, func() error {
			return errors.Join(framework.SetIPFamilies(context.Background(), f.cl, nil), restore(context.Background()))
		})
	})
	f.families = families
}

// withControllerStopped runs change (the shoot's ipFamilies, the Infrastructure) with the
// in-process controller stopped, and starts it again: its new cache is read from the API
// server before it reconciles. An exposure's families are fixed at its first reconciliation;
// one created right after the change could otherwise be reconciled on the old Cluster still
// in the running controller's cache (seen once in a CI-like run: an IPv6-only exposure got
// an IPv4 VIP).
func (f *frontDoor) withControllerStopped(t *testing.T, change func() error) {
	t.Helper()
	f.stopController()
	err := change()
	if startErr := f.startController(); startErr != nil {
		t.Fatalf("starting the controller again: %v", startErr)
	}
	if err != nil {
		t.Fatalf("changing the shoot's ipFamilies and the Infrastructure: %v", err)
	}
}

// checkIPv6Proof: the VIPHeld message says how the controller's dial, from the first node,
// proved the IPv6 door: across the node network while another node holds the VIP, locally
// on the holder otherwise. It returns whether another node held it.
func (f *frontDoor) checkIPv6Proof(t *testing.T, ctx context.Context, vip6 string) (fromAnotherNode bool) {
	t.Helper()
	holder, err := f.cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	self := f.cluster.Net().Nodes()[0].Name()
	want := fmt.Sprintf("The IPv6 door %s was reached from node %q, across the node network to the holder", hostPort(vip6), self)
	if holder.Name() == self {
		want = fmt.Sprintf("The IPv6 door %s was reached on node %q, which holds it, so locally only", hostPort(vip6), self)
	}
	var said string
	// The controller re-reads the agents every second (AgentRefreshInterval).
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		var exp extensionsv1alpha1.SelfHostedShootExposure
		if err := f.cl.Get(ctx, client.ObjectKeyFromObject(f.newExposure()), &exp); err != nil {
			return false, nil //nolint:nilerr // retried
		}
		ps, err := exposure.DecodeStatus(&exp)
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(ps.Conditions, v1alpha1.ConditionVIPHeld)
		if c == nil {
			return false, nil
		}
		said = c.Message
		return ps.Agent != nil && ps.Agent.LeaseHolder == holder.Name() && c.Status == metav1.ConditionTrue && strings.Contains(said, want), nil
	})
	if err != nil {
		t.Errorf("with %s holding the VIP, VIPHeld says %q, want it to say %q: %v", holder.Name(), said, want, err)
	}
	t.Logf("%s holds the VIP; VIPHeld says: %s", holder.Name(), said)
	return holder.Name() != self
}
