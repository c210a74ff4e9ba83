// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

const exposureConfigHead = `"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig"`

// TestUserFloatingIPSurvivesLostStatus: a pre-allocated floating IP on the VIP port is only
// disassociated by the deletion, even when the status is lost and the provider config that
// named it is unreadable.
func TestUserFloatingIPSurvivesLostStatus(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 1)
	fip, err := floatingips.Create(ctx, e.neutron.ServiceClient(), floatingips.CreateOpts{FloatingNetworkID: e.os.ExternalNetworkID, Description: "the user's " + identity}).Extract()
	if err != nil {
		t.Fatalf("pre-allocating floating IP: %v", err)
	}
	t.Cleanup(func() { _ = e.neutron.DeleteFloatingIP(context.Background(), fip.ID) })
	startController(t, e)

	exp := newExposure(exposureOptions{name: identity, nodes: nodes,
		providerConfig: fmt.Sprintf(`{%s,"floatingIP":%q}`, exposureConfigHead, fip.FloatingIP)})
	create(t, ctx, e, exp, identity)
	got := waitFor(t, ctx, e, exp, "ingress", succeeded)
	if got.Status.Ingress[0].IP != fip.FloatingIP {
		t.Fatalf("ingress %v, want the adopted %s", got.Status.Ingress, fip.FloatingIP)
	}

	// The config becomes unreadable (the reconciliation fails on it) and the status is lost.
	triggerReconcile(t, ctx, e, exp, func(x *extensionsv1alpha1.SelfHostedShootExposure) {
		x.Spec.ProviderConfig = &runtime.RawExtension{Raw: fmt.Appendf(nil, `{%s,"floatingIPs":%q}`, exposureConfigHead, fip.FloatingIP)}
	})
	current := waitFor(t, ctx, e, exp, "the config error", failedReconcile)
	patch := client.MergeFrom(current.DeepCopy())
	current.Status.ProviderStatus = nil
	if err := e.cp.Client.Status().Patch(ctx, current, patch); err != nil {
		t.Fatal(err)
	}

	deleteKeepsFloatingIP(t, ctx, e, exp, fip.ID)
}

// withBystander creates an exposure with a floating IP the extension allocates and a
// bystander port (no node) that carries the VIP pair for its own reasons, in the form the
// extension writes (the bare address, no MAC). It returns the exposure's status and the
// bystander port.
func withBystander(t *testing.T, ctx context.Context, e *sharedEnv) (exp *extensionsv1alpha1.SelfHostedShootExposure, nodes []nodeFixture, status *v1alpha1.ExposureStatus, bystander string) {
	t.Helper()
	exp, nodes, status, identity := frontDoor(t, ctx, e, 2)
	checkPairs(t, ctx, e, nodes, status.VIPAddress, true)

	pairs := []ports.AddressPair{{IPAddress: status.VIPAddress}}
	p, err := ports.Create(ctx, e.neutron.ServiceClient(), ports.CreateOpts{NetworkID: e.os.NetworkID, Name: identity + "-bystander",
		FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID}}, AllowedAddressPairs: pairs}).Extract()
	if err != nil {
		t.Fatalf("creating the bystander port: %v", err)
	}
	t.Cleanup(func() { _ = e.neutron.DeletePort(context.Background(), p.ID) })
	return exp, nodes, status, p.ID
}

// vanishedPort is withBystander, and then the VIP port is deleted behind the controller's
// back. It returns the nodes, the VIP, the floating IP ID and the bystander port.
func vanishedPort(t *testing.T, ctx context.Context, e *sharedEnv) (exp *extensionsv1alpha1.SelfHostedShootExposure, nodes []nodeFixture, vip, fipID, bystander string) {
	t.Helper()
	exp, nodes, status, bystander := withBystander(t, ctx, e)
	if err := e.neutron.DeletePort(ctx, status.PortID); err != nil {
		t.Fatalf("deleting the VIP port behind the controller's back: %v", err)
	}
	return exp, nodes, status.VIPAddress, status.FloatingIPID, bystander
}

