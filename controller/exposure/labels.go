// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

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
