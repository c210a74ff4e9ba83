package exposure

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// Delete removes the agent first (so that no node holds the VIP any more), then the VIP
// pair from every port of the network, the floating IP (adopted ones are only
// disassociated) and the VIP port. Resources are found by the status, else by tags.
func (a *Actuator) Delete(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) error {
	gone, err := a.opts.Agent.Delete(ctx, exp.Namespace)
	if err != nil {
		return a.finish(exp, fmt.Errorf("deleting the kube-vip-agent: %w", err))
	}
	if !gone {
		log.Info("Waiting for the kube-vip-agent pods to terminate")
		return &reconcilerutils.RequeueAfterError{
			Cause:        errors.New("waiting for the kube-vip-agent pods to terminate before the VIP is released"),
			RequeueAfter: agentDeleteRequeue,
		}
	}
	return a.finish(exp, a.cleanup(ctx, log, exp, cluster, false))
}

// ForceDelete tries the OpenStack cleanup once without waiting for the agent; errors are
// only logged and never block the deletion.
func (a *Actuator) ForceDelete(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster) error {
	if _, err := a.opts.Agent.Delete(ctx, exp.Namespace); err != nil {
		log.Error(err, "Force deletion: could not delete the kube-vip-agent, orphaning it")
	}
	if err := a.cleanup(ctx, log, exp, cluster, true); err != nil {
		log.Error(err, "Force deletion: OpenStack resources may be left behind")
	}
	return nil
}

// cleanup removes the OpenStack resources. With bestEffort it goes on after errors.
func (a *Actuator) cleanup(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, cluster *extensionscontroller.Cluster, bestEffort bool) error {
	status, err := DecodeStatus(exp)
	if err != nil {
		status = &v1alpha1.ExposureStatus{}
	}
	auth, _, err := a.resolveAuth(ctx, exp, cluster)
	if err != nil {
		return err
	}
	network, err := a.opts.ClientFactory.Network(ctx, auth)
	if err != nil {
		return err
	}
	identity := clusterIdentity(exp, cluster)

	// The VIP ports: the one in the status and every port tagged for this cluster (lost
	// status, or leftovers).
	tagged, err := network.ListPorts(ctx, openstack.PortFilter{Tags: clusterTags(identity)})
	if err != nil {
		return err
	}
	vipPorts := map[string]*ports.Port{}
	for i := range tagged {
		vipPorts[tagged[i].ID] = &tagged[i]
	}
	if status.PortID != "" && vipPorts[status.PortID] == nil {
		p, err := network.GetPort(ctx, status.PortID)
		switch {
		case err == nil:
			vipPorts[p.ID] = p
		case !openstack.IsNotFound(err):
			return err
		}
	}

	var errs []error
	keepGoing := func(err error) bool {
		if err == nil {
			return true
		}
		errs = append(errs, err)
		return bestEffort
	}

	// Adopted floating IP from the config, if the config is still readable.
	adoptedAddress := ""
	if status.FloatingIPAdopted {
		adoptedAddress = status.FloatingIPAddress
	} else if raw, source := selectConfig(exp, clusterShoot(cluster)); source != SourceNone {
		if cfg, err := DecodeConfig(raw); err == nil && cfg.FloatingIP != nil {
			adoptedAddress = *cfg.FloatingIP
		}
	}

	for _, port := range vipPorts {
		vip := openstack.PortAddress(port, "")
		networkID := port.NetworkID
		if vip != "" {
			if !keepGoing(a.removePairsInNetwork(ctx, log, network, networkID, vip, port.ID)) {
				return errors.Join(errs...)
			}
		}
		fips, err := network.FloatingIPsOfPort(ctx, port.ID)
		if !keepGoing(err) {
			return errors.Join(errs...)
		}
		for _, fip := range fips {
			if fip.FloatingIP == adoptedAddress || (status.FloatingIPAdopted && fip.ID == status.FloatingIPID) {
				log.Info("Disassociating the adopted floating IP", "floatingIP", fip.FloatingIP)
				err = network.DisassociateFloatingIP(ctx, fip.ID)
			} else {
				log.Info("Deleting the floating IP", "floatingIP", fip.FloatingIP)
				err = network.DeleteFloatingIP(ctx, fip.ID)
			}
			if !keepGoing(err) {
				return errors.Join(errs...)
			}
		}
		log.Info("Deleting the VIP port", "port", port.ID)
		if !keepGoing(network.DeletePort(ctx, port.ID)) {
			return errors.Join(errs...)
		}
	}
	if len(vipPorts) == 0 && status.VIPAddress != "" && status.NetworkID != "" {
		// The port is gone already, but pairs may remain.
		keepGoing(a.removePairsInNetwork(ctx, log, network, status.NetworkID, status.VIPAddress, ""))
	}
	return errors.Join(errs...)
}

// removePairsInNetwork lists the network's ports once and removes the VIP pair from every
// port that carries it, except the VIP port itself. Other pairs stay.
func (a *Actuator) removePairsInNetwork(ctx context.Context, log logr.Logger, network *openstack.Network, networkID, vip, vipPortID string) error {
	list, err := network.ListPorts(ctx, openstack.PortFilter{NetworkID: networkID})
	if err != nil {
		return err
	}
	var errs []error
	for i := range list {
		p := &list[i]
		if p.ID == vipPortID || !openstack.HasPair(p, vip) {
			continue
		}
		if _, err := network.RemovePairFromPort(ctx, p, vip); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("Removed the VIP from the allowed address pairs of a port", "port", p.ID)
	}
	return errors.Join(errs...)
}
