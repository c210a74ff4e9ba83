package exposure

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// SyncNodePairs keeps the VIP pair on exactly the ports of the current control-plane
// Nodes: it adds it where missing and removes it from ports of the network that no longer
// belong to a control-plane Node (never from the VIP port, never other pairs). It records
// the node ports in the status. It makes no OpenStack call while the status has no VIP.
// A control-plane Node without a port yields an error, so that the caller retries.
func (a *Actuator) SyncNodePairs(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure) error {
	status, err := DecodeStatus(exp)
	if err != nil {
		return err
	}
	if status.VIPAddress == "" || status.NetworkID == "" || exp.DeletionTimestamp != nil {
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
	network, err := a.opts.ClientFactory.Network(ctx, auth)
	if err != nil {
		return err
	}
	list, err := network.ListPorts(ctx, openstack.PortFilter{NetworkID: status.NetworkID})
	if err != nil {
		return err
	}

	byIP := map[string]*ports.Port{}
	for i := range list {
		for _, ip := range list[i].FixedIPs {
			byIP[ip.IPAddress] = &list[i]
		}
	}
	var (
		errs      []error
		missing   []string
		nodePorts []v1alpha1.NodePort
		keep      = map[string]bool{status.PortID: true}
	)
	for _, n := range nodes {
		port := byIP[n.IP]
		if port == nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", n.Name, n.IP))
			continue
		}
		keep[port.ID] = true
		if updated, err := network.EnsurePair(ctx, port, status.VIPAddress); err != nil {
			errs = append(errs, err)
			continue
		} else if updated {
			log.Info("Added the VIP to the allowed address pairs of a node port", "node", n.Name, "port", port.ID)
		}
		nodePorts = append(nodePorts, v1alpha1.NodePort{NodeName: n.Name, PortID: port.ID})
	}
	for i := range list {
		p := &list[i]
		if keep[p.ID] || !openstack.HasPair(p, status.VIPAddress) {
			continue
		}
		if _, err := network.RemovePairFromPort(ctx, p, status.VIPAddress); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("Removed the VIP from the allowed address pairs of a former control-plane port", "port", p.ID)
	}

	if !slices.Equal(status.NodePorts, nodePorts) {
		status.NodePorts = nodePorts
		if err := a.patchStatus(ctx, exp, status); err != nil {
			errs = append(errs, err)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%w: no port in network %s for %v yet", errNodePortMissing, status.NetworkID, missing))
	}
	return errors.Join(errs...)
}
