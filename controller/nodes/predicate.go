// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
)

// ControlPlaneNodeChanged passes the Node events that can change which ports need the VIP
// pair: a control-plane Node created or deleted, the control-plane label added or removed,
// and a control-plane Node whose InternalIPs or provider ID changed. Status heartbeats and
// everything about other Nodes are dropped.
func ControlPlaneNodeChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return isControlPlane(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return isControlPlane(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			wasCP, isCP := isControlPlane(e.ObjectOld), isControlPlane(e.ObjectNew)
			if wasCP != isCP {
				return true
			}
			if !isCP {
				return false
			}
			oldNode, ok1 := e.ObjectOld.(*corev1.Node)
			newNode, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return false
			}
			return oldNode.Spec.ProviderID != newNode.Spec.ProviderID ||
				!slices.Equal(internalIPs(oldNode), internalIPs(newNode))
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func isControlPlane(obj client.Object) bool {
	if obj == nil {
		return false
	}
	_, ok := obj.GetLabels()[v1beta1constants.LabelNodeRoleControlPlane]
	return ok
}

// internalIPs are the Node's InternalIP addresses, sorted.
func internalIPs(node *corev1.Node) []string {
	var ips []string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ips = append(ips, a.Address)
		}
	}
	slices.Sort(ips)
	return ips
}
