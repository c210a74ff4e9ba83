// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"errors"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// Deletion is what the deletion of an exposure's front door needs beside its status.
type Deletion struct {
	Mark Mark
	// PinnedAddress is the floatingIP of the provider config, if it is still readable: it
	// is only disassociated.
	PinnedAddress string
	// BestEffort goes on after errors (a forced deletion).
	BestEffort bool
	// NodeIPs returns the addresses of the current control-plane nodes, whose ports lose
	// a VIP pair left behind by a VIP port that is gone.
	NodeIPs func(context.Context) ([]string, error)
}

// DeleteFrontDoor removes the VIP pairs, the floating IP (only the extension's is deleted,
// others are disassociated) and the VIP port, and clears them from status as it goes,
// also when a later step fails: a retry must not act on a VIP address that Neutron may
// have handed out again. Resources are found by the status, else by name and tags.
func (s *Service) DeleteFrontDoor(ctx context.Context, d Deletion, status *v1alpha1.ExposureStatus) error {
	m, bestEffort := d.Mark, d.BestEffort

	vipPorts, taken, err := s.findVIPPorts(ctx, m, status)
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
	done := func() error { return errors.Join(errs...) }

	// Decided before the status is cleared below, as the floating IPs' owners are. Without
	// the Nodes, a forced deletion goes on with the recorded node ports.
	managed, err := managedPorts(ctx, d.NodeIPs, status)
	if !keepGoing(err) {
		return done()
	}

	// Whose each floating IP is, decided once, before the status is cleared below.
	owners := FloatingIPOwnersOf(m, d.PinnedAddress, status)
	owners.taken = taken

	for _, port := range vipPorts {
		vip := openstack.PortAddress(port, "")
		if vip != "" {
			// The port holds each VIP as a fixed IP (one per IP family); only the node ports
			// the exposure put a pair on lose it, as in reconcile.
			var err error
			for _, fixed := range port.FixedIPs {
				if err = s.removePairs(ctx, pairRemoval{networkID: port.NetworkID, vip: fixed.IPAddress, vipPortID: port.ID, accept: managed}); err != nil {
					break
				}
			}
			if err != nil {
				// Never free the VIP while pairs for it remain: Neutron would hand the
				// address to the next port, and the control-plane nodes could then answer
				// for it. Also a forced deletion keeps (orphans) the port then.
				errs = append(errs, err)
				s.log.Error(err, "Keeping the VIP port: the VIP is still an allowed address pair of node ports", "port", port.ID, "vip", vip)
				if !bestEffort {
					return done()
				}
				continue
			}
		}
		fips, err := s.neutron.FloatingIPsOfPort(ctx, port.ID)
		if !keepGoing(err) {
			return done()
		}
		for _, fip := range fips {
			if owners.Of(&fip) == FloatingIPOurs {
				s.log.Info("Deleting the floating IP", "floatingIP", fip.FloatingIP)
				err = s.neutron.DeleteFloatingIP(ctx, fip.ID)
			} else {
				s.log.Info("Disassociating a floating IP the extension did not create", "floatingIP", fip.FloatingIP)
				err = s.neutron.DisassociateFloatingIP(ctx, fip.ID)
			}
			if !keepGoing(err) {
				return done()
			}
			if fip.ID == status.FloatingIPID {
				clearFloatingIP(status)
			}
		}
		s.log.Info("Deleting the VIP port", "port", port.ID)
		if !keepGoing(s.neutron.DeletePort(ctx, port.ID)) {
			return done()
		}
		if port.ID == status.PortID || (vip != "" && vip == status.VIPAddress) {
			status.PortID, status.VIPAddress, status.OtherVIPs, status.NodePorts = "", "", nil, nil
		}
	}

	if status.VIPAddress != "" && status.NetworkID != "" {
		// The port is gone already (or someone bound it), but pairs may remain.
		keepGoing(s.removeStalePairs(ctx, managed, status))
	}
	if status.FloatingIPID != "" {
		// The port is gone already, its floating IP may remain.
		keepGoing(s.deleteOrphanedFloatingIP(ctx, status.FloatingIPID, owners))
	}
	// Every floating IP with the cluster's owner mark goes, also one that no port or status
	// names any more (e.g. left behind by a lost port).
	if len(errs) == 0 || bestEffort {
		keepGoing(s.deleteMarkedFloatingIPs(ctx, owners))
	}
	if len(errs) == 0 {
		status.PortID, status.VIPAddress, status.OtherVIPs, status.NodePorts = "", "", nil, nil
		clearFloatingIP(status)
	}
	return done()
}

