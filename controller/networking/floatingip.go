// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// This file holds the floating IP of the front door; whose a floating IP is, is decided
// in ownership.go.

// ReconcileFloatingIP keeps, adopts, re-associates or (only when the exposure has none yet)
// allocates the floating IP of the VIP port and records it in status. It never releases
// one: a change of address is refused by CheckImmutable before this runs.
func (s *Service) ReconcileFloatingIP(ctx context.Context, fd *FrontDoor, port *ports.Port, portCreated bool, status *v1alpha1.ExposureStatus) error {
	cfg := fd.Spec
	if cfg.InternalOnly {
		return nil
	}
	owners := FloatingIPOwnersOf(fd.Mark, cfg.FloatingIP, status)
	if status.FloatingIPID != "" {
		return s.keepFloatingIP(ctx, fd, owners, port, status)
	}
	if cfg.FloatingIP != "" {
		return s.adoptFloatingIP(ctx, cfg.FloatingIP, port, status)
	}
	fip, err := s.findOwnedFloatingIP(ctx, owners, port, portCreated)
	if err != nil {
		return err
	}
	if fip == nil {
		floatingNetworkID, err := s.floatingNetwork(ctx, cfg, fd.FloatingNetworkID)
		if err != nil {
			return err
		}
		if fip, err = s.neutron.CreateFloatingIP(ctx, openstack.FloatingIPSpec{
			FloatingNetworkID: floatingNetworkID,
			PortID:            port.ID,
			FixedIP:           status.VIPAddress,
			Description:       fd.Mark.Description(),
		}); err != nil {
			return err
		}
		s.log.Info("Created the floating IP", "floatingIP", fip.FloatingIP)
		s.record(EventFloatingIPCreated, "Created the floating IP %s for the VIP %s", fip.FloatingIP, status.VIPAddress)
	} else if fip.PortID != port.ID {
		if fip, err = s.neutron.AssociateFloatingIP(ctx, fip.ID, port.ID); err != nil {
			return err
		}
		s.log.Info("Re-associated the exposure's floating IP with the VIP port", "floatingIP", fip.FloatingIP)
		s.record(EventFloatingIPAssociate, "Re-associated the floating IP %s with the VIP port %s", fip.FloatingIP, port.ID)
	} else if err := s.checkFloatingPool(ctx, cfg, fip, status); err != nil {
		return err
	}
	recordFloatingIP(status, fip, false)
	return nil
}

func recordFloatingIP(status *v1alpha1.ExposureStatus, fip *floatingips.FloatingIP, pinned bool) {
	status.FloatingIPID, status.FloatingIPAddress, status.FloatingNetworkID = fip.ID, fip.FloatingIP, fip.FloatingNetworkID
	status.FloatingIPAdopted = pinned
}

// keepFloatingIP keeps the recorded floating IP on the VIP port: it re-associates it when
// it was disassociated (e.g. with a lost port) and gets the same address back when it was
// deleted out of band; it never takes another address.
func (s *Service) keepFloatingIP(ctx context.Context, fd *FrontDoor, owners FloatingIPOwners, port *ports.Port, status *v1alpha1.ExposureStatus) error {
	fip, err := s.neutron.GetFloatingIP(ctx, status.FloatingIPID)
	switch {
	case openstack.IsNotFound(err):
		return s.replaceFloatingIP(ctx, fd, owners, port, status)
	case err != nil:
		return err
	}
	// Pinning the current address makes it the user's: it then outlives the exposure.
	pinned := owners.Of(fip) == FloatingIPPinned
	switch fip.PortID {
	case port.ID:
		if !pinned {
			if err := s.checkFloatingPool(ctx, fd.Spec, fip, status); err != nil {
				return err
			}
		}
	case "":
		if fip, err = s.neutron.AssociateFloatingIP(ctx, fip.ID, port.ID); err != nil {
			return err
		}
		s.log.Info("Re-associated the exposure's floating IP with the VIP port", "floatingIP", fip.FloatingIP)
		s.record(EventFloatingIPAssociate, "Re-associated the floating IP %s with the VIP port %s", fip.FloatingIP, port.ID)
	default:
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the exposure's floating IP %s was associated with port %s outside of the extension: disassociate it so that it points at the VIP port %s again",
			fip.FloatingIP, fip.PortID, port.ID), gardencorev1beta1.ErrorInfraDependencies)
	}
	recordFloatingIP(status, fip, pinned)
	return nil
}

