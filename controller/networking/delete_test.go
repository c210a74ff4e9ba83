// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"errors"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// deletion is the Deletion world.delete hands to the service.
func (w *world) deletion() Deletion {
	return Deletion{Mark: MarkOf(w.status, "c1", w.uid, nil), PinnedAddress: w.spec.FloatingIP}
}

func TestDeleteFrontDoorReleasesAMarkedFloatingIPNoOneNames(t *testing.T) {
	// Left unassociated by a lost port and a lost status.
	w := newWorld("uid-self", nil)
	w.mustReconcile(t)
	stray := w.n.AddFloatingIP(floatingips.FloatingIP{Description: w.frontDoor().Mark.Description()})
	foreign := w.n.AddFloatingIP(floatingips.FloatingIP{Description: "someone's"})
	w.delete(t)
	if _, ok := w.n.FloatingIPs[stray.ID]; ok {
		t.Errorf("the stray floating IP with the exposure's mark %s was kept", stray.ID)
	}
	if _, ok := w.n.FloatingIPs[foreign.ID]; !ok || len(w.n.FloatingIPs) != 1 {
		t.Errorf("floating IPs %v, want only someone else's %s left", w.n.FloatingIPs, foreign.ID)
	}
}

func TestDeleteFrontDoorAfterTheVIPPortIsGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		pin  bool
		// wantFIP: the recorded floating IP survives.
		wantFIP bool
	}{
		{"the exposure's floating IP is released", false, false},
		{"a pinned floating IP is kept", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("uid-self", nil)
			node := w.addNode("cp-0", "21")
			if tc.pin {
				w.spec.FloatingIP = w.n.AddFloatingIP(floatingips.FloatingIP{}).FloatingIP
			}
			w.mustReconcile(t)
			fip, vip := w.status.FloatingIPID, w.status.VIPAddress
			// As Neutron does when the port goes.
			_ = w.n.DisassociateFloatingIP(t.Context(), fip)
			_ = w.n.DeletePort(t.Context(), w.status.PortID)
			w.delete(t)
			if _, ok := w.n.FloatingIPs[fip]; ok != tc.wantFIP {
				t.Errorf("floating IP %s kept %v, want %v", fip, ok, tc.wantFIP)
			}
			if openstack.HasPair(w.n.Ports[node.ID], vip) {
				t.Error("the node port kept the pair of the vanished VIP port")
			}
			if w.status.PortID != "" || w.status.VIPAddress != "" || w.status.FloatingIPID != "" || len(w.status.NodePorts) != 0 {
				t.Errorf("status %+v after the deletion, want it cleared", w.status)
			}
		})
	}
}

func TestDeleteFrontDoorLeavesPairsWhoseVIPAnotherPortHoldsNow(t *testing.T) {
	// Neutron handed the freed address to someone else: the pair may be theirs now.
	w := newWorld("uid-self", nil)
	node := w.addNode("cp-0", "21")
	w.mustReconcile(t)
	vip := w.status.VIPAddress
	_ = w.n.DisassociateFloatingIP(t.Context(), w.status.FloatingIPID)
	_ = w.n.DeletePort(t.Context(), w.status.PortID)
	w.n.AddPort(ports.Port{Name: "new-holder", NetworkID: "net", FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: vip}}})
	w.delete(t)
	if !openstack.HasPair(w.n.Ports[node.ID], vip) {
		t.Error("the deletion removed a pair for an address another port holds now")
	}
}

