// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// This file holds the VIP port of the front door; whose a port is, is decided in
// ownership.go, whether it still holds the recorded VIP in immutable.go.

func vipPortSpec(fd *FrontDoor, status *v1alpha1.ExposureStatus) openstack.VIPPortSpec {
	address := fd.Spec.VIPAddress
	if status.VIPAddress != "" {
		// Once there is a VIP, a lost port comes back with the same address.
		address = status.VIPAddress
	}
	var others []ports.IP
	for _, o := range fd.Spec.OtherSubnets {
		ip := ports.IP{SubnetID: o.SubnetID, IPAddress: o.VIPAddress}
		if recorded := recordedOtherVIP(status, o.SubnetID); recorded != "" {
			ip.IPAddress = recorded
		}
		others = append(others, ip)
	}
	return openstack.VIPPortSpec{
		Name:          VIPPortName(fd.Mark.Identity),
		Description:   fd.Mark.Description(),
		NetworkID:     fd.Spec.NetworkID,
		SubnetID:      fd.Spec.SubnetID,
		IPAddress:     address,
		OtherFixedIPs: others,
		Tags:          fd.Mark.PortTags(),
	}
}

// recordedOtherVIP is the VIP the status records in the subnet, "" when none.
func recordedOtherVIP(status *v1alpha1.ExposureStatus, subnetID string) string {
	for _, v := range status.OtherVIPs {
		if v.SubnetID == subnetID {
			return v.Address
		}
	}
	return ""
}

// recordOtherVIPs records the port's VIP of each other family that the status does not
// hold yet; a recorded one is never replaced.
func recordOtherVIPs(fd *FrontDoor, port *ports.Port, status *v1alpha1.ExposureStatus) {
	for _, o := range fd.Spec.OtherSubnets {
		if recordedOtherVIP(status, o.SubnetID) != "" {
			continue
		}
		if address := openstack.PortAddress(port, o.SubnetID); address != "" {
			status.OtherVIPs = append(status.OtherVIPs, v1alpha1.FamilyVIP{SubnetID: o.SubnetID, Address: address})
		}
	}
}

// GetOrCreateVIPPort returns the VIP port: the one recorded in the status, else the cluster's port
// found by name and tags (or the port of a lost exposure of this cluster, see
// claimFrontDoor), else a new one. A port lost out of band comes back with the recorded
// VIP, so the address never changes. Surplus ports of the cluster (a create whose
// response was lost and that committed after the retry had listed the ports) are deleted.
func (s *Service) GetOrCreateVIPPort(ctx context.Context, fd *FrontDoor, status *v1alpha1.ExposureStatus) (*ports.Port, bool, error) {
	named, err := s.neutron.ListPorts(ctx, openstack.PortFilter{Name: VIPPortName(fd.Mark.Identity)})
	if err != nil {
		return nil, false, err
	}
	port, err := s.recordedPort(ctx, named, status)
	if err != nil {
		return nil, false, err
	}
	if port == nil && status.PortID == "" {
		if err := s.claimFrontDoor(ctx, fd, fd.UID, named, status); err != nil {
			return nil, false, err
		}
	}
	status.Identity, status.Owner = fd.Mark.Identity, fd.Mark.Owner
	if fd.RecordFirst != nil {
		// Before the first write to Neutron: a deletion then knows whether anything can exist.
		if err := fd.RecordFirst(status); err != nil {
			return nil, false, err
		}
		fd.RecordFirst = nil
	}
	spec := vipPortSpec(fd, status)
	// The cluster's ports are found by name in any network, so that a changed network is
	// noticed; an untagged one counts only in the spec's network.
	var candidates []ports.Port
	view := portView{mark: fd.Mark, self: fd.UID, networkID: fd.Spec.NetworkID}
	for i := range named {
		if c := classifyPort(view, &named[i]); c == classOurs || c == classOursUntagged {
			candidates = append(candidates, named[i])
		}
	}
	if port == nil && len(candidates) > 0 {
		port = pickVIPPort(candidates, status.VIPAddress)
		if err := openstack.CheckVIPPort(port, spec); err != nil {
			return nil, false, err
		}
	}
	created := false
	if port == nil {
		if port, err = s.createPort(ctx, fd, spec, status); err != nil {
			return nil, false, err
		}
		created = true
	}
	// Recorded before anything else, so that a later failure does not lose the port. The
	// recorded VIP is never replaced: CheckImmutable and checkRecordedPort keep the port on it.
	status.PortID, status.VIPHeldBy = port.ID, ""
	if status.VIPAddress == "" {
		status.VIPAddress = openstack.PortAddress(port, fd.Spec.SubnetID)
	}
	recordOtherVIPs(fd, port, status)

	if err := s.deleteSurplusPorts(ctx, candidates, port.ID); err != nil {
		return nil, false, err
	}
	return port, created, s.ensurePortTags(ctx, fd, port)
}

// createPort creates the VIP port.
func (s *Service) createPort(ctx context.Context, fd *FrontDoor, spec openstack.VIPPortSpec, status *v1alpha1.ExposureStatus) (*ports.Port, error) {
	port, err := s.neutron.CreateVIPPort(ctx, spec)
	if err != nil {
		return nil, s.explainTakenAddress(ctx, fd, spec, status, err)
	}
	s.log.Info("Created the VIP port", "port", port.ID, "vip", openstack.PortAddress(port, spec.SubnetID))
	if status.PortID != "" {
		s.record(EventPortRecreated, "The VIP port %s was gone; created port %s with the same VIP %s", status.PortID, port.ID, openstack.PortAddress(port, spec.SubnetID))
	} else {
		s.record(EventPortCreated, "Created the VIP port %s with the VIP %s", port.ID, openstack.PortAddress(port, spec.SubnetID))
	}
	return port, nil
}

