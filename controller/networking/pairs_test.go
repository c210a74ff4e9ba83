// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// addNode puts a control-plane node's port into the world and makes it a node of the
// exposure; the last byte names its address and MAC.
func (w *world) addNode(name, last string) *ports.Port {
	p := w.n.AddPort(ports.Port{Name: name, NetworkID: "net", DeviceOwner: "compute:nova", MACAddress: "fa:16:3e:00:00:" + last,
		FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: "198.18.0." + last}}})
	w.nodes = append(w.nodes, Node{Name: name, IP: "198.18.0." + last})
	return p
}

// pairs is the desired state world.reconcile hands to ReconcilePairs.
func (w *world) pairs() Pairs {
	return Pairs{NetworkID: w.status.NetworkID, VIP: w.status.VIPAddress, VIPPortID: w.status.PortID, Nodes: w.nodes, Managed: portIDs(w.status.NodePorts)}
}

func TestReconcilePairsRemovesThePairFromAPortThatLeftTheControlPlane(t *testing.T) {
	w := newWorld("uid-self", nil)
	first, second := w.addNode("cp-0", "21"), w.addNode("cp-1", "22")
	w.mustReconcile(t)
	vip := w.status.VIPAddress
	w.nodes = w.nodes[:1]
	w.mustReconcile(t)
	if openstack.HasPair(w.n.Ports[second.ID], vip) || !openstack.HasPair(w.n.Ports[first.ID], vip) {
		t.Errorf("pairs cp-0 %v, cp-1 %v; want the VIP only on cp-0", w.n.Ports[first.ID].AllowedAddressPairs, w.n.Ports[second.ID].AllowedAddressPairs)
	}
	if len(w.status.NodePorts) != 1 || w.status.NodePorts[0].PortID != first.ID {
		t.Errorf("node ports %+v, want only cp-0's", w.status.NodePorts)
	}
	w.mustWriteNothing(t, "a shrunk control plane")
}

func TestReconcilePairsKeepsARetainedPort(t *testing.T) {
	// A node that left the control plane while its agent may still hold the VIP.
	w := newWorld("uid-self", nil)
	w.addNode("cp-0", "21")
	leaving := w.addNode("cp-1", "22")
	w.mustReconcile(t)
	want := w.pairs()
	want.Nodes, want.Retain = want.Nodes[:1], []string{leaving.ID}
	nodePorts, err := service(w.n, nil).ReconcilePairs(t.Context(), want)
	if err != nil {
		t.Fatal(err)
	}
	if !openstack.HasPair(w.n.Ports[leaving.ID], w.status.VIPAddress) || len(nodePorts) != 1 {
		t.Errorf("retained port pairs %v, node ports %+v; want the pair kept and only cp-0 recorded", w.n.Ports[leaving.ID].AllowedAddressPairs, nodePorts)
	}
}

func TestReconcilePairsKeepsAPairWithAnotherMAC(t *testing.T) {
	// A pair naming another MAC is someone's own configuration, never the extension's.
	w := newWorld("uid-self", nil)
	w.addNode("cp-0", "21")
	leaving := w.addNode("cp-1", "22")
	w.mustReconcile(t)
	vip := w.status.VIPAddress
	w.n.Ports[leaving.ID].AllowedAddressPairs = []ports.AddressPair{{IPAddress: vip, MACAddress: "fa:16:3e:99:99:99"}}
	w.nodes = w.nodes[:1]
	w.mustWriteNothing(t, "a pair with another MAC on a port that left")
	if pairs := w.n.Ports[leaving.ID].AllowedAddressPairs; len(pairs) != 1 || pairs[0].MACAddress != "fa:16:3e:99:99:99" {
		t.Errorf("pairs %v, want the pair with the other MAC kept", pairs)
	}
}

func TestReconcilePairsIgnoresAManagedPortThatIsGone(t *testing.T) {
	w := newWorld("uid-self", nil)
	w.addNode("cp-0", "21")
	gone := w.addNode("cp-1", "22")
	w.mustReconcile(t)
	_ = w.n.DeletePort(t.Context(), gone.ID)
	w.nodes = w.nodes[:1]
	w.mustWriteNothing(t, "a managed port that is gone")
	if len(w.status.NodePorts) != 1 {
		t.Errorf("node ports %+v, want only cp-0's", w.status.NodePorts)
	}
}

