// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// pairWorld is a world with two control-plane nodes whose ports have their own MACs, and a
// bystander port of the network that is no node's.
func pairWorld(t *testing.T) (w *world, node1, node2, bystander *ports.Port) {
	t.Helper()
	w = newWorld(t, "uid-self")
	port := func(name, ip, mac string) *ports.Port {
		return w.n.AddPort(ports.Port{Name: name, NetworkID: "net", MACAddress: mac, FixedIPs: []ports.IP{{SubnetID: "sub", IPAddress: ip}}})
	}
	node1 = port("node-1", "198.18.0.11", "fa:16:3e:00:00:11")
	node2 = port("node-2", "198.18.0.12", "fa:16:3e:00:00:12")
	bystander = port("bystander", "198.18.0.13", "fa:16:3e:00:00:13")
	w.nodes = []controlPlaneNode{{Name: "node-1", IP: "198.18.0.11", UID: "n1"}, {Name: "node-2", IP: "198.18.0.12", UID: "n2"}}
	return w, node1, node2, bystander
}

func (w *world) pairsOf(id string) []ports.AddressPair {
	w.n.Mu.Lock()
	defer w.n.Mu.Unlock()
	return slices.Clone(w.n.Ports[id].AllowedAddressPairs)
}

func (w *world) setPairs(id string, pairs ...ports.AddressPair) {
	w.n.Mu.Lock()
	defer w.n.Mu.Unlock()
	w.n.Ports[id].AllowedAddressPairs = pairs
}

