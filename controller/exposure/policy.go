// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// This file holds the policy beside the flow of actuator.go: what the extension owns, and
// which changes of the provider config it accepts once the front-door address is public.

// vipPortName is the name of the cluster's VIP port.
func vipPortName(identity string) string {
	return "kube-vip-" + identity
}

// mark is what the extension puts on the OpenStack resources of one exposure: the
// cluster's identity (port name, cluster tag), the owning exposure's UID (owner tag on the
// port, part of the floating IP's description) and the Shoot's UID (shoot tag on the
// port). Two exposures of one cluster share the identity and differ in the owner; so do
// two clusters that share a project and a shoot name (and with it the technical ID the
// identity comes from), which also differ in the Shoot's UID.
type mark struct {
	identity string
	// owner is the recorded owner UID; empty for exposures from before owners were
	// recorded, whose resources carry no owner.
	owner string
	// shoot is the Shoot's status.uid: gardenadm keeps it for the life of the cluster,
	// also when the exposure object is lost and created again. Empty when the Cluster
	// names none; the port then carries no shoot tag and can never be taken over.
	shoot string
}

// markOf returns the mark of an exposure: the recorded identity and owner; an exposure
// that has recorded nothing yet takes the derived identity and its own UID.
func markOf(status *v1alpha1.ExposureStatus, derivedIdentity string, uid types.UID, shoot *gardencorev1beta1.Shoot) mark {
	m := mark{identity: derivedIdentity, owner: string(uid)}
	if status.Identity != "" {
		m.identity, m.owner = status.Identity, status.Owner
	}
	if shoot != nil {
		m.shoot = string(shoot.Status.UID)
	}
	return m
}

// description is the description of the VIP port and of the floating IPs this extension
// creates. On floating IPs it is the mark of ownership: only a floating IP with exactly
// this description is ever deleted; others (pre-allocated by the user, or another
// exposure's) are left alone or only disassociated. Neutron stores the description with
// the create request, at no extra call.
func (m mark) description() string {
	d := m.describe(m.identity)
	if over := len(d) - maxDescription; over > 0 {
		// An identity too long for Neutron is shortened; its hash keeps the mark unique.
		h := shortHash(m.identity)
		d = m.describe(m.identity[:max(0, len(m.identity)-over-len(h)-1)] + "-" + h)
	}
	return d
}

// maxDescription is Neutron's limit on a description.
const maxDescription = 255

func (m mark) describe(identity string) string {
	if m.owner == "" {
		return fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s (gardener-extension-kube-vip); do not delete", identity)
	}
	return fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s, owner %s (gardener-extension-kube-vip); do not delete", identity, m.owner)
}

// clusterTags are the tags every VIP port of the cluster carries.
func (m mark) clusterTags() []string {
	return []string{openstack.TagExtension, openstack.ClusterTag(m.identity)}
}

// tags are the tags that find the exposure's VIP port: the cluster's and the owner's.
func (m mark) tags() []string {
	if m.owner == "" {
		return m.clusterTags()
	}
	return append(m.clusterTags(), openstack.OwnerTag(m.owner))
}

// portTags are the tags the exposure puts on its VIP port: tags() and the shoot's.
func (m mark) portTags() []string {
	if m.shoot == "" {
		return m.tags()
	}
	return append(m.tags(), openstack.ShootTag(m.shoot))
}

// tagValue returns the value of the port's first tag with the prefix.
func tagValue(p *ports.Port, prefix string) string {
	for _, t := range p.Tags {
		if v, ok := strings.CutPrefix(t, prefix); ok {
			return v
		}
	}
	return ""
}

// foreignOwner returns the owner of a port of the cluster that another exposure owns, ""
// when the port is this exposure's or carries no owner. An untagged port (tags lost, or
// not yet put on after the create) is told by its description.
func (m mark) foreignOwner(p *ports.Port) string {
	for _, t := range p.Tags {
		if uid, ok := strings.CutPrefix(t, openstack.OwnerTagPrefix); ok && uid != m.owner {
			return uid
		}
	}
	if len(p.Tags) == 0 && m.owner != "" && strings.Contains(p.Description, ", owner ") && p.Description != m.description() {
		return "(unknown, see the port's description)"
	}
	return ""
}