// TestDeleteLeavesABystandersPair: deleting an exposure removes the VIP pair from the node
// ports it put it on, and leaves the same pair on a port that is no control-plane node's.
func TestDeleteLeavesABystandersPair(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, nodes, status, bystander := withBystander(t, ctx, e)

	deleteAndWait(t, ctx, e, exp)
	checkPairs(t, ctx, e, nodes, status.VIPAddress, false)
	if !hasVIPPair(t, ctx, e, bystander, status.VIPAddress) {
		t.Error("the deletion removed the VIP pair from a port that is no control-plane node's")
	}
}

// TestDeleteLeavesABoundVIPPortAlone: someone bound the VIP port to a server (as
// OpenStack lets an admin do). Deleting the exposure leaves the port and its floating IP
// to that server, and removes the exposure nonetheless.
func TestDeleteLeavesABoundVIPPortAlone(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, _, _, identity := frontDoor(t, ctx, e, 1)
	door := readFrontDoor(t, ctx, e, waitFor(t, ctx, e, exp, "ingress", succeeded))
	t.Cleanup(func() { forceCleanup(context.Background(), e, identity) })

	owner, device := "compute:nova", "server-"+identity
	if _, err := ports.Update(ctx, e.neutron.ServiceClient(), door.portID, ports.UpdateOpts{DeviceOwner: &owner, DeviceID: &device}).Extract(); err != nil {
		t.Fatalf("binding the VIP port: %v", err)
	}
	deleteAndWait(t, ctx, e, exp)
	port, err := e.neutron.GetPort(ctx, door.portID)
	if err != nil {
		t.Fatalf("the bound VIP port after the deletion: %v", err)
	}
	if port.DeviceID != device {
		t.Errorf("the VIP port's device %q, want %s", port.DeviceID, device)
	}
	if fips := floatingIPsOfPort(t, ctx, e, door.portID); len(fips) != 1 || fips[0].ID != door.fipID {
		t.Errorf("the bound port's floating IPs %+v, want %s kept", fips, door.fip)
	}
}

func deleteAndWait(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) {
	t.Helper()
	if err := e.cp.Client.Delete(ctx, exp); err != nil {
		t.Fatal(err)
	}
	if err := waitGone(ctx, e, exp); err != nil {
		t.Fatal(err)
	}
}

func hasVIPPair(t *testing.T, ctx context.Context, e *sharedEnv, portID, vip string) bool {
	t.Helper()
	p, err := e.neutron.GetPort(ctx, portID)
	if err != nil {
		t.Fatalf("reading port %s: %v", portID, err)
	}
	return openstack.HasPair(p, vip)
}

// TestVanishedPortCleanup: when the VIP port is gone, the deletion still releases the
// floating IP the extension allocated and removes the pair from the node ports, but not
// from a port that is no control-plane node's.
func TestVanishedPortCleanup(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, nodes, vip, fipID, bystander := vanishedPort(t, ctx, e)

	deleteAndWait(t, ctx, e, exp)
	if _, err := e.neutron.GetFloatingIP(ctx, fipID); !openstack.IsNotFound(err) {
		t.Errorf("the floating IP of the vanished VIP port is left behind (err %v)", err)
		_ = e.neutron.DeleteFloatingIP(context.Background(), fipID)
	}
	checkPairs(t, ctx, e, nodes, vip, false)
	if !hasVIPPair(t, ctx, e, bystander, vip) {
		t.Error("the deletion removed the VIP pair from a port that is no control-plane node's")
	}
}