func TestDeleteFrontDoorFindsAnUntaggedPortInItsNetwork(t *testing.T) {
	// The tagging after the create failed and the status never recorded the port.
	w := newWorld("uid-self", nil)
	untagged := w.n.AddPort(ports.Port{Name: VIPPortName("c1"), NetworkID: "net", FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0.60"}}})
	elsewhere := w.n.AddPort(ports.Port{Name: VIPPortName("c1"), NetworkID: "net-other", FixedIPs: []ports.IP{{SubnetID: "sub-other", IPAddress: "198.18.1.60"}}})
	w.status.NetworkID = "net"
	w.delete(t)
	if _, ok := w.n.Ports[untagged.ID]; ok {
		t.Error("the untagged VIP port in the exposure's network was kept")
	}
	if _, ok := w.n.Ports[elsewhere.ID]; !ok {
		t.Error("an untagged port of the same name in another network was deleted")
	}
}

func TestDeleteFrontDoorOnFailingNeutron(t *testing.T) {
	transient := neutronErr(503, "ServiceUnavailable", "injected")
	for _, tc := range []struct {
		name       string
		call       string
		bestEffort bool
		// portKept: the VIP port survives; cleared: the status forgets the port.
		portKept, cleared bool
	}{
		// The VIP must never be freed while a node port still answers for it.
		{"a failed pair removal keeps the VIP port", "RemovePairFromPort", false, true, false},
		{"a failed pair removal keeps the VIP port even when forced", "RemovePairFromPort", true, true, false},
		{"a failed floating IP lookup stops the deletion", "FloatingIPsOfPort", false, true, false},
		{"a forced deletion goes on after a failed floating IP lookup", "FloatingIPsOfPort", true, false, true},
		{"a failed release of the floating IP stops the deletion", "DeleteFloatingIP", false, true, false},
		{"a failed port deletion keeps the port recorded", "DeletePort", false, true, false},
		{"a failed listing of the marked floating IPs keeps the status for the retry", "ListFloatingIPs", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.addNode("cp-0", "21")
			w.mustReconcile(t)
			port := w.status.PortID
			f := faulty(w.n)
			f.fail[tc.call] = transient
			d := w.deletion()
			d.BestEffort = tc.bestEffort
			err := service(f, nil).DeleteFrontDoor(t.Context(), d, w.status)
			if !openstack.IsTransient(err) {
				t.Fatalf("got %v, want the transient error", err)
			}
			if _, ok := w.n.Ports[port]; ok != tc.portKept {
				t.Errorf("VIP port kept %v, want %v", ok, tc.portKept)
			}
			if cleared := w.status.PortID == ""; cleared != tc.cleared {
				t.Errorf("status %+v: port cleared %v, want %v", w.status, cleared, tc.cleared)
			}
			if w.status.VIPAddress == "" && tc.portKept {
				t.Error("the status forgot the VIP of a port that still exists")
			}
		})
	}
}

func TestDeleteFrontDoorWithoutTheNodes(t *testing.T) {
	unreadable := errors.New("nodes unreadable")
	nodeIPs := func(context.Context) ([]string, error) { return nil, unreadable }
	t.Run("an ordinary deletion waits for them", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.addNode("cp-0", "21")
		w.mustReconcile(t)
		d := w.deletion()
		d.NodeIPs = nodeIPs
		writes := w.n.WriteCount()
		if err := service(w.n, nil).DeleteFrontDoor(t.Context(), d, w.status); !errors.Is(err, unreadable) {
			t.Fatalf("got %v, want %v", err, unreadable)
		}
		if w.n.WriteCount() != writes {
			t.Errorf("writes %v without the Nodes", w.n.Writes[writes:])
		}
	})
	t.Run("a forced deletion goes on with the recorded node ports", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		node := w.addNode("cp-0", "21")
		w.mustReconcile(t)
		vip := w.status.VIPAddress
		d := w.deletion()
		d.NodeIPs, d.BestEffort = nodeIPs, true
		if err := service(w.n, nil).DeleteFrontDoor(t.Context(), d, w.status); !errors.Is(err, unreadable) {
			t.Fatalf("got %v, want %v", err, unreadable)
		}
		if openstack.HasPair(w.n.Ports[node.ID], vip) || len(w.n.Ports) != 1 || len(w.n.FloatingIPs) != 0 {
			t.Errorf("node pairs %v, %d ports, %d floating IPs; want the front door gone", w.n.Ports[node.ID].AllowedAddressPairs, len(w.n.Ports), len(w.n.FloatingIPs))
		}
	})
	t.Run("a current node's port the status does not record loses the pair", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		node := w.addNode("cp-0", "21")
		w.mustReconcile(t)
		vip := w.status.VIPAddress
		w.status.NodePorts = nil
		d := w.deletion()
		d.NodeIPs = func(context.Context) ([]string, error) { return []string{"198.18.0.21"}, nil }
		if err := service(w.n, nil).DeleteFrontDoor(t.Context(), d, w.status); err != nil {
			t.Fatal(err)
		}
		if openstack.HasPair(w.n.Ports[node.ID], vip) {
			t.Error("the current node's port kept the VIP pair")
		}
	})
}
