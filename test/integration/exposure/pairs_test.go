// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
)

// TestVerificationLeavesOthersPairs: a port of the network that is no control-plane node's
// and carries the VIP pair for its own reasons keeps it through a verification, and a
// user's pair for the VIP with another MAC on a node port is neither rewritten nor taken
// for the extension's own.
func TestVerificationLeavesOthersPairs(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, nodes, status, identity := frontDoor(t, ctx, e, 3)
	vip := status.VIPAddress

	bystander, err := ports.Create(ctx, e.neutron.ServiceClient(), ports.CreateOpts{NetworkID: e.os.NetworkID, Name: identity + "-bystander",
		FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID}}, AllowedAddressPairs: []ports.AddressPair{{IPAddress: vip}}}).Extract()
	if err != nil {
		t.Fatalf("creating the bystander port: %v", err)
	}
	t.Cleanup(func() { _ = e.neutron.DeletePort(context.Background(), bystander.ID) })

	users := ports.AddressPair{IPAddress: vip + "/32", MACAddress: "fa:16:3e:00:be:ef"}
	node, err := e.neutron.GetPort(ctx, nodes[0].port)
	if err != nil {
		t.Fatal(err)
	}
	withUsers := append(slices.Clone(node.AllowedAddressPairs), users)
	if _, err := ports.Update(ctx, e.neutron.ServiceClient(), node.ID, ports.UpdateOpts{AllowedAddressPairs: &withUsers}).Extract(); err != nil {
		t.Fatalf("adding the user's pair to the node port: %v", err)
	}

	triggerReconcile(t, ctx, e, exp, nil)()
	if !hasVIPPair(t, ctx, e, bystander.ID, vip) {
		t.Error("the verification removed the VIP pair from a port that is no control-plane node's")
	}
	checkPairs(t, ctx, e, nodes[1:], vip, true)
	after, err := e.neutron.GetPort(ctx, node.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(after.AllowedAddressPairs, users) || !hasVIPPair(t, ctx, e, node.ID, vip) {
		t.Errorf("the node port's pairs %v, want the user's %v beside the VIP's", after.AllowedAddressPairs, users)
	}
}

// TestNoControlPlaneNodeKeepsThePairs: with the control-plane label stripped from every Node
// (a tool, the last node being replaced), the node tracker's sync and a reconcile see no
// control-plane Node; both leave the recorded node ports and their VIP pairs as they are,
// since taking them would black-hole the front door.
func TestNoControlPlaneNodeKeepsThePairs(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 2)
	ctl := startController(t, e)
	exp := newExposure(exposureOptions{name: identity, nodes: nodes})
	create(t, ctx, e, exp, identity)
	status, err := exposure.DecodeStatus(waitFor(t, ctx, e, exp, "success", succeeded))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		setControlPlane(t, ctx, e, n.name, false)
	}
	check := func(step string, exp *extensionsv1alpha1.SelfHostedShootExposure) {
		t.Helper()
		after, err := exposure.DecodeStatus(exp)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(after.NodePorts, status.NodePorts) {
			t.Errorf("%s: status.nodePorts %v, want %v", step, after.NodePorts, status.NodePorts)
		}
		checkPairs(t, ctx, e, nodes, status.VIPAddress, true)
	}

	current := ctl.syncNodePairs(t, ctx, e, exp)
	check("after the node tracker's sync", current)
	check("after a reconcile", triggerReconcile(t, ctx, e, exp, nil)())
}