// deleteMarkedFloatingIPs deletes the floating IPs that carry the cluster's owner mark,
// except the one the user pinned, which was only disassociated.
func (s *Service) deleteMarkedFloatingIPs(ctx context.Context, owners FloatingIPOwners) error {
	marked, err := s.neutron.ListFloatingIPs(ctx, floatingips.ListOpts{Description: owners.mark.Description()})
	if err != nil {
		return err
	}
	var errs []error
	for _, fip := range marked {
		if owners.Of(&fip) != FloatingIPOurs || owners.onTakenPort(&fip) {
			continue
		}
		s.log.Info("Deleting a floating IP with the cluster's owner mark", "floatingIP", fip.FloatingIP)
		if err := s.neutron.DeleteFloatingIP(ctx, fip.ID); err != nil && !openstack.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func clearFloatingIP(status *v1alpha1.ExposureStatus) {
	status.FloatingIPID, status.FloatingIPAddress, status.FloatingIPAdopted = "", "", false
}

// findVIPPorts returns the VIP ports of the cluster: the one in the status and the others
// classifyPort calls ours. taken holds the IDs of the recorded port or ours that are bound
// to a device now: someone else's, never deleted, and neither are their floating IPs.
func (s *Service) findVIPPorts(ctx context.Context, m Mark, status *v1alpha1.ExposureStatus) (vipPorts map[string]*ports.Port, taken map[string]bool, err error) {
	named, err := s.neutron.ListPorts(ctx, openstack.PortFilter{Name: VIPPortName(m.Identity)})
	if err != nil {
		return nil, nil, err
	}
	vipPorts, taken = map[string]*ports.Port{}, map[string]bool{}
	view := portView{mark: m, networkID: status.NetworkID, recordedPortID: status.PortID}
	consider := func(p *ports.Port) {
		switch classifyPort(view, p) {
		case classTaken:
			s.log.Info("Leaving the VIP port alone: it is bound to a device now", "port", p.ID, "deviceOwner", p.DeviceOwner, "deviceID", p.DeviceID)
			taken[p.ID] = true
		case classRecorded, classOurs, classOursUntagged:
			vipPorts[p.ID] = p
		}
	}
	for i := range named {
		consider(&named[i])
	}
	if status.PortID != "" && vipPorts[status.PortID] == nil && !taken[status.PortID] {
		p, err := s.neutron.GetPort(ctx, status.PortID)
		switch {
		case err == nil:
			consider(p)
		case !openstack.IsNotFound(err):
			return nil, nil, err
		}
	}
	return vipPorts, taken, nil
}

// managedPorts returns the rule for which ports may lose a VIP pair, the same as in
// reconcile: the node ports status records and the ports of the current control-plane
// Nodes. A pair on any other port is someone else's. When the Nodes cannot be read, the
// rule holds the recorded ports only, and the error is returned with it.
func managedPorts(ctx context.Context, nodeIPsOf func(context.Context) ([]string, error), status *v1alpha1.ExposureStatus) (func(*ports.Port) bool, error) {
	var (
		nodes []string
		err   error
	)
	if nodeIPsOf != nil {
		nodes, err = nodeIPsOf(ctx)
	}
	nodePortIDs := map[string]bool{}
	for _, np := range status.NodePorts {
		nodePortIDs[np.PortID] = true
	}
	return func(p *ports.Port) bool {
		return nodePortIDs[p.ID] || slices.ContainsFunc(p.FixedIPs, func(ip ports.IP) bool { return slices.Contains(nodes, ip.IPAddress) })
	}, err
}

// removeStalePairs removes the VIP pairs of status from the managed ports after the VIP
// port is gone. Neutron may have handed the address to another port meanwhile: then
// nothing is touched.
func (s *Service) removeStalePairs(ctx context.Context, managed func(*ports.Port) bool, status *v1alpha1.ExposureStatus) error {
	var errs []error
	for _, vip := range allVIPs(status) {
		errs = append(errs, s.removePairs(ctx, pairRemoval{networkID: status.NetworkID, vip: vip, accept: managed}))
	}
	return errors.Join(errs...)
}

// allVIPs are the VIPs the status records, one per IP family.
func allVIPs(status *v1alpha1.ExposureStatus) []string {
	vips := []string{status.VIPAddress}
	for _, v := range status.OtherVIPs {
		vips = append(vips, v.Address)
	}
	return vips
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
func (s *Service) removePairs(ctx context.Context, r pairRemoval) error {
	list, err := s.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: r.networkID})
	if err != nil {
		return err
	}
	for i := range list {
		if list[i].ID != r.vipPortID && openstack.HasFixedIP(&list[i], r.vip) {
			s.log.Info("The VIP address belongs to another port now; leaving the allowed address pairs alone", "vip", r.vip, "port", list[i].ID)
			return nil
		}
	}
	var errs []error
	for i := range list {
		p := &list[i]
		if p.ID == r.vipPortID || !r.accept(p) || !openstack.HasPair(p, r.vip) {
			continue
		}
		if _, err := s.neutron.RemovePairFromPort(ctx, p, r.vip); err != nil {
			errs = append(errs, err)
			continue
		}
		s.log.Info("Removed the VIP from the allowed address pairs of a port", "port", p.ID)
	}
	return errors.Join(errs...)
}

// deleteOrphanedFloatingIP deletes the floating IP of the status when it is the
// exposure's; the user's or someone else's is left alone.
func (s *Service) deleteOrphanedFloatingIP(ctx context.Context, id string, owners FloatingIPOwners) error {
	fip, err := s.neutron.GetFloatingIP(ctx, id)
	if err != nil {
		if openstack.IsNotFound(err) {
			return nil
		}
		return err
	}
	if owners.Of(fip) != FloatingIPOurs || owners.onTakenPort(fip) {
		s.log.Info("Leaving a floating IP that is not the exposure's to release", "floatingIP", fip.FloatingIP)
		return nil
	}
	s.log.Info("Deleting the floating IP of the vanished VIP port", "floatingIP", fip.FloatingIP)
	return s.neutron.DeleteFloatingIP(ctx, id)
}
