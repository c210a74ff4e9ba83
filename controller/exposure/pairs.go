// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// errNodePortMissing is returned when a control-plane node has no Neutron port yet.
var errNodePortMissing = errors.New("control-plane node without Neutron port")

// pairSync is the desired state of the VIP pairs in one network.
type pairSync struct {
	networkID string
	vip       string
	// vipPortID is never touched.
	vipPortID string
	nodes     []controlPlaneNode
	// managed are the ports the extension put the pair on (status.nodePorts): only they
	// lose it when they are no control-plane node's port any more.
	managed []string
	// retain are ports that keep the VIP pair they have, e.g. of a node that left the
	// control plane while its agent may still hold the VIP.
	retain []string
}

// syncPairs adds the VIP pair to the ports of the control-plane nodes and removes it from
// the managed ports that are no node's port any more and not retained. Ports the extension
// never managed keep a VIP pair someone put there, and a pair with another MAC is never the
// extension's (openstack.HasPair). It reads the node ports in one list filtered by their
// addresses, and a managed port outside it by ID, so that a steady verification reads only
// the node ports. It returns the node ports that carry the pair (a port whose update failed
// is not among them); a node without a port yields errNodePortMissing after the others are
// done. A node port with port security disabled needs no pair (Neutron refuses one with
// AddressPairAndPortSecurityRequired): it is logged and reported with
// PortSecurityDisabled, and the exposure goes on.
func syncPairs(ctx context.Context, log logr.Logger, network neutron, s pairSync) ([]v1alpha1.NodePort, error) {
	ips := make([]string, 0, len(s.nodes))
	for _, n := range s.nodes {
		ips = append(ips, n.IP)
	}
	list, err := network.ListPorts(ctx, openstack.PortFilter{NetworkID: s.networkID, FixedIPs: ips})
	if err != nil {
		return nil, err
	}
	byIP := map[string]ports.Port{}
	for _, p := range list {
		for _, ip := range p.FixedIPs {
			byIP[ip.IPAddress] = p
		}
	}
	var (
		nodePorts []v1alpha1.NodePort
		missing   []string
		keep      = map[string]bool{s.vipPortID: true}
		noSec     = map[string]bool{}
		failed    = map[string]bool{}
		mu        sync.Mutex
		errs      []error
		wg        sync.WaitGroup
	)
	for _, id := range s.retain {
		keep[id] = true
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for _, n := range s.nodes {
		port, ok := byIP[n.IP]
		if !ok {
			missing = append(missing, fmt.Sprintf("%s (%s)", n.Name, n.IP))
			continue
		}
		keep[port.ID] = true
		nodePorts = append(nodePorts, v1alpha1.NodePort{NodeName: n.Name, PortID: port.ID})
	}
	stale, err := staleManagedPorts(ctx, network, s, keep)
	if err != nil {
		return nil, err
	}
	// Each port is updated on its own copy; the updates of different ports do not conflict.
	for _, n := range s.nodes {
		port, ok := byIP[n.IP]
		if !ok {
			continue
		}
		wg.Go(func() {
			updated, err := network.EnsurePair(ctx, &port, s.vip)
			if openstack.IsPortSecurityDisabled(err) {
				log.Info("The node port has port security disabled: it passes the VIP without an allowed address pair and is left alone", "node", n.Name, "port", port.ID)
				mu.Lock()
				noSec[port.ID] = true
				mu.Unlock()
				return
			}
			if err != nil {
				fail(err)
				mu.Lock()
				failed[port.ID] = true
				mu.Unlock()
				return
			}
			if updated {
				log.Info("Added the VIP to the allowed address pairs of a node port", "node", n.Name, "port", port.ID)
			}
		})
	}
	for _, p := range stale {
		wg.Go(func() {
			if _, err := network.RemovePairFromPort(ctx, &p, s.vip); err != nil {
				fail(err)
				return
			}
			log.Info("Removed the VIP from the allowed address pairs of a port that is no control-plane node's", "port", p.ID)
		})
	}
	wg.Wait()
	nodePorts = slices.DeleteFunc(nodePorts, func(np v1alpha1.NodePort) bool { return failed[np.PortID] })
	for i := range nodePorts {
		nodePorts[i].PortSecurityDisabled = noSec[nodePorts[i].PortID]
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%w: no port in network %s for %v yet; will retry", errNodePortMissing, s.networkID, missing))
	}
	return nodePorts, errors.Join(errs...)
}

// staleManagedPorts reads the managed ports that are not kept and still carry the VIP pair;
// a port that is gone needs nothing.
func staleManagedPorts(ctx context.Context, network neutron, s pairSync, keep map[string]bool) ([]ports.Port, error) {
	var stale []ports.Port
	for _, id := range s.managed {
		if keep[id] {
			continue
		}
		p, err := network.GetPort(ctx, id)
		if openstack.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if openstack.HasPair(p, s.vip) {
			stale = append(stale, *p)
		}
	}
	return stale, nil
}

// The pair label (agentrollout.PairLabel) orders a node's join: the agent DaemonSets
// require it, and it is set only after the node's port carries the VIP pair, so no agent
// can win the Lease on a node whose port security still drops the VIP. The policy:
//   - set it on a control-plane Node whose port is among the node ports that carry the
//     pair (or need none), and only on that very Node object (its UID is a precondition
//     of the patch, so a Node re-created with the same name gets none from an old sync);
//   - remove it from a Node that is no (retained) control-plane node any more, and from
//     every Node when the exposure is deleted; never from a current control-plane node
//     on a failed sync, which would evict a running agent;
//   - touch only this label with this VIP's value: other labels and values stay.

// syncPairLabels labels the nodes of nodes whose port is in nodePorts, and removes the
// label of this VIP from labelled Nodes that are neither in nodes nor in keep.
func (a *Actuator) syncPairLabels(ctx context.Context, log logr.Logger, vip string, nodes []controlPlaneNode, nodePorts []v1alpha1.NodePort, keep []string) error {
	value := agentrollout.PairLabelValue(vip)
	paired := map[string]bool{}
	for _, np := range nodePorts {
		paired[np.NodeName] = true
	}
	current := map[string]bool{}
	for _, n := range keep {
		current[n] = true
	}
	var errs []error
	for _, n := range nodes {
		current[n.Name] = true
		if !paired[n.Name] || n.pairLabel == value {
			continue
		}
		if err := a.patchPairLabel(ctx, n.Name, n.UID, &value); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("Labelled the node: its port carries the VIP pair, so its agent may run", "node", n.Name, "label", agentrollout.PairLabel)
	}
	errs = append(errs, a.removePairLabels(ctx, log, vip, current))
	return errors.Join(errs...)
}

// removePairLabels removes the pair label of vip from every Node that carries it, except
// the nodes in keep.
func (a *Actuator) removePairLabels(ctx context.Context, log logr.Logger, vip string, keep map[string]bool) error {
	list := &corev1.NodeList{}
	if err := a.client.List(ctx, list, client.MatchingLabels{agentrollout.PairLabel: agentrollout.PairLabelValue(vip)}); err != nil {
		return fmt.Errorf("listing the Nodes labelled %s: %w", agentrollout.PairLabel, err)
	}
	var errs []error
	for _, n := range list.Items {
		if keep[n.Name] {
			continue
		}
		if err := a.patchPairLabel(ctx, n.Name, n.UID, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("Removed the pair label from the node", "node", n.Name, "label", agentrollout.PairLabel)
	}
	return errors.Join(errs...)
}

// patchPairLabel sets (value != nil) or removes the pair label of the Node name with the
// given UID. A Node that is gone, or was re-created meanwhile, is left alone: the Node
// event of the new one brings its own sync. The UID in the merge patch is the
// precondition: for another object of the same name the API server refuses it as an
// invalid change of the immutable metadata.uid (422; checked against kube-apiserver
// v1.36), and the patch changes nothing else that could be invalid.
func (a *Actuator) patchPairLabel(ctx context.Context, name string, uid types.UID, value *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":    uid,
		"labels": map[string]*string{agentrollout.PairLabel: value},
	}})
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err = a.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching the label %s of Node %s: %w", agentrollout.PairLabel, name, err)
	}
	return nil
}
