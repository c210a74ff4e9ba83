// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"net/netip"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// dualStackWorld is an exposure with an IPv6 subnet beside its IPv4 one and one
// control-plane node whose port holds an address of each family.
func dualStackWorld(t *testing.T) (*world, *ports.Port) {
	t.Helper()
	w := newWorld("uid-self", nil)
	w.spec.OtherSubnets = []SubnetVIP{{SubnetID: "sub-v6"}}
	node := w.n.AddPort(ports.Port{Name: "node-1", NetworkID: "net", DeviceOwner: "compute:nova", MACAddress: "fa:16:3e:00:00:01",
		FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.11"}, {SubnetID: "sub-v6", IPAddress: "2001:2:0:10::11"}}})
	w.nodes = []Node{{Name: "node-1", IP: "198.18.0.11"}}
	w.mustReconcile(t)
	return w, node
}

func TestDualStackOnTheFakeNeutron(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"the VIP port gets a fixed IP per family, the floating IP the IPv4 one, the node port a pair per VIP", func(t *testing.T) {
			w, node := dualStackWorld(t)
			if len(w.status.OtherVIPs) != 1 || w.status.OtherVIPs[0].SubnetID != "sub-v6" {
				t.Fatalf("other VIPs %+v, want one in sub-v6", w.status.OtherVIPs)
			}
			v6 := w.status.OtherVIPs[0].Address
			if a, err := netip.ParseAddr(v6); err != nil || !a.Is6() {
				t.Errorf("the other VIP %q is not IPv6", v6)
			}
			port := w.n.Ports[w.status.PortID]
			if openstack.PortAddress(port, "sub") != w.status.VIPAddress || openstack.PortAddress(port, "sub-v6") != v6 {
				t.Errorf("VIP port fixed IPs %v, want %s and %s", port.FixedIPs, w.status.VIPAddress, v6)
			}
			if fip := w.n.FloatingIPs[w.status.FloatingIPID]; fip == nil || fip.FixedIP != w.status.VIPAddress {
				t.Errorf("floating IP %+v, want it on the IPv4 VIP %s", fip, w.status.VIPAddress)
			}
			np := w.n.Ports[node.ID]
			if !openstack.HasPair(np, w.status.VIPAddress) || !openstack.HasPair(np, v6) {
				t.Errorf("node port pairs %v, want both VIPs", np.AllowedAddressPairs)
			}
			w.mustWriteNothing(t, "an unchanged dual-stack exposure")
		}},
		{"a removed IPv6 pair is put back, the IPv4 one kept", func(t *testing.T) {
			w, node := dualStackWorld(t)
			v6 := w.status.OtherVIPs[0].Address
			np := w.n.Ports[node.ID]
			if _, err := w.n.RemovePairFromPort(ctx, np, v6); err != nil {
				t.Fatal(err)
			}
			w.mustReconcile(t)
			if np := w.n.Ports[node.ID]; !openstack.HasPair(np, v6) || !openstack.HasPair(np, w.status.VIPAddress) || len(np.AllowedAddressPairs) != 2 {
				t.Errorf("node port pairs %v after the repair", np.AllowedAddressPairs)
			}
		}},
		{"a VIP port that lost its IPv6 fixed IP is an infrastructure dependency, the VIP kept", func(t *testing.T) {
			w, _ := dualStackWorld(t)
			v6 := w.status.OtherVIPs[0].Address
			port := w.n.Ports[w.status.PortID]
			port.FixedIPs = port.FixedIPs[:1]
			if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorInfraDependencies) {
				t.Fatalf("got %v, want %s", err, gardencorev1beta1.ErrorInfraDependencies)
			}
			if w.status.OtherVIPs[0].Address != v6 {
				t.Errorf("IPv6 VIP %s -> %s", v6, w.status.OtherVIPs[0].Address)
			}
		}},
		{"a lost VIP port comes back with both recorded VIPs", func(t *testing.T) {
			w, _ := dualStackWorld(t)
			v4, v6 := w.status.VIPAddress, w.status.OtherVIPs[0].Address
			_ = w.n.DeletePort(ctx, w.status.PortID)
			w.mustReconcile(t)
			port := w.n.Ports[w.status.PortID]
			if !openstack.HasFixedIP(port, v4) || !openstack.HasFixedIP(port, v6) {
				t.Errorf("recreated port %v, want %s and %s", port.FixedIPs, v4, v6)
			}
		}},
		{"adding, dropping or pinning another IPv6 VIP after creation is refused before any call", func(t *testing.T) {
			for _, change := range [][]SubnetVIP{nil, {{SubnetID: "sub-v6-b"}}, {{SubnetID: "sub-v6", VIPAddress: "2001:2:0:10::99"}}} {
				w, _ := dualStackWorld(t)
				writes := w.n.WriteCount()
				w.spec.OtherSubnets = change
				if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) {
					t.Errorf("%+v: got %v, want a configuration problem", change, err)
				}
				if w.n.WriteCount() != writes {
					t.Errorf("%+v: writes %v", change, w.n.Writes[writes:])
				}
			}
			w := newWorld("uid-self", nil)
			w.mustReconcile(t)
			w.spec.OtherSubnets = []SubnetVIP{{SubnetID: "sub-v6"}}
			if err := w.reconcile(t); !hasCode(err, gardencorev1beta1.ErrorConfigurationProblem) {
				t.Errorf("an IPv6 subnet added to an IPv4 exposure: got %v, want a configuration problem", err)
			}
		}},
		{"deletion removes both pairs, the floating IP and the port; the node port stays", func(t *testing.T) {
			w, node := dualStackWorld(t)
			w.delete(t)
			np, ok := w.n.Ports[node.ID]
			if !ok || len(np.AllowedAddressPairs) != 0 || len(w.n.Ports) != 1 || len(w.n.FloatingIPs) != 0 || len(w.status.OtherVIPs) != 0 {
				t.Errorf("after the deletion: node port %v (kept %v), %d ports, %d floating IPs, other VIPs %v",
					np, ok, len(w.n.Ports), len(w.n.FloatingIPs), w.status.OtherVIPs)
			}
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}
