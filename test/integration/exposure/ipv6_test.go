// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	extensionsv1alpha1helper "github.com/gardener/gardener/pkg/api/extensions/v1alpha1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestIPv6AndDualStackFrontDoors: on the dual-stack local Neutron, with the Infrastructure
// naming the node network's IPv6 subnet (purpose nodes-ipv6), an IPv6-only shoot's exposure
// gets a VIP port with one IPv6 fixed IP, no floating IP, and the IPv6 VIP in
// status.ingress; a dual-stack shoot's (each ipFamilies order) gets one fixed IP per
// family, the floating IP on the IPv4 one, both VIPs as pairs on the node ports, and
// status.ingress in the shoot's order, so that Gardener's DNSValuesFromIngress gives the
// first family's door. A removed IPv6 pair is put back; the deletion leaves no port, no
// floating IP and no VIP pair.
func TestIPv6AndDualStackFrontDoors(t *testing.T) {
	e := ipv6Env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	withIPv6Subnet(t, ctx, e)
	startController(t, e)
	v4, v6 := gardencorev1beta1.IPFamilyIPv4, gardencorev1beta1.IPFamilyIPv6
	for _, families := range [][]gardencorev1beta1.IPFamily{{v6}, {v4, v6}, {v6, v4}} {
		t.Run(fmt.Sprint(families), func(t *testing.T) {
			setIPFamilies(t, ctx, e, families)
			identity := useIdentity(t, ctx, e)
			nodes := createDualStackNodes(t, ctx, e, identity, 2, slices.Contains(families, v4))
			exp := newExposure(exposureOptions{name: identity, nodes: nodes})
			create(t, ctx, e, exp, identity)
			got := waitFor(t, ctx, e, exp, "Succeeded", succeeded)
			status, err := exposure.DecodeStatus(got)
			if err != nil {
				t.Fatal(err)
			}
			vips := []string{status.VIPAddress}
			for _, v := range status.OtherVIPs {
				vips = append(vips, v.Address)
			}
			byFamily := map[gardencorev1beta1.IPFamily]string{}
			for _, v := range vips {
				a := netip.MustParseAddr(v)
				f := v4
				if a.Is6() {
					f = v6
				}
				byFamily[f] = v
			}
			if len(vips) != len(families) || len(byFamily) != len(families) {
				t.Fatalf("VIPs %v, want one per family of %v", vips, families)
			}
			port, err := e.neutron.GetPort(ctx, status.PortID)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vips {
				if !openstack.HasFixedIP(port, v) {
					t.Errorf("VIP port fixed IPs %v lack %s", port.FixedIPs, v)
				}
			}
			fips := floatingIPsOfPort(t, ctx, e, port.ID)
			wantDoor := map[gardencorev1beta1.IPFamily]string{v6: byFamily[v6]}
			if slices.Contains(families, v4) {
				if len(fips) != 1 || fips[0].FixedIP != byFamily[v4] {
					t.Fatalf("floating IPs %+v, want one on the IPv4 VIP %s", fips, byFamily[v4])
				}
				wantDoor[v4] = fips[0].FloatingIP
			} else if len(fips) != 0 {
				t.Errorf("an IPv6-only exposure has floating IPs %+v", fips)
			}
			var ingress []string
			for _, in := range got.Status.Ingress {
				ingress = append(ingress, in.IP)
			}
			var want []string
			for _, f := range families {
				want = append(want, wantDoor[f])
			}
			if !slices.Equal(ingress, want) {
				t.Errorf("status.ingress %v, want %v", ingress, want)
			}
			values, _, err := extensionsv1alpha1helper.DNSValuesFromIngress(got.Status.Ingress, families)
			if err != nil || !slices.Equal(values, []string{wantDoor[families[0]]}) {
				t.Errorf("DNSValuesFromIngress(%v) = %v (%v), want [%s]", families, values, err, wantDoor[families[0]])
			}
			for _, n := range nodes {
				p, err := e.neutron.GetPort(ctx, n.port)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range vips {
					if !openstack.HasPair(p, v) {
						t.Errorf("node port %s pairs %v lack %s", n.port, p.AllowedAddressPairs, v)
					}
				}
			}

			// Drift: the IPv6 pair removed out of band comes back on the next verification.
			p, err := e.neutron.GetPort(ctx, nodes[0].port)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.neutron.RemovePairFromPort(ctx, p, byFamily[v6]); err != nil {
				t.Fatal(err)
			}
			triggerReconcile(t, ctx, e, exp, nil)()
			if p, err = e.neutron.GetPort(ctx, nodes[0].port); err != nil || !openstack.HasPair(p, byFamily[v6]) {
				t.Errorf("after the repair node port pairs %v (%v), want %s", p.AllowedAddressPairs, err, byFamily[v6])
			}

			// Deletion: nothing of the exposure is left, the node ports keep no VIP pair.
			if err := e.cp.Client.Delete(ctx, exp); err != nil {
				t.Fatal(err)
			}
			if err := waitGone(ctx, e, exp); err != nil {
				t.Fatal(err)
			}
			if left := taggedPorts(t, ctx, e, identity); len(left) != 0 {
				t.Errorf("%d VIP ports left", len(left))
			}
			if _, err := e.neutron.GetPort(ctx, port.ID); !openstack.IsNotFound(err) {
				t.Errorf("the VIP port %s: %v, want it gone", port.ID, err)
			}
			for _, f := range fips {
				if _, err := e.neutron.GetFloatingIP(ctx, f.ID); !openstack.IsNotFound(err) {
					t.Errorf("the floating IP %s: %v, want it released", f.FloatingIP, err)
				}
			}
			for _, n := range nodes {
				p, err := e.neutron.GetPort(ctx, n.port)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range vips {
					if openstack.HasPair(p, v) {
						t.Errorf("node port %s keeps the pair %s", n.port, v)
					}
				}
			}
		})
	}
}