// explainTakenAddress tells what a create refused for a taken fixed VIP means. A port of
// this exposure holding it is its own create that committed after the ports were listed
// (a lost response): transient, the retry finds it by name. A recorded VIP that another
// port holds now cannot come back: the operator must free it. Otherwise the configured
// vipAddress is someone else's.
func (s *Service) explainTakenAddress(ctx context.Context, fd *FrontDoor, spec openstack.VIPPortSpec, status *v1alpha1.ExposureStatus, err error) error {
	if spec.IPAddress == "" || !openstack.IsAddressTaken(err) {
		return err
	}
	holders, listErr := s.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: spec.NetworkID, FixedIPs: []string{spec.IPAddress}})
	if listErr != nil || len(holders) == 0 {
		return errors.Join(err, listErr)
	}
	holder := &holders[0]
	// Judged by the mark alone and without its tags: any unbound holder of the VIP port's
	// name that names no other owner is taken for the exposure's own late create.
	class := classifyPort(portView{mark: fd.Mark, networkID: spec.NetworkID}, holder)
	if holder.Name == spec.Name && (class == classOurs || class == classOursUntagged || class == classUnmarked) {
		return &openstack.Error{Op: "create the VIP port", Transient: true,
			Message: fmt.Sprintf("port %s with the VIP %s was created by an earlier attempt whose response was lost", holder.ID, spec.IPAddress),
			Hint:    "will pick it up on the retry"}
	}
	if status.VIPAddress != "" {
		status.VIPHeldBy = holder.ID
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the VIP port %s is gone and its VIP %s now belongs to port %s (%s, device owner %q): the front door cannot move to another address, and the nodes stop answering for it; free %s in Neutron (delete or re-address port %s) and the VIP port is created again on it",
			status.PortID, spec.IPAddress, holder.ID, holder.Name, holder.DeviceOwner, spec.IPAddress, holder.ID), gardencorev1beta1.ErrorInfraDependencies)
	}
	return configError("vipAddress %s is already used by port %s (%s, device owner %q): choose a free vipAddress in the provider config",
		spec.IPAddress, holder.ID, holder.Name, holder.DeviceOwner)
}

// recordedPort returns the port recorded in the status (from the list, else read by ID),
// nil when there is none or it is gone.
func (s *Service) recordedPort(ctx context.Context, named []ports.Port, status *v1alpha1.ExposureStatus) (*ports.Port, error) {
	if status.PortID == "" {
		return nil, nil
	}
	var port *ports.Port
	if i := slices.IndexFunc(named, func(p ports.Port) bool { return p.ID == status.PortID }); i >= 0 {
		port = &named[i]
	} else {
		p, err := s.neutron.GetPort(ctx, status.PortID) // renamed out of band
		switch {
		case openstack.IsNotFound(err):
			s.log.Info("The recorded VIP port is gone; creating it again with the same VIP", "port", status.PortID, "vip", status.VIPAddress)
			return nil, nil
		case err != nil:
			return nil, err
		}
		port = p
	}
	return port, checkRecordedPort(port, status)
}

// pickVIPPort chooses among the cluster's ports when none is recorded: the one holding the
// recorded VIP, else the oldest.
func pickVIPPort(candidates []ports.Port, vip string) *ports.Port {
	best := &candidates[0]
	for i := range candidates {
		p := &candidates[i]
		if vip != "" && openstack.HasFixedIP(p, vip) {
			return p
		}
		if p.CreatedAt.Before(best.CreatedAt) {
			best = p
		}
	}
	return best
}

// deleteSurplusPorts deletes the cluster's ports other than keep that carry no floating IP;
// one with a floating IP is left for an operator, named in the error.
func (s *Service) deleteSurplusPorts(ctx context.Context, candidates []ports.Port, keep string) error {
	var errs []error
	for _, p := range candidates {
		if p.ID == keep {
			continue
		}
		fips, err := s.neutron.FloatingIPsOfPort(ctx, p.ID)
		if err != nil {
			return err
		}
		if len(fips) > 0 {
			errs = append(errs, v1beta1helper.NewErrorWithCodes(fmt.Errorf("port %s is a second VIP port of this cluster and carries floating IP %s; the live VIP port is %s: delete port %s after checking it",
				p.ID, fips[0].FloatingIP, keep, p.ID), gardencorev1beta1.ErrorInfraDependencies))
			continue
		}
		s.log.Info("Deleting a surplus VIP port of the cluster (a create that committed late)", "port", p.ID, "keep", keep)
		if err := s.neutron.DeletePort(ctx, p.ID); err != nil && !openstack.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ensurePortTags puts the cluster's tags on the port. Neutron without the
// tag_ports_during_bulk_creation extension driver ignores tags in the create request, and
// tags may have been edited out of band.
func (s *Service) ensurePortTags(ctx context.Context, fd *FrontDoor, port *ports.Port) error {
	if openstack.HasAllTags(port.Tags, fd.Mark.PortTags()) && fd.Mark.ForeignOwner(port) == "" {
		return nil
	}
	tags := fd.Mark.WithTags(port.Tags)
	if len(port.Tags) > 0 {
		s.log.Info("Restoring the cluster's tags on the VIP port", "port", port.ID, "had", port.Tags)
	}
	if err := s.neutron.ReplacePortTags(ctx, port.ID, tags); err != nil {
		return err
	}
	port.Tags = tags
	return nil
}