// TestReassignedVIPLeavesPairsAlone: when Neutron has given the VIP address to another port
// after the VIP port vanished, the deletion touches no allowed address pair.
func TestReassignedVIPLeavesPairsAlone(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, nodes, vip, fipID, bystander := vanishedPort(t, ctx, e)
	t.Cleanup(func() { _ = e.neutron.DeleteFloatingIP(context.Background(), fipID) })

	holder, err := ports.Create(ctx, e.neutron.ServiceClient(), ports.CreateOpts{NetworkID: e.os.NetworkID, Name: exp.Name + "-new-owner",
		FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID, IPAddress: vip}}}).Extract()
	if err != nil {
		t.Fatalf("giving the VIP address to another port: %v", err)
	}
	t.Cleanup(func() { _ = e.neutron.DeletePort(context.Background(), holder.ID) })

	deleteAndWait(t, ctx, e, exp)
	checkPairs(t, ctx, e, nodes, vip, true)
	if !hasVIPPair(t, ctx, e, bystander, vip) {
		t.Error("the deletion removed the pair of the address's new owner's neighbour")
	}
}

// TestReassignedVIPStopsTheNodesAnsweringForIt: the VIP port vanished and Neutron gave its
// address to another port (a VM's, say). The reconciliation reports the holder with
// ERR_INFRA_DEPENDENCIES, and takes the VIP pair from the node ports and the pair label
// from the nodes, so that no agent runs and port security drops any answer for the
// address: the cluster no longer fights the new owner for it. A bystander's pair stays.
// Once the address is free again, the VIP port comes back on it with the floating IP, and
// the pairs and labels return.
func TestReassignedVIPStopsTheNodesAnsweringForIt(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, nodes, vip, fipID, bystander := vanishedPort(t, ctx, e)
	before := waitFor(t, ctx, e, exp, "ingress", succeeded)

	holder, err := ports.Create(ctx, e.neutron.ServiceClient(), ports.CreateOpts{NetworkID: e.os.NetworkID, Name: exp.Name + "-new-owner",
		FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID, IPAddress: vip}}}).Extract()
	if err != nil {
		t.Fatalf("giving the VIP address to another port: %v", err)
	}
	holderGone := false
	t.Cleanup(func() {
		if !holderGone {
			_ = e.neutron.DeletePort(context.Background(), holder.ID)
		}
	})

	triggerReconcile(t, ctx, e, exp, nil)
	failed := waitForError(t, ctx, e, exp, gardencorev1beta1.ErrorInfraDependencies)
	if !strings.Contains(failed.Status.LastError.Description, holder.ID) {
		t.Errorf("lastError %q does not name the holder %s", failed.Status.LastError.Description, holder.ID)
	}
	if st := providerStatus(t, failed); st.VIPHeldBy != holder.ID || st.VIPAddress != vip || len(st.NodePorts) != 0 {
		t.Errorf("status: held by %q, VIP %s, node ports %v; want held by %s, VIP %s, no node ports", st.VIPHeldBy, st.VIPAddress, st.NodePorts, holder.ID, vip)
	}
	checkPairs(t, ctx, e, nodes, vip, false)
	checkPairLabels(t, ctx, e, nodes, vip, false)
	if !hasVIPPair(t, ctx, e, bystander, vip) {
		t.Error("the bystander's VIP pair was removed")
	}

	if err := e.neutron.DeletePort(ctx, holder.ID); err != nil {
		t.Fatalf("freeing the address: %v", err)
	}
	holderGone = true
	again := triggerReconcile(t, ctx, e, exp, nil)()
	st := providerStatus(t, again)
	if st.VIPAddress != vip || st.VIPHeldBy != "" || st.FloatingIPID != fipID || again.Status.Ingress[0].IP != before.Status.Ingress[0].IP {
		t.Errorf("after the address was freed: VIP %s held by %q floating IP %s ingress %v; want %s, nobody, %s, %v", st.VIPAddress, st.VIPHeldBy, st.FloatingIPID, again.Status.Ingress, vip, fipID, before.Status.Ingress)
	}
	checkPairs(t, ctx, e, nodes, vip, true)
	checkPairLabels(t, ctx, e, nodes, vip, true)
}