// createDualStackNodes creates n node ports with an IPv6 fixed IP (and an IPv4 one when
// withIPv4) and control-plane Nodes with these InternalIPs, IPv6 first, so that the
// controller has to use every InternalIP.
func createDualStackNodes(t *testing.T, ctx context.Context, e *sharedEnv, id string, n int, withIPv4 bool) []nodeFixture {
	t.Helper()
	var nodes []nodeFixture
	for i := range n {
		name := fmt.Sprintf("%s-cp-%d", id, i)
		fixed := []ports.IP{{SubnetID: e.os.Subnet6ID}}
		if withIPv4 {
			fixed = append(fixed, ports.IP{SubnetID: e.os.SubnetID})
		}
		p := createNodePort(t, ctx, e, ports.CreateOpts{NetworkID: e.os.NetworkID, Name: name, DeviceOwner: "compute:nova", DeviceID: name, FixedIPs: fixed})
		node := &corev1.Node{}
		node.Name, node.Labels = name, map[string]string{exposure.LabelControlPlane: ""}
		if err := e.cp.Client.Create(ctx, node); err != nil {
			t.Fatalf("creating Node: %v", err)
		}
		t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), node) })
		var v6ip string
		for _, ip := range p.FixedIPs {
			if netip.MustParseAddr(ip.IPAddress).Is6() {
				v6ip = ip.IPAddress
				node.Status.Addresses = append([]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip.IPAddress}}, node.Status.Addresses...)
			} else {
				node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.IPAddress})
			}
		}
		if err := e.cp.Client.Status().Update(ctx, node); err != nil {
			t.Fatalf("setting Node addresses: %v", err)
		}
		nodes = append(nodes, nodeFixture{name: name, ip: v6ip, port: p.ID})
	}
	return nodes
}

// setIPFamilies sets spec.networking.ipFamilies of the Cluster's shoot for the test.
func setIPFamilies(t *testing.T, ctx context.Context, e *sharedEnv, families []gardencorev1beta1.IPFamily) {
	t.Helper()
	if err := framework.SetIPFamilies(ctx, e.cp.Client, families); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := framework.SetIPFamilies(context.Background(), e.cp.Client, nil); err != nil {
			t.Errorf("restoring the shoot's ipFamilies: %v", err)
		}
	})
}

