// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
)

// SyncNodePairs keeps the VIP pair on exactly the ports of the current control-plane
// Nodes: it adds it where missing and removes it from ports of the network that no longer
// belong to a control-plane Node (never from the VIP port, never other pairs). A former
// control-plane node keeps its pair while its agent may still hold the VIP (an agent pod
// on it, or it holds the Lease), and with no control-plane Node observed nothing changes.
// It records the node ports in the status. It makes no OpenStack call while the status has no VIP.
// A control-plane Node without a port yields an error, so that the caller retries.
//
// It holds the exposure's lock (shared with Reconcile and Delete) and works on a fresh
// read of the exposure from the API server: an exposure that is gone or being deleted by
// then is skipped, so that a sync never re-adds a pair that the deletion removed.
func (a *Actuator) SyncNodePairs(ctx context.Context, log logr.Logger, cached *extensionsv1alpha1.SelfHostedShootExposure) error {
	unlock := a.locks.lock(cached.UID)
	defer unlock()

	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := a.reader.Get(ctx, client.ObjectKeyFromObject(cached), exp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading the SelfHostedShootExposure %s: %w", client.ObjectKeyFromObject(cached), err)
	}
	if exp.UID != cached.UID || exp.DeletionTimestamp != nil {
		return nil
	}
	status, err := DecodeStatus(exp)
	if err != nil {
		return err
	}
	if status.VIPAddress == "" || status.NetworkID == "" || status.VIPHeldBy != "" {
		// No VIP yet, or another port holds it: no node may carry its pair.
		return nil
	}
	cluster, err := extensionscontroller.GetCluster(ctx, a.reader, exp.Namespace)
	if err != nil {
		return fmt.Errorf("reading the Cluster %s: %w", exp.Namespace, err)
	}
	auth, _, err := a.resolveAuth(ctx, exp, cluster)
	if err != nil {
		return err
	}
	nodes, err := a.controlPlaneNodes(ctx)
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		// A cluster always has a control-plane node: none observed is a transient view
		// (the last one replaced, the label stripped by a tool), and stripping every pair
		// would black-hole the front door. Reconcile skips this case the same way.
		log.Info("No control-plane Node observed; leaving the VIP pairs as they are")
		return nil
	}
	network, err := a.opts.ClientFactory.Network(ctx, auth)
	if err != nil {
		return err
	}
	nodePorts, waiting, syncErr := a.pairNodes(ctx, log, network, exp.Namespace, status, nodes)
	nodePorts = recordNodePorts(status.NodePorts, nodePorts, syncErr)
	if len(waiting) > 0 {
		syncErr = errors.Join(syncErr, fmt.Errorf("%w: %v", errAgentStillRuns, waiting))
	}
	if !slices.Equal(status.NodePorts, nodePorts) {
		status.NodePorts = nodePorts
		if err := a.patchStatus(ctx, exp, status); err != nil {
			return errors.Join(syncErr, err)
		}
	}
	return syncErr
}

// pairNodes puts the VIP pair of status on the ports of nodes and takes it from the
// recorded node ports of nodes that left, then labels the nodes (pairs, then labels: a
// joining node's agent starts only once its port has the pair). A departed node whose
// agent may still hold the VIP keeps its pair and label: its port stays among the returned
// node ports, and waiting names it.
func (a *Actuator) pairNodes(ctx context.Context, log logr.Logger, network networking.Neutron, namespace string, status *v1alpha1.ExposureStatus, nodes []controlPlaneNode) (nodePorts []v1alpha1.NodePort, waiting []string, err error) {
	retained, waiting, err := a.portsOfDepartingAgents(ctx, namespace, status, nodes)
	if err != nil {
		return nil, nil, err
	}
	pairs := networking.Pairs{
		NetworkID: status.NetworkID,
		VIP:       status.VIPAddress,
		OtherVIPs: otherVIPAddresses(status),
		VIPPortID: status.PortID,
		Managed:   portIDs(status.NodePorts),
		Retain:    portIDs(retained),
	}
	for _, n := range nodes {
		pairs.Nodes = append(pairs.Nodes, networking.Node{Name: n.Name, IP: n.IP, OtherIPs: n.OtherIPs})
	}
	nodePorts, err = networking.NewService(network, networking.Options{Log: log}).ReconcilePairs(ctx, pairs)
	err = errors.Join(err, a.syncPairLabels(ctx, log, status.VIPAddress, nodes, nodePorts, nodeNames(retained)))
	return append(nodePorts, retained...), waiting, err
}