// checkPairLabels fails unless each node has (want) or lacks the pair label of vip.
func checkPairLabels(t *testing.T, ctx context.Context, e *sharedEnv, nodes []nodeFixture, vip string, want bool) {
	t.Helper()
	for _, n := range nodes {
		node := &corev1.Node{}
		if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: n.name}, node); err != nil {
			t.Fatal(err)
		}
		if has := node.Labels[agentrollout.PairLabel] == agentrollout.PairLabelValue(vip); has != want {
			t.Errorf("node %s has the pair label %v, want %v (labels %v)", n.name, has, want, node.Labels)
		}
	}
}

// TestUntaggedPortIsAdoptedAndVIPImmutable: an unbound, untagged port with the cluster's
// port name (a create whose response or tagging was lost) is taken as the VIP port and
// tagged, not duplicated; a later change of vipAddress is a configuration error and leaves
// the port's address alone.
func TestUntaggedPortIsAdoptedAndVIPImmutable(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 1)
	leftover, err := ports.Create(ctx, e.neutron.ServiceClient(), ports.CreateOpts{NetworkID: e.os.NetworkID, Name: "kube-vip-" + identity,
		FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID}}}).Extract()
	if err != nil {
		t.Fatalf("creating the untagged port: %v", err)
	}
	t.Cleanup(func() { _ = e.neutron.DeletePort(context.Background(), leftover.ID) })
	startController(t, e)

	exp := newExposure(exposureOptions{name: identity, nodes: nodes, providerConfig: fmt.Sprintf(`{%s,"internalOnly":true}`, exposureConfigHead)})
	create(t, ctx, e, exp, identity)
	got := waitFor(t, ctx, e, exp, "ingress", succeeded)
	status, _ := exposure.DecodeStatus(got)
	if status.PortID != leftover.ID {
		t.Errorf("VIP port %s, want the adopted untagged port %s", status.PortID, leftover.ID)
	}
	named, err := e.neutron.ListPorts(ctx, openstack.PortFilter{Name: "kube-vip-" + identity})
	if err != nil {
		t.Fatal(err)
	}
	if len(named) != 1 || !slices.Contains(named[0].Tags, openstack.ClusterTag(identity)) {
		t.Fatalf("ports named kube-vip-%s: %d (tags of the first: %v), want exactly one, tagged", identity, len(named), named[0].Tags)
	}

	other := freeAddress(t, ctx, e)
	triggerReconcile(t, ctx, e, exp, func(x *extensionsv1alpha1.SelfHostedShootExposure) {
		x.Spec.ProviderConfig = &runtime.RawExtension{Raw: fmt.Appendf(nil, `{%s,"internalOnly":true,"vipAddress":%q}`, exposureConfigHead, other)}
	})
	failed := waitFor(t, ctx, e, exp, "the rejected VIP change", failedReconcile)
	if codes := failed.Status.LastError.Codes; !slices.Contains(codes, gardencorev1beta1.ErrorConfigurationProblem) {
		t.Errorf("lastError codes %v, want %s: %s", codes, gardencorev1beta1.ErrorConfigurationProblem, failed.Status.LastError.Description)
	}
	p, err := e.neutron.GetPort(ctx, leftover.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := openstack.PortAddress(p, ""); got != status.VIPAddress {
		t.Errorf("the VIP port's address changed from %s to %s", status.VIPAddress, got)
	}
	checkPairs(t, ctx, e, nodes, status.VIPAddress, true)
}

// failedReconcile: the reconciliation of the current generation has failed.
func failedReconcile(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
	lo := x.Status.LastOperation
	return x.Status.LastError != nil && lo != nil && lo.State != gardencorev1beta1.LastOperationStateSucceeded && x.Status.ObservedGeneration == x.Generation
}
