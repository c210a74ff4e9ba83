// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// errAgentPodsRemain makes the deletion wait, with backoff, until no agent pod can hold
// the VIP any more.
var errAgentPodsRemain = errors.New("waiting for the kube-vip-agent pods to terminate before the VIP is released")

// Delete removes the agent first (so that no node holds the VIP any more), then the VIP
// pair from the ports, the floating IP (only those the extension created are deleted,
// others are disassociated) and the VIP port. Resources are found by the status, else by
// name and tags.
func (a *Actuator) Delete(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) error {
	unlock := a.locks.lock(exp.UID)
	defer unlock()
	others, err := a.agentOfAnother(ctx, exp)
	if err != nil {
		return a.finish(exp, err)
	}
	if others {
		log.Info("Leaving the kube-vip-agent alone: this exposure never had a VIP, and another exposure in the namespace runs the agent")
	} else {
		gone, err := a.opts.Agent.Delete(ctx, exp.Namespace)
		if err != nil {
			return a.finish(exp, fmt.Errorf("deleting the kube-vip-agent: %w", err))
		}
		if !gone {
			log.Info("Waiting for the kube-vip-agent pods to terminate")
			return a.finish(exp, errAgentPodsRemain)
		}
		if err := a.removeAllPairLabels(ctx, log, exp); err != nil {
			return a.finish(exp, err)
		}
	}
	return a.finish(exp, a.cleanup(ctx, log, exp, cluster, false))
}

// agentOfAnother tells whether the agent in exp's namespace is another exposure's: exp
// never recorded a VIP (the agent is rolled out only after the VIP exists, e.g. exp was
// refused as a second exposure of the cluster) and another exposure lives in the
// namespace. The agent's objects are per namespace, so deleting them would take the
// other exposure's front door down.
func (a *Actuator) agentOfAnother(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure) (bool, error) {
	status, err := DecodeStatus(exp)
	if err != nil {
		// As cleanup does: an unreadable status recorded nothing this exposure can claim.
		status = &v1alpha1.ExposureStatus{}
	}
	if status.VIPAddress != "" || status.PortID != "" {
		return false, nil
	}
	list := &extensionsv1alpha1.SelfHostedShootExposureList{}
	if err := a.client.List(ctx, list, client.InNamespace(exp.Namespace)); err != nil {
		return false, fmt.Errorf("listing the SelfHostedShootExposures in %s: %w", exp.Namespace, err)
	}
	for _, x := range list.Items {
		if x.UID != exp.UID && x.DeletionTimestamp == nil {
			return true, nil
		}
	}
	return false, nil
}

// removeAllPairLabels removes the pair label of the exposure's VIP from every Node. It
// runs before the pairs are removed: a node without the label runs no agent, so a label
// must never outlive its pair, while a pair may outlive its label. An exposure that never
// recorded a VIP labelled nothing.
func (a *Actuator) removeAllPairLabels(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure) error {
	status, err := DecodeStatus(exp)
	if err != nil {
		// As cleanup does: an unreadable status recorded nothing, so no label names its VIP.
		status = &v1alpha1.ExposureStatus{}
	}
	if status.VIPAddress == "" {
		return nil
	}
	return a.removePairLabels(ctx, log, status.VIPAddress, nil)
}

// ForceDelete removes the agent's objects without waiting for its pods and tries the
// OpenStack cleanup once; errors are only logged and never block the deletion. It spares
// the agent as Delete does when it is another exposure's, and also when that cannot be
// told: an orphaned agent is the lesser harm than another exposure's front door gone.
func (a *Actuator) ForceDelete(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) error {
	unlock := a.locks.lock(exp.UID)
	defer unlock()
	others, err := a.agentOfAnother(ctx, exp)
	switch {
	case err != nil:
		log.Error(err, "Force deletion: cannot tell whether another exposure runs the kube-vip-agent, orphaning it")
	case others:
		log.Info("Force deletion: leaving the kube-vip-agent alone: this exposure never had a VIP, and another exposure in the namespace runs the agent")
	default:
		if err := a.opts.Agent.ForceDelete(ctx, exp.Namespace); err != nil {
			log.Error(err, "Force deletion: could not delete the kube-vip-agent, orphaning what is left of it")
		}
		// Without the label the DaemonSet controller also deletes agent pods that remain.
		if err := a.removeAllPairLabels(ctx, log, exp); err != nil {
			log.Error(err, "Force deletion: the pair label may be left on Nodes")
		}
	}
	if err := a.cleanup(ctx, log, exp, cluster, true); err != nil {
		log.Error(err, "Force deletion: OpenStack resources may be left behind")
	}
	return nil
}

// cleanup removes the OpenStack resources and clears them from the status as they go.
// With bestEffort it goes on after errors.
func (a *Actuator) cleanup(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster, bestEffort bool) error {
	status, err := DecodeStatus(exp)
	if err != nil {
		status = &v1alpha1.ExposureStatus{}
	}
	auth, _, err := a.resolveAuth(ctx, exp, cluster)
	if err == nil {
		var network *openstack.Network
		if network, err = a.opts.ClientFactory.Network(ctx, auth); err == nil {
			return a.cleanupOpenStack(ctx, log, exp, cluster, network, status, bestEffort)
		}
	}
	// The status records the identity before the exposure's first write to Neutron (see
	// networking.Service.GetOrCreateVIPPort): without it, nothing was ever created, whatever OpenStack answers now
	// (wrong credentials, an endpoint that never answered).
	if status.Identity == "" && status.PortID == "" && status.VIPAddress == "" && status.FloatingIPID == "" {
		log.Info("Deleting without OpenStack cleanup: the exposure never created anything in OpenStack, and OpenStack cannot be used", "reason", err.Error())
		a.event(exp, corev1.EventTypeNormal, eventDeletedWithoutCleanup, "Deleted without an OpenStack cleanup: the exposure never created anything in OpenStack (%v)", err)
		return nil
	}
	return err
}

func (a *Actuator) cleanupOpenStack(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster, network networking.Neutron, status *v1alpha1.ExposureStatus, bestEffort bool) error {
	d := networking.Deletion{
		Mark:       networking.MarkOf(status, clusterIdentity(exp, cluster), exp.UID, clusterShoot(cluster)),
		BestEffort: bestEffort,
		NodeIPs:    a.controlPlaneNodeIPs,
	}
	// The pinned address comes from the config too, if it is still readable.
	if raw, source := selectConfig(exp, clusterShoot(cluster)); source != SourceNone {
		if decoded, err := DecodeConfig(raw); err == nil && decoded.FloatingIP != nil {
			d.PinnedAddress = *decoded.FloatingIP
		}
	}
	err := networking.NewService(network, networking.Options{Log: log}).DeleteFrontDoor(ctx, d, status)
	// Whatever was removed is recorded, also when a later step failed.
	return errors.Join(err, a.patchStatus(ctx, exp, status))
}

// controlPlaneNodeIPs returns the InternalIPs of the control-plane Nodes.
func (a *Actuator) controlPlaneNodeIPs(ctx context.Context) ([]string, error) {
	nodes, err := a.controlPlaneNodes(ctx)
	return nodeIPs(nodes), err
}