// withTags returns the port's tags plus the exposure's, without tags that name another
// cluster, owner or shoot: a recorded port whose tags were edited gets the exposure's
// back, and keeps the tags of others.
func (m mark) withTags(have []string) []string {
	out := m.portTags()
	for _, t := range have {
		ours := strings.HasPrefix(t, openstack.ClusterTag("")) || strings.HasPrefix(t, openstack.OwnerTagPrefix) ||
			(m.shoot != "" && strings.HasPrefix(t, openstack.ShootTagPrefix))
		if ours || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// portOwner says whose a port with the cluster's VIP port name is.
type portOwner int

const (
	// portOurs: the exposure's own VIP port (its owner, or no owner at all).
	portOurs portOwner = iota
	// portOfLostExposure: the VIP port of an exposure of this cluster that no longer
	// exists (the object was lost and created again): its owner is no exposure of the
	// cluster, and its shoot tag names this cluster's Shoot. An exposure that has recorded
	// no VIP port yet takes it over.
	portOfLostExposure
	// portOfLiveExposure: another exposure of this cluster owns it: a cluster has one
	// front door, a second exposure is refused and touches nothing.
	portOfLiveExposure
	// portOfSomeoneElse: bound, another cluster's (tags or Shoot), or unprovable: left alone.
	portOfSomeoneElse
)

// ownerOfPort is the one ownership rule for VIP ports. owner is the foreign owner UID and
// who the live exposure that owns it ("" unless portOfLiveExposure).
func (a *Actuator) ownerOfPort(ctx context.Context, m mark, self types.UID, p *ports.Port) (kind portOwner, owner, who string, err error) {
	owner = m.foreignOwner(p)
	switch {
	case owner == "" || owner == string(self):
		return portOurs, owner, "", nil
	case p.DeviceOwner != "" || (len(p.Tags) > 0 && !openstack.HasAllTags(p.Tags, m.clusterTags())):
		return portOfSomeoneElse, owner, "", nil
	}
	if who, err = a.exposureOwning(ctx, owner); err != nil || who != "" {
		return portOfLiveExposure, owner, who, err
	}
	if m.shoot != "" && tagValue(p, openstack.ShootTagPrefix) == m.shoot {
		return portOfLostExposure, owner, "", nil
	}
	return portOfSomeoneElse, owner, "", nil
}

// claimFrontDoor runs for an exposure that has recorded no VIP port yet. It refuses the
// exposure while another live exposure of the cluster owns a VIP port (and leaves that
// alone). A VIP port of a lost exposure of this cluster is the cluster's front door: the
// exposure takes over its owner (the owner tag and the floating IP's description name it),
// so that the port, the floating IP and the published address are found as its own.
// Ports of other clusters sharing the project and shoot name are left alone.
func (a *Actuator) claimFrontDoor(ctx context.Context, log logr.Logger, in *inputs, self types.UID, named []ports.Port) error {
	var lost *ports.Port
	var lostOwner string
	for i := range named {
		p := &named[i]
		kind, owner, who, err := a.ownerOfPort(ctx, in.mark, self, p)
		switch {
		case err != nil:
			return err
		case kind == portOfLiveExposure:
			return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the cluster's front door (VIP port %s) belongs to the SelfHostedShootExposure %s (owner %s), and a cluster has one: this exposure leaves it alone; delete this exposure",
				p.ID, who, owner), gardencorev1beta1.ErrorConfigurationProblem)
		case kind == portOfLostExposure && (lost == nil || p.CreatedAt.Before(lost.CreatedAt)):
			lost, lostOwner = p, owner
		case kind == portOfSomeoneElse && owner != "":
			log.Info("Leaving a VIP port of the same name alone: its owner is no exposure of this cluster, and it is not tagged with this cluster's Shoot", "port", p.ID, "owner", owner)
		}
	}
	if lost != nil {
		log.Info("Taking over the front door of a lost exposure of this cluster", "port", lost.ID, "owner", lostOwner)
		in.record(eventFrontDoorTakenOver, "The VIP port %s of the lost exposure %s of this cluster (same Shoot) is taken over with its addresses", lost.ID, lostOwner)
		in.mark.owner = lostOwner
	}
	return nil
}

// floatingIPOwner says whose a floating IP is.
type floatingIPOwner int

const (
	// floatingIPOurs: the extension allocated it for the exposure (it carries the mark's
	// description) and the user has not pinned it: it is released with the exposure.
	floatingIPOurs floatingIPOwner = iota
	// floatingIPPinned: the user named it in floatingIP (now, or when it was adopted): it
	// is kept and on deletion only disassociated.
	floatingIPPinned
	// floatingIPOfSomeoneElse: neither: never released; only disassociated from the VIP
	// port.
	floatingIPOfSomeoneElse
)

// floatingIPOwners is the one ownership rule for floating IPs, used by reconcile and
// delete alike. It is fixed before anything changes, so that clearing the status during a
// deletion never turns a pinned floating IP into one the extension releases.
type floatingIPOwners struct {
	mark mark
	// pinnedAddress and pinnedID name the floating IP the user pinned.
	pinnedAddress, pinnedID string
}

func floatingIPOwnersOf(m mark, cfg *Config, status *v1alpha1.ExposureStatus) floatingIPOwners {
	o := floatingIPOwners{mark: m}
	if cfg != nil {
		o.pinnedAddress = cfg.FloatingIP
	}
	if status.FloatingIPAdopted {
		o.pinnedID = status.FloatingIPID
		if o.pinnedAddress == "" {
			o.pinnedAddress = status.FloatingIPAddress
		}
	}
	return o
}

func (o floatingIPOwners) of(fip *floatingips.FloatingIP) floatingIPOwner {
	switch {
	case (o.pinnedAddress != "" && fip.FloatingIP == o.pinnedAddress) || (o.pinnedID != "" && fip.ID == o.pinnedID):
		return floatingIPPinned
	case fip.Description == o.mark.description():
		return floatingIPOurs
	}
	return floatingIPOfSomeoneElse
}

