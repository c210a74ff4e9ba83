// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func node(controlPlane bool, providerID string, ips ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"kubernetes.io/os": "linux"}}}
	if controlPlane {
		n.Labels["node-role.kubernetes.io/control-plane"] = ""
	}
	n.Spec.ProviderID = providerID
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n"})
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return n
}

func TestControlPlaneNodeChanged(t *testing.T) {
	p := ControlPlaneNodeChanged()

	if !p.Create(event.CreateEvent{Object: node(true, "")}) {
		t.Error("create of a control-plane node dropped")
	}
	if p.Create(event.CreateEvent{Object: node(false, "")}) {
		t.Error("create of a worker node passed")
	}
	if !p.Delete(event.DeleteEvent{Object: node(true, "")}) {
		t.Error("delete of a control-plane node dropped")
	}
	if p.Delete(event.DeleteEvent{Object: node(false, "")}) {
		t.Error("delete of a worker node passed")
	}

	for name, tc := range map[string]struct {
		old, new *corev1.Node
		want     bool
	}{
		"unchanged":              {node(true, "p", "198.18.0.11"), node(true, "p", "198.18.0.11"), false},
		"ip changed":             {node(true, "p", "198.18.0.11"), node(true, "p", "198.18.0.12"), true},
		"ip added":               {node(true, "p"), node(true, "p", "198.18.0.11"), true},
		"ips reordered":          {node(true, "p", "198.18.0.11", "198.18.0.12"), node(true, "p", "198.18.0.12", "198.18.0.11"), false},
		"provider id set":        {node(true, "", "198.18.0.11"), node(true, "openstack:///x", "198.18.0.11"), true},
		"label added":            {node(false, "p", "198.18.0.11"), node(true, "p", "198.18.0.11"), true},
		"label removed":          {node(true, "p", "198.18.0.11"), node(false, "p", "198.18.0.11"), true},
		"worker ip changed":      {node(false, "p", "198.18.0.11"), node(false, "p", "198.18.0.12"), false},
		"control-plane hostname": {node(true, "p", "198.18.0.11"), withHostname(node(true, "p", "198.18.0.11"), "m"), false},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: update passed=%v, want %v", name, got, tc.want)
		}
	}
}

func withHostname(n *corev1.Node, hostname string) *corev1.Node {
	n.Status.Addresses[0].Address = hostname
	return n
}

// TestControlPlaneNodeChangedDropsWhatItCannotCompare: generic events, events without an
// object and updates of objects that are no Nodes (metadata only) carry no address or
// provider ID to compare and are dropped.
func TestControlPlaneNodeChangedDropsWhatItCannotCompare(t *testing.T) {
	p := ControlPlaneNodeChanged()
	metadataOnly := &metav1.PartialObjectMetadata{ObjectMeta: node(true, "p", "198.18.0.11").ObjectMeta}

	for name, passed := range map[string]bool{
		"generic":           p.Generic(event.GenericEvent{Object: node(true, "p", "198.18.0.11")}),
		"create of nothing": p.Create(event.CreateEvent{}),
		"metadata update":   p.Update(event.UpdateEvent{ObjectOld: metadataOnly, ObjectNew: metadataOnly.DeepCopy()}),
	} {
		if passed {
			t.Errorf("%s event passed", name)
		}
	}
}