// replaceFloatingIP gets the recorded address back after the floating IP was deleted out of
// band: a floating IP with that address and the exposure's mark (allocated again by an
// admin, as the error below asks) is taken, else the same address is requested again. If
// the address is gone (taken, or the policy forbids choosing it), the exposure says so
// rather than publishing a new address that DNS will not follow.
func (s *Service) replaceFloatingIP(ctx context.Context, fd *FrontDoor, owners FloatingIPOwners, port *ports.Port, status *v1alpha1.ExposureStatus) error {
	if status.FloatingIPAdopted {
		return configError("the floating IP %s named in floatingIP was deleted: allocate it again in the project", status.FloatingIPAddress)
	}
	same, err := s.neutron.ListFloatingIPs(ctx, floatingips.ListOpts{FloatingIP: status.FloatingIPAddress})
	if err != nil {
		return err
	}
	if len(same) > 0 {
		fip := &same[0]
		if owners.Of(fip) != FloatingIPOurs {
			return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the exposure's floating IP %s was deleted outside of the extension and the address is allocated again as floating IP %s without the exposure's description %q: set that description on it, or release it",
				status.FloatingIPAddress, fip.ID, fd.Mark.Description()), gardencorev1beta1.ErrorInfraDependencies)
		}
		switch fip.PortID {
		case port.ID:
		case "":
			if fip, err = s.neutron.AssociateFloatingIP(ctx, fip.ID, port.ID); err != nil {
				return err
			}
		default:
			// As for the recorded floating IP: whatever that port serves is not cut off.
			return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the exposure's floating IP %s was deleted outside of the extension and allocated again as floating IP %s on port %s: disassociate it so that it points at the VIP port %s again",
				status.FloatingIPAddress, fip.ID, fip.PortID, port.ID), gardencorev1beta1.ErrorInfraDependencies)
		}
		s.log.Info("Took the floating IP allocated again with the exposure's address and mark", "floatingIP", fip.FloatingIP, "id", fip.ID)
		s.record(EventFloatingIPRealloc, "The floating IP %s was deleted; took floating IP %s with the same address and the exposure's description", status.FloatingIPAddress, fip.ID)
		recordFloatingIP(status, fip, false)
		return nil
	}
	floatingNetworkID, err := s.floatingNetwork(ctx, fd.Spec, fd.FloatingNetworkID)
	if err != nil {
		return err
	}
	fip, err := s.neutron.CreateFloatingIP(ctx, openstack.FloatingIPSpec{
		FloatingNetworkID: floatingNetworkID,
		PortID:            port.ID,
		FixedIP:           status.VIPAddress,
		Description:       fd.Mark.Description(),
		Address:           status.FloatingIPAddress,
	})
	if err != nil {
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the exposure's floating IP %s was deleted outside of the extension, and allocating the same address again failed (%w): "+
			"allocate %s in the project with the description %q, or ask a cloud admin to",
			status.FloatingIPAddress, err, status.FloatingIPAddress, fd.Mark.Description()), gardencorev1beta1.ErrorInfraDependencies)
	}
	s.log.Info("Allocated the deleted floating IP again", "floatingIP", fip.FloatingIP)
	s.record(EventFloatingIPRealloc, "The floating IP %s was deleted; allocated the same address again", fip.FloatingIP)
	recordFloatingIP(status, fip, false)
	return nil
}

// adoptFloatingIP associates the pre-allocated floating IP named in the provider config.
func (s *Service) adoptFloatingIP(ctx context.Context, address string, port *ports.Port, status *v1alpha1.ExposureStatus) error {
	fip, err := s.neutron.FindFloatingIPByAddress(ctx, address)
	if err != nil {
		return err
	}
	if fip.PortID != port.ID {
		if fip.PortID != "" {
			return v1beta1helper.NewErrorWithCodes(
				fmt.Errorf("floating IP %s is associated with port %s: disassociate it or choose another floatingIP", address, fip.PortID),
				gardencorev1beta1.ErrorInfraDependencies)
		}
		if fip, err = s.neutron.AssociateFloatingIP(ctx, fip.ID, port.ID); err != nil {
			return err
		}
		s.log.Info("Adopted the floating IP", "floatingIP", fip.FloatingIP)
	}
	recordFloatingIP(status, fip, true)
	return nil
}

// findOwnedFloatingIP returns a floating IP this extension created for the cluster: one on
// the VIP port, else one anywhere in the project with the owner mark (e.g. left
// unassociated by a lost port and a lost status), so that a second one is never
// allocated. Floating IPs on the VIP port that are not the exposure's are disassociated.
func (s *Service) findOwnedFloatingIP(ctx context.Context, owners FloatingIPOwners, port *ports.Port, portCreated bool) (*floatingips.FloatingIP, error) {
	marked, err := s.neutron.ListFloatingIPs(ctx, floatingips.ListOpts{Description: owners.mark.Description()})
	if err != nil {
		return nil, err
	}
	var free *floatingips.FloatingIP
	for i := range marked {
		if owners.Of(&marked[i]) != FloatingIPOurs {
			continue
		}
		switch marked[i].PortID {
		case port.ID:
			return &marked[i], nil
		case "":
			if free == nil {
				free = &marked[i]
			}
		}
	}
	if !portCreated {
		foreign, err := s.neutron.FloatingIPsOfPort(ctx, port.ID)
		if err != nil {
			return nil, err
		}
		for i := range foreign {
			fip := &foreign[i]
			// A create whose answer was lost may commit after the list above: it is ours.
			if owners.Of(fip) == FloatingIPOurs {
				return fip, nil
			}
			s.log.Info("Disassociating a floating IP from the VIP port that the extension did not create and the provider config does not name", "floatingIP", fip.FloatingIP)
			if err := s.neutron.DisassociateFloatingIP(ctx, fip.ID); err != nil {
				return nil, err
			}
		}
	}
	return free, nil
}

// floatingNetwork returns the ID of the configured floating pool.
func (s *Service) floatingNetwork(ctx context.Context, cfg Spec, resolved string) (string, error) {
	switch {
	case cfg.FloatingNetworkID != "":
		return cfg.FloatingNetworkID, nil
	case resolved != "":
		return resolved, nil
	}
	return s.neutron.FindExternalNetworkByName(ctx, cfg.FloatingPoolName)
}

// checkFloatingPool is CheckImmutable for a floating pool given by name, which only
// Neutron can resolve: the pool cannot change while the extension's floating IP exists.
func (s *Service) checkFloatingPool(ctx context.Context, cfg Spec, fip *floatingips.FloatingIP, status *v1alpha1.ExposureStatus) error {
	want, err := s.floatingNetwork(ctx, cfg, "")
	if err != nil {
		return err
	}
	if fip.FloatingNetworkID != want {
		recorded := status.DeepCopy()
		recordFloatingIP(recorded, fip, false)
		return refuseChange(change{"floatingPoolName", fip.FloatingNetworkID, fmt.Sprintf("%s (%s)", cfg.FloatingPoolName, want)}, recorded)
	}
	return nil
}