// ipv6Env is env(t) for a test that needs the node network's IPv6 subnet.
func ipv6Env(t *testing.T) *sharedEnv {
	t.Helper()
	e := env(t)
	if e.os.Subnet6ID == "" {
		t.Skip("the local Neutron has no IPv6 node subnet (an env file of an older hack/openstack.sh)")
	}
	return e
}

// withIPv6Subnet adds the node network's IPv6 subnet (purpose nodes-ipv6) to the shared
// Infrastructure's status for the test, as provider-openstack reports a dual-stack shoot's.
func withIPv6Subnet(t *testing.T, ctx context.Context, e *sharedEnv) {
	t.Helper()
	restore, err := framework.AddInfrastructureSubnet(ctx, e.cp.Client, exposure.PurposeNodesIPv6, e.os.Subnet6ID, framework.NodeSubnet6CIDR)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restore(context.Background()); err != nil {
			t.Errorf("restoring the Infrastructure status: %v", err)
		}
	})
}

// TestShootMigratedToDualStackKeepsItsDoor: an IPv4 shoot whose ipFamilies gain IPv6 after
// its front door was published (Gardener's IPv4 to dual-stack migration) keeps the door it
// has: the next reconciliation succeeds with the same ingress and the same VIP port, adds
// no IPv6 VIP that no DNS record would ever name, and says so in an IPFamilyNotAdded
// Warning Event instead of refusing the exposure for ever.
func TestShootMigratedToDualStackKeepsItsDoor(t *testing.T) {
	e := ipv6Env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	withIPv6Subnet(t, ctx, e)
	startController(t, e)
	v4, v6 := gardencorev1beta1.IPFamilyIPv4, gardencorev1beta1.IPFamilyIPv6
	setIPFamilies(t, ctx, e, []gardencorev1beta1.IPFamily{v4})
	identity := useIdentity(t, ctx, e)
	nodes := createDualStackNodes(t, ctx, e, identity, 1, true)
	exp := newExposure(exposureOptions{name: identity, nodes: nodes})
	create(t, ctx, e, exp, identity)
	before := waitFor(t, ctx, e, exp, "Succeeded", succeeded)
	door := readFrontDoor(t, ctx, e, before)

	setIPFamilies(t, ctx, e, []gardencorev1beta1.IPFamily{v4, v6})
	after := triggerReconcile(t, ctx, e, exp, nil)()
	if !equality.Semantic.DeepEqual(after.Status.Ingress, before.Status.Ingress) {
		t.Errorf("status.ingress %v after the migration, want %v", after.Status.Ingress, before.Status.Ingress)
	}
	if st := providerStatus(t, after); st.PortID != door.portID || st.VIPAddress != door.vip || len(st.OtherVIPs) != 0 {
		t.Errorf("after the migration: port %s VIP %s other VIPs %v, want %s %s and none", st.PortID, st.VIPAddress, st.OtherVIPs, door.portID, door.vip)
	}
	port, err := e.neutron.GetPort(ctx, door.portID)
	if err != nil {
		t.Fatal(err)
	}
	if len(port.FixedIPs) != 1 || port.FixedIPs[0].IPAddress != door.vip {
		t.Errorf("the VIP port's fixed IPs %v, want only %s", port.FixedIPs, door.vip)
	}
	if reasons := eventReasons(t, ctx, e, after); !slices.Contains(reasons, "IPFamilyNotAdded") {
		t.Errorf("Events %v, want an IPFamilyNotAdded", reasons)
	} else if msg := eventMessage(t, ctx, e, after, "IPFamilyNotAdded"); !strings.Contains(msg, "takes a cluster created with it") {
		t.Errorf("the IPFamilyNotAdded Event %q does not say what gets a door in the added family", msg)
	}
}
