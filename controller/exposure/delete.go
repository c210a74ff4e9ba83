// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
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

// ForceDelete tries the OpenStack cleanup once without waiting for the agent; errors are
// only logged and never block the deletion.
func (a *Actuator) ForceDelete(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) error {
	unlock := a.locks.lock(exp.UID)
	defer unlock()
	if _, err := a.opts.Agent.Delete(ctx, exp.Namespace); err != nil {
		log.Error(err, "Force deletion: could not delete the kube-vip-agent, orphaning it")
	}
	// Without the label the DaemonSet controller also deletes agent pods that remain.
	if err := a.removeAllPairLabels(ctx, log, exp); err != nil {
		log.Error(err, "Force deletion: the pair label may be left on Nodes")
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
	// ensurePort): without it, nothing was ever created, whatever OpenStack answers now
	// (wrong credentials, an endpoint that never answered).
	if status.Identity == "" && status.PortID == "" && status.VIPAddress == "" && status.FloatingIPID == "" {
		log.Info("Deleting without OpenStack cleanup: the exposure never created anything in OpenStack, and OpenStack cannot be used", "reason", err.Error())
		a.event(exp, corev1.EventTypeNormal, eventDeletedWithoutCleanup, "Deleted without an OpenStack cleanup: the exposure never created anything in OpenStack (%v)", err)
		return nil
	}
	return err
}

func (a *Actuator) cleanupOpenStack(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster, network neutron, status *v1alpha1.ExposureStatus, bestEffort bool) error {
	m := markOf(status, clusterIdentity(exp, cluster), exp.UID, clusterShoot(cluster))

	vipPorts, err := a.findVIPPorts(ctx, network, m, status)
	if err != nil {
		return err
	}

	var errs []error
	keepGoing := func(err error) bool {
		if err == nil {
			return true
		}
		errs = append(errs, err)
		return bestEffort
	}
	// Whatever was removed is recorded, also when a later step fails: a retry must not act
	// on a VIP address that Neutron may have handed out again.
	done := func() error {
		if err := a.patchStatus(ctx, exp, status); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}

	// Whose each floating IP is, decided once, before the status is cleared below. The
	// pinned address comes from the config too, if it is still readable.
	cfg := &Config{}
	if raw, source := selectConfig(exp, clusterShoot(cluster)); source != SourceNone {
		if decoded, err := DecodeConfig(raw); err == nil && decoded.FloatingIP != nil {
			cfg.FloatingIP = *decoded.FloatingIP
		}
	}
	owners := floatingIPOwnersOf(m, cfg, status)

	for _, port := range vipPorts {
		vip := openstack.PortAddress(port, "")
		if vip != "" {
			// The port holds the VIP as its fixed IP, so a VIP pair anywhere in the network
			// is this extension's.
			all := func(*ports.Port) bool { return true }
			if err := a.removePairs(ctx, log, network, pairRemoval{networkID: port.NetworkID, vip: vip, vipPortID: port.ID, accept: all}); err != nil {
				// Never free the VIP while pairs for it remain: Neutron would hand the
				// address to the next port, and the control-plane nodes could then answer
				// for it. Also a forced deletion keeps (orphans) the port then.
				errs = append(errs, err)
				log.Error(err, "Keeping the VIP port: the VIP is still an allowed address pair of node ports", "port", port.ID, "vip", vip)
				if !bestEffort {
					return done()
				}
				continue
			}
		}
		fips, err := network.FloatingIPsOfPort(ctx, port.ID)
		if !keepGoing(err) {
			return done()
		}
		for _, fip := range fips {
			if owners.of(&fip) == floatingIPOurs {
				log.Info("Deleting the floating IP", "floatingIP", fip.FloatingIP)
				err = network.DeleteFloatingIP(ctx, fip.ID)
			} else {
				log.Info("Disassociating a floating IP the extension did not create", "floatingIP", fip.FloatingIP)
				err = network.DisassociateFloatingIP(ctx, fip.ID)
			}
			if !keepGoing(err) {
				return done()
			}
			if fip.ID == status.FloatingIPID {
				clearFloatingIP(status)
			}
		}
		log.Info("Deleting the VIP port", "port", port.ID)
		if !keepGoing(network.DeletePort(ctx, port.ID)) {
			return done()
		}
		if port.ID == status.PortID || (vip != "" && vip == status.VIPAddress) {
			status.PortID, status.VIPAddress, status.NodePorts = "", "", nil
		}
	}

	if status.VIPAddress != "" && status.NetworkID != "" {
		// The port is gone already, but pairs may remain.
		keepGoing(a.removeStalePairs(ctx, log, network, status))
	}
	if status.FloatingIPID != "" {
		// The port is gone already, its floating IP may remain.
		keepGoing(a.deleteOrphanedFloatingIP(ctx, log, network, status.FloatingIPID, owners))
	}
	// Every floating IP with the cluster's owner mark goes, also one that no port or status
	// names any more (e.g. left behind by a lost port).
	if len(errs) == 0 || bestEffort {
		keepGoing(a.deleteMarkedFloatingIPs(ctx, log, network, owners))
	}
	if len(errs) == 0 {
		status.PortID, status.VIPAddress, status.NodePorts = "", "", nil
		clearFloatingIP(status)
	}
	return done()
}

// deleteMarkedFloatingIPs deletes the floating IPs that carry the cluster's owner mark,
// except the one the user pinned, which was only disassociated.
func (a *Actuator) deleteMarkedFloatingIPs(ctx context.Context, log logr.Logger, network neutron, owners floatingIPOwners) error {
	marked, err := network.ListFloatingIPs(ctx, floatingips.ListOpts{Description: owners.mark.description()})
	if err != nil {
		return err
	}
	var errs []error
	for _, fip := range marked {
		if owners.of(&fip) != floatingIPOurs {
			continue
		}
		log.Info("Deleting a floating IP with the cluster's owner mark", "floatingIP", fip.FloatingIP)
		if err := network.DeleteFloatingIP(ctx, fip.ID); err != nil && !openstack.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func clearFloatingIP(status *v1alpha1.ExposureStatus) {
	status.FloatingIPID, status.FloatingIPAddress, status.FloatingIPAdopted = "", "", false
}

// findVIPPorts returns the VIP ports of the cluster: the one in the status and every
// unbound port with the cluster's port name that carries the cluster's tags, or no tags
// but lies in the status' network (the tagging after the create may have failed).
func (a *Actuator) findVIPPorts(ctx context.Context, network neutron, m mark, status *v1alpha1.ExposureStatus) (map[string]*ports.Port, error) {
	named, err := network.ListPorts(ctx, openstack.PortFilter{Name: vipPortName(m.identity)})
	if err != nil {
		return nil, err
	}
	vipPorts := map[string]*ports.Port{}
	for i := range named {
		p := &named[i]
		if !openstack.IsVIPPortCandidate(p, m.tags()) || m.foreignOwner(p) != "" {
			continue
		}
		if len(p.Tags) > 0 || p.ID == status.PortID || (status.NetworkID != "" && p.NetworkID == status.NetworkID) {
			vipPorts[p.ID] = p
		}
	}
	if status.PortID != "" && vipPorts[status.PortID] == nil {
		p, err := network.GetPort(ctx, status.PortID)
		switch {
		case err == nil:
			vipPorts[p.ID] = p
		case !openstack.IsNotFound(err):
			return nil, err
		}
	}
	return vipPorts, nil
}

// removeStalePairs removes the VIP pair of status after its port is gone. Neutron may
// have handed the address to another port meanwhile: then nothing is touched. Otherwise
// only the ports recorded in status.nodePorts and the ports of the current control-plane
// Nodes lose the pair.
func (a *Actuator) removeStalePairs(ctx context.Context, log logr.Logger, network neutron, status *v1alpha1.ExposureStatus) error {
	nodes, err := a.controlPlaneNodes(ctx)
	if err != nil {
		return err
	}
	nodePortIDs := map[string]bool{}
	for _, np := range status.NodePorts {
		nodePortIDs[np.PortID] = true
	}
	nodeIPs := map[string]bool{}
	for _, n := range nodes {
		nodeIPs[n.IP] = true
	}
	return a.removePairs(ctx, log, network, pairRemoval{networkID: status.NetworkID, vip: status.VIPAddress, accept: func(p *ports.Port) bool {
		if nodePortIDs[p.ID] {
			return true
		}
		for _, ip := range p.FixedIPs {
			if nodeIPs[ip.IPAddress] {
				return true
			}
		}
		return false
	}})
}

// pairRemoval selects the ports that lose the VIP pair.
type pairRemoval struct {
	networkID string
	vip       string
	// vipPortID is the VIP port (may be empty when it is gone); it keeps its fixed IP.
	vipPortID string
	// accept tells whether the port may lose the pair.
	accept func(*ports.Port) bool
}

// removePairs lists the network's ports once and removes the VIP pair from every port
// that carries it and that r.accept accepts. Other pairs stay. When a port other than the
// VIP port holds the VIP as its fixed IP, the address belongs to someone else now and no
// port is touched.
func (a *Actuator) removePairs(ctx context.Context, log logr.Logger, network neutron, r pairRemoval) error {
	list, err := network.ListPorts(ctx, openstack.PortFilter{NetworkID: r.networkID})
	if err != nil {
		return err
	}
	for i := range list {
		if list[i].ID != r.vipPortID && hasFixedIP(&list[i], r.vip) {
			log.Info("The VIP address belongs to another port now; leaving the allowed address pairs alone", "vip", r.vip, "port", list[i].ID)
			return nil
		}
	}
	var errs []error
	for i := range list {
		p := &list[i]
		if p.ID == r.vipPortID || !r.accept(p) || !openstack.HasPair(p, r.vip) {
			continue
		}
		if _, err := network.RemovePairFromPort(ctx, p, r.vip); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("Removed the VIP from the allowed address pairs of a port", "port", p.ID)
	}
	return errors.Join(errs...)
}

func hasFixedIP(p *ports.Port, ip string) bool {
	for _, f := range p.FixedIPs {
		if f.IPAddress == ip {
			return true
		}
	}
	return false
}

// deleteOrphanedFloatingIP deletes the floating IP of the status when it is the
// exposure's; the user's or someone else's is left alone.
func (a *Actuator) deleteOrphanedFloatingIP(ctx context.Context, log logr.Logger, network neutron, id string, owners floatingIPOwners) error {
	fip, err := network.GetFloatingIP(ctx, id)
	if err != nil {
		if openstack.IsNotFound(err) {
			return nil
		}
		return err
	}
	if owners.of(fip) != floatingIPOurs {
		log.Info("Leaving a floating IP that is not the exposure's to release", "floatingIP", fip.FloatingIP)
		return nil
	}
	log.Info("Deleting the floating IP of the vanished VIP port", "floatingIP", fip.FloatingIP)
	return network.DeleteFloatingIP(ctx, id)
}