// exposureOwning returns namespace/name of the SelfHostedShootExposure in this cluster
// whose UID, or recorded owner, is uid; "" when there is none.
func (a *Actuator) exposureOwning(ctx context.Context, uid string) (string, error) {
	list := &extensionsv1alpha1.SelfHostedShootExposureList{}
	if err := a.client.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing the SelfHostedShootExposures: %w", err)
	}
	for i := range list.Items {
		x := &list.Items[i]
		if string(x.UID) == uid {
			return client.ObjectKeyFromObject(x).String(), nil
		}
		if s, err := DecodeStatus(x); err == nil && s.Owner == uid {
			return client.ObjectKeyFromObject(x).String(), nil
		}
	}
	return "", nil
}

// checkRecordedPort tells whether the port recorded in the status is still the exposure's
// VIP port: unbound and holding the recorded VIP (a changed network is refused earlier,
// by checkImmutable).
func checkRecordedPort(port *ports.Port, status *v1alpha1.ExposureStatus) error {
	switch {
	case port.DeviceOwner != "":
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the VIP port %s was bound to %s %s outside of the extension: unbind it so that it only reserves the VIP %s",
			port.ID, port.DeviceOwner, port.DeviceID, status.VIPAddress), gardencorev1beta1.ErrorInfraDependencies)
	case port.NetworkID != status.NetworkID || !hasFixedIP(port, status.VIPAddress):
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the VIP port %s no longer holds the VIP %s in network %s (it has %s in %s): the VIP cannot change; restore the port's fixed IP",
			port.ID, status.VIPAddress, status.NetworkID, openstack.PortAddress(port, ""), port.NetworkID), gardencorev1beta1.ErrorInfraDependencies)
	}
	return nil
}

// checkImmutable is the one rule for what never changes. Before any OpenStack call it
// refuses every provider-config change that would move the front door away from what the
// status records: Gardener writes status.ingress into DNS only once
// (continuousEndpointUpdate: false), so a new address would strand every client, and a
// VIP taken from a changed subnet would leave the node pairs and agents on nothing. The
// exposure keeps running on its recorded addresses while the error is shown.
func checkImmutable(cfg *Config, status *v1alpha1.ExposureStatus) error {
	hasVIP := status.VIPAddress != ""
	hasFloatingIP := status.FloatingIPID != ""
	internal := status.Ingress != "" && status.Ingress == status.VIPAddress && !hasFloatingIP
	var c *change
	switch {
	case hasVIP && status.NetworkID != "" && cfg.NetworkID != status.NetworkID:
		c = &change{"networkID", status.NetworkID, cfg.NetworkID}
	case hasVIP && status.SubnetID != "" && cfg.SubnetID != status.SubnetID:
		c = &change{"subnetID", status.SubnetID, cfg.SubnetID}
	case hasVIP && cfg.VIPAddress != "" && cfg.VIPAddress != status.VIPAddress:
		c = &change{"vipAddress", status.VIPAddress, cfg.VIPAddress}
	case hasFloatingIP && cfg.InternalOnly:
		c = &change{"internalOnly", "false", "true"}
	case internal && !cfg.InternalOnly:
		c = &change{"internalOnly", "true", "false"}
	case hasFloatingIP && cfg.FloatingIP != "" && cfg.FloatingIP != status.FloatingIPAddress:
		c = &change{"floatingIP", status.FloatingIPAddress, cfg.FloatingIP}
	case hasFloatingIP && !status.FloatingIPAdopted && cfg.FloatingIP == "" && status.FloatingNetworkID != "" &&
		cfg.FloatingNetworkID != "" && cfg.FloatingNetworkID != status.FloatingNetworkID:
		c = &change{"floatingNetworkID", status.FloatingNetworkID, cfg.FloatingNetworkID}
	}
	if c == nil {
		return nil
	}
	return refuseChange(*c, status)
}

// change is a provider-config field that differs from what the front door was made with.
type change struct{ field, recorded, configured string }

// refuseChange is the one error sentence of checkImmutable.
func refuseChange(c change, status *v1alpha1.ExposureStatus) error {
	door := "VIP " + status.VIPAddress
	if status.FloatingIPAddress != "" {
		door += ", floating IP " + status.FloatingIPAddress
	}
	return configError("%s is %q in the provider config, but the exposure's front door (%s) was made with %q and cannot move: restore %s, or create a new exposure",
		c.field, c.configured, door, c.recorded, c.field)
}

// ingressOf is the address to report: the recorded front door once there is one, else the
// floating IP, else (internal only) the VIP. A public exposure never reports its private
// VIP, also not while its floating IP is still missing.
func ingressOf(status *v1alpha1.ExposureStatus, internalOnly bool) string {
	switch {
	case status == nil:
		return ""
	case status.Ingress != "":
		return status.Ingress
	case status.FloatingIPAddress != "":
		return status.FloatingIPAddress
	case internalOnly && status.PortID != "":
		return status.VIPAddress
	}
	return ""
}
