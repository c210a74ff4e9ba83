package exposure

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
)

// SyncNodePairs keeps the VIP pair on exactly the ports of the current control-plane
// Nodes: it adds it where missing and removes it from ports of the network that no longer
// belong to a control-plane Node (never from the VIP port, never other pairs). It records
// the node ports in the status. It makes no OpenStack call while the status has no VIP.
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
	if status.VIPAddress == "" || status.NetworkID == "" {
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
	nodePorts, syncErr := syncPairs(ctx, log, network, pairSync{
		networkID: status.NetworkID,
		vip:       status.VIPAddress,
		vipPortID: status.PortID,
		nodes:     nodes,
	})
	if !slices.Equal(status.NodePorts, nodePorts) {
		status.NodePorts = nodePorts
		if err := a.patchStatus(ctx, exp, status); err != nil {
			return errors.Join(syncErr, err)
		}
	}
	return syncErr
}