func TestReconcilePairsReportsANodeWithoutPortAfterTheOthers(t *testing.T) {
	w := newWorld("uid-self", nil)
	node := w.addNode("cp-0", "21")
	w.nodes = append(w.nodes, Node{Name: "cp-new", IP: "198.18.0.99"})
	err := w.reconcile(t)
	if !errors.Is(err, ErrNodePortMissing) || !strings.Contains(err.Error(), "cp-new") {
		t.Fatalf("got %v, want %v naming cp-new", err, ErrNodePortMissing)
	}
	if !openstack.HasPair(w.n.Ports[node.ID], w.status.VIPAddress) || len(w.status.NodePorts) != 1 {
		t.Errorf("cp-0 pairs %v, node ports %+v; want cp-0 paired and recorded", w.n.Ports[node.ID].AllowedAddressPairs, w.status.NodePorts)
	}
}

func TestReconcilePairsFindsADualStackNodeByItsOtherAddress(t *testing.T) {
	// The Node may report only its IPv6 address first.
	w := newWorld("uid-self", nil)
	node := w.addNode("cp-0", "21")
	w.nodes = []Node{{Name: "cp-0", IP: "2001:2:0:10::21", OtherIPs: []string{"198.18.0.21"}}}
	w.mustReconcile(t)
	if len(w.status.NodePorts) != 1 || w.status.NodePorts[0].PortID != node.ID {
		t.Errorf("node ports %+v, want cp-0's port %s", w.status.NodePorts, node.ID)
	}
}

func TestReconcilePairsOnFailingNeutron(t *testing.T) {
	for _, tc := range []struct {
		name string
		call string
		err  error
		// wantErr: the error is returned; noSec: the failed port is recorded with port
		// security disabled; recorded: the failing port stays among the node ports.
		wantErr, noSec, recorded bool
	}{
		{"a node port with port security disabled needs no pair and is recorded as such", "EnsurePair",
			neutronErr(409, "AddressPairAndPortSecurityRequired", "add the pair"), false, true, true},
		{"a failed update drops the port from the node ports and returns the error", "EnsurePair",
			neutronErr(503, "ServiceUnavailable", "add the pair"), true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("uid-self", nil)
			good := w.addNode("cp-0", "21")
			bad := w.addNode("cp-1", "22")
			w.mustReconcile(t)
			_, _ = w.n.RemovePairFromPort(t.Context(), w.n.Ports[bad.ID], w.status.VIPAddress)
			f := faulty(w.n)
			f.fail[tc.call], f.failOn[tc.call] = tc.err, bad.ID
			nodePorts, err := service(f, nil).ReconcilePairs(t.Context(), w.pairs())
			if (err != nil) != tc.wantErr {
				t.Fatalf("got %v, want an error: %v", err, tc.wantErr)
			}
			i := slices.IndexFunc(nodePorts, func(np v1alpha1.NodePort) bool { return np.PortID == bad.ID })
			if (i >= 0) != tc.recorded || (i >= 0 && nodePorts[i].PortSecurityDisabled != tc.noSec) {
				t.Errorf("node ports %+v, want cp-1 recorded %v with port security disabled %v", nodePorts, tc.recorded, tc.noSec)
			}
			if !slices.ContainsFunc(nodePorts, func(np v1alpha1.NodePort) bool { return np.PortID == good.ID && !np.PortSecurityDisabled }) {
				t.Errorf("node ports %+v lack the healthy cp-0", nodePorts)
			}
		})
	}
	t.Run("a failing removal from a port that left is returned", func(t *testing.T) {
		w := newWorld("uid-self", nil)
		w.addNode("cp-0", "21")
		leaving := w.addNode("cp-1", "22")
		w.mustReconcile(t)
		w.nodes = w.nodes[:1]
		f := faulty(w.n)
		f.fail["RemovePairFromPort"] = neutronErr(503, "ServiceUnavailable", "remove the pair")
		if _, err := service(f, nil).ReconcilePairs(t.Context(), w.pairs()); !openstack.IsTransient(err) {
			t.Errorf("got %v, want the transient error", err)
		}
		if !openstack.HasPair(w.n.Ports[leaving.ID], w.status.VIPAddress) {
			t.Error("the pair is gone although the removal failed")
		}
	})
	for _, call := range []string{"ListPorts", "GetPort"} {
		t.Run("reading the ports fails: "+call, func(t *testing.T) {
			w := newWorld("uid-self", nil)
			w.addNode("cp-0", "21")
			w.addNode("cp-1", "22")
			w.mustReconcile(t)
			w.nodes = w.nodes[:1]
			f := faulty(w.n)
			f.fail[call] = neutronErr(503, "ServiceUnavailable", "read")
			writes := w.n.WriteCount()
			nodePorts, err := service(f, nil).ReconcilePairs(t.Context(), w.pairs())
			if !openstack.IsTransient(err) || nodePorts != nil || w.n.WriteCount() != writes {
				t.Errorf("got %v, node ports %+v, writes %v; want the error before any write", err, nodePorts, w.n.Writes[writes:])
			}
		})
	}
}