// errAgentStillRuns makes the node tracker retry until the agent of a node that left the
// control plane is gone.
var errAgentStillRuns = errors.New("keeping the VIP pair on the ports of former control-plane nodes until their kube-vip-agent is gone; will retry")

// portsOfDepartingAgents returns the recorded node ports of nodes that are no control-plane
// Nodes any more but may still hold the VIP: an agent pod still exists on them, or they hold
// the agent's Lease. Their pair stays until then, or the front door is dropped by port
// security while the agent still answers ARP for the VIP. waiting names these nodes.
func (a *Actuator) portsOfDepartingAgents(ctx context.Context, namespace string, status *v1alpha1.ExposureStatus, nodes []controlPlaneNode) (retained []v1alpha1.NodePort, waiting []string, err error) {
	current := map[string]bool{}
	for _, n := range nodes {
		current[n.Name] = true
	}
	var departing []v1alpha1.NodePort
	for _, np := range status.NodePorts {
		if !current[np.NodeName] {
			departing = append(departing, np)
		}
	}
	if len(departing) == 0 {
		return nil, nil, nil
	}
	holders, err := a.agentNodes(ctx, namespace)
	if err != nil {
		return nil, nil, err
	}
	for _, np := range departing {
		if holders[np.NodeName] {
			retained = append(retained, np)
			waiting = append(waiting, np.NodeName)
		}
	}
	return retained, waiting, nil
}

// agentNodes returns the nodes that may hold the VIP: those with a pod of an agent of the
// extension that has not terminated, and the holders of their Leases; pods and Leases
// only with the extension's label, so that a user's own kube-vip counts for nothing. It
// reads through the API reader, so that no informer on Pods is started.
func (a *Actuator) agentNodes(ctx context.Context, namespace string) (map[string]bool, error) {
	nodes := map[string]bool{}
	for _, h := range agentrollout.Holders() {
		pods := &corev1.PodList{}
		if err := a.reader.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(h.PodLabels)); err != nil {
			return nil, fmt.Errorf("listing the agent pods in %s: %w", namespace, err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				nodes[p.Spec.NodeName] = true
			}
		}
		lease := &coordinationv1.Lease{}
		switch err := a.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: h.LeaseName}, lease); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading the Lease %s/%s: %w", namespace, h.LeaseName, err)
		case lease.Spec.HolderIdentity != nil && agentrollout.Owned(lease):
			nodes[*lease.Spec.HolderIdentity] = true
		}
	}
	return nodes, nil
}

// recordNodePorts is what the status records after a pairs step that returned got: got
// itself, or after an error also every port recorded before, so that a port whose pair
// could not be removed (or that was not read at all) stays the extension's to remove.
func recordNodePorts(old, got []v1alpha1.NodePort, err error) []v1alpha1.NodePort {
	if err == nil {
		return got
	}
	out := slices.Clone(got)
	for _, np := range old {
		if !slices.ContainsFunc(out, func(x v1alpha1.NodePort) bool { return x.PortID == np.PortID }) {
			out = append(out, np)
		}
	}
	return out
}

func portIDs(nps []v1alpha1.NodePort) []string {
	ids := make([]string, 0, len(nps))
	for _, np := range nps {
		ids = append(ids, np.PortID)
	}
	return ids
}

func nodeIPs(nodes []controlPlaneNode) []string {
	ips := make([]string, 0, len(nodes))
	for _, n := range nodes {
		ips = append(ips, n.IP)
		ips = append(ips, n.OtherIPs...)
	}
	return ips
}

func nodeNames(nps []v1alpha1.NodePort) []string {
	names := make([]string, 0, len(nps))
	for _, np := range nps {
		names = append(names, np.NodeName)
	}
	return names
}