func TestPairsOnTheFakeNeutron(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"the pairs of several node ports are added at once (run with -race)", func(t *testing.T) {
			w, node1, node2, _ := pairWorld(t)
			w.mustReconcile(t)
			vip := w.status.VIPAddress
			for _, p := range []*ports.Port{node1, node2} {
				if !slices.Equal(w.pairsOf(p.ID), []ports.AddressPair{{IPAddress: vip}}) {
					t.Errorf("port %s: pairs %v, want the VIP %s", p.Name, w.pairsOf(p.ID), vip)
				}
			}
			if len(w.status.NodePorts) != 2 {
				t.Errorf("node ports %v", w.status.NodePorts)
			}
		}},
		{"a bystander's VIP pair is not the extension's to remove", func(t *testing.T) {
			w, _, _, bystander := pairWorld(t)
			w.mustReconcile(t)
			w.setPairs(bystander.ID, ports.AddressPair{IPAddress: w.status.VIPAddress})
			w.mustReconcile(t)
			if !slices.Equal(w.pairsOf(bystander.ID), []ports.AddressPair{{IPAddress: w.status.VIPAddress}}) {
				t.Errorf("the bystander's pairs: %v, want its VIP pair kept", w.pairsOf(bystander.ID))
			}
		}},
		{"a user's pair with its own MAC stays when the node leaves, the extension's goes", func(t *testing.T) {
			w, node1, _, _ := pairWorld(t)
			w.mustReconcile(t)
			users := ports.AddressPair{IPAddress: w.status.VIPAddress, MACAddress: "fa:16:3e:00:00:99"}
			w.setPairs(node1.ID, append(w.pairsOf(node1.ID), users)...)
			w.nodes = w.nodes[1:]
			w.mustReconcile(t)
			if !slices.Equal(w.pairsOf(node1.ID), []ports.AddressPair{users}) {
				t.Errorf("the departed node's pairs: %v, want only the user's %v", w.pairsOf(node1.ID), users)
			}
		}},
		{"a user's pair with its own MAC on a node port does not stand for the extension's", func(t *testing.T) {
			w, node1, _, _ := pairWorld(t)
			w.mustReconcile(t)
			users := ports.AddressPair{IPAddress: w.status.VIPAddress, MACAddress: "fa:16:3e:00:00:99"}
			w.setPairs(node1.ID, users)
			w.mustReconcile(t)
			want := []ports.AddressPair{users, {IPAddress: w.status.VIPAddress}}
			if !slices.Equal(w.pairsOf(node1.ID), want) {
				t.Errorf("the node port's pairs: %v, want %v", w.pairsOf(node1.ID), want)
			}
		}},
		{"a departed node that holds the agent's Lease keeps its pair", func(t *testing.T) {
			w, node1, _, _ := pairWorld(t)
			w.mustReconcile(t)
			holder := "node-1"
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: agentrollout.Holders()[0].LeaseName, Namespace: w.exp.Namespace, Labels: agentrollout.Labels()},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
			if err := w.a.client.Create(context.Background(), lease); err != nil {
				t.Fatal(err)
			}
			w.nodes = w.nodes[1:]
			w.mustReconcile(t)
			if !openstack.HasPair(&ports.Port{AllowedAddressPairs: w.pairsOf(node1.ID)}, w.status.VIPAddress) {
				t.Errorf("the departed holder's port lost the VIP pair: %v", w.pairsOf(node1.ID))
			}
			if !slices.ContainsFunc(w.status.NodePorts, func(np v1alpha1.NodePort) bool { return np.PortID == node1.ID }) {
				t.Errorf("node ports %v lack the departed holder's %s", w.status.NodePorts, node1.ID)
			}
		}},
		{"a departed node without an agent loses its pair", func(t *testing.T) {
			w, node1, _, _ := pairWorld(t)
			w.mustReconcile(t)
			w.nodes = w.nodes[1:]
			w.mustReconcile(t)
			if pairs := w.pairsOf(node1.ID); len(pairs) != 0 {
				t.Errorf("the departed node's pairs: %v", pairs)
			}
			if len(w.status.NodePorts) != 1 {
				t.Errorf("node ports %v", w.status.NodePorts)
			}
		}},
		{"a departed node whose Lease and pod are a user's kube-vip's loses its pair", func(t *testing.T) {
			w, node1, _, _ := pairWorld(t)
			w.mustReconcile(t)
			holder := "node-1"
			for _, o := range usersKubeVIPOn(w.exp.Namespace, holder) {
				if err := w.a.client.Create(context.Background(), o); err != nil {
					t.Fatal(err)
				}
			}
			w.nodes = w.nodes[1:]
			w.mustReconcile(t)
			if pairs := w.pairsOf(node1.ID); len(pairs) != 0 {
				t.Errorf("the departed node's pairs: %v; a user's kube-vip on it is no agent of the extension", pairs)
			}
		}},
		{"no control-plane Node seen keeps the recorded node ports", func(t *testing.T) {
			w, _, _, _ := pairWorld(t)
			w.mustReconcile(t)
			recorded := slices.Clone(w.status.NodePorts)
			w.nodes = nil
			w.mustReconcile(t)
			if !slices.Equal(w.status.NodePorts, recorded) {
				t.Errorf("node ports %v after a reconcile that saw no control-plane Node, want %v", w.status.NodePorts, recorded)
			}
		}},
		{"a failed pairs step keeps the recorded node ports", func(t *testing.T) {
			w, _, _, _ := pairWorld(t)
			w.mustReconcile(t)
			recorded := slices.Clone(w.status.NodePorts)
			// A departing node makes the step read the agent pods; that read fails.
			w.a.reader = interceptor.NewClient(w.a.client.(client.WithWatch), interceptor.Funcs{
				List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return errors.New("the API server is unavailable")
				},
			})
			w.nodes = w.nodes[1:]
			if err := w.reconcile(t); err == nil {
				t.Fatal("reconcile with a failing pod list: no error")
			}
			for _, np := range recorded {
				if !slices.Contains(w.status.NodePorts, np) {
					t.Errorf("node ports %v after a failed pairs step lack %v", w.status.NodePorts, np)
				}
			}
		}},
		{"a verification lists only the node ports, not the network", func(t *testing.T) {
			w, _, _, _ := pairWorld(t)
			w.mustReconcile(t)
			listed := len(w.n.Listed)
			w.mustReconcile(t)
			for _, f := range w.n.Listed[listed:] {
				if len(f.FixedIPs) == 0 && f.Name == "" && len(f.Tags) == 0 {
					t.Errorf("a list of every port of the network %s", f.NetworkID)
				}
			}
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}

// usersKubeVIPOn are a user's own kube-vip pod on node and the Leases its leader holds
// there, labelled as kube-vip's Helm chart labels them (no label of the extension).
func usersKubeVIPOn(namespace, node string) []client.Object {
	labels := map[string]string{agentrollout.LabelAppName: "kube-vip", "app.kubernetes.io/instance": "kube-vip"}
	var out []client.Object
	for _, name := range []string{"plndr-svcs-lock", agentrollout.LegacyKubeVIPLeaseName} {
		out = append(out, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &node}})
	}
	return append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kube-vip-x7k2p", Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kube-vip", Image: "ghcr.io/kube-vip/kube-vip:v1.0.0"}}}})
}
