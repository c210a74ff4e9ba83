// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/types"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// This file holds the ownership rule of the package doc: the mark, whose a VIP port is,
// whose a floating IP is.

// VIPPortName is the name of the cluster's VIP port.
func VIPPortName(identity string) string {
	return "kube-vip-" + identity
}

// Mark is what the extension puts on the OpenStack resources of one exposure: the
// cluster's identity (port name, cluster tag), the owning exposure's UID (owner tag on the
// port, part of the floating IP's description) and the Shoot's UID (shoot tag on the
// port). Two exposures of one cluster share the identity and differ in the owner; so do
// two clusters that share a project and a shoot name (and with it the technical ID the
// identity comes from), which also differ in the Shoot's UID.
type Mark struct {
	Identity string
	// Owner is the recorded owner UID; empty for exposures from before owners were
	// recorded, whose resources carry no owner.
	Owner string
	// Shoot is the Shoot's status.uid: gardenadm keeps it for the life of the cluster,
	// also when the exposure object is lost and created again. Empty when the Cluster
	// names none; the port then carries no shoot tag and can never be taken over.
	Shoot string
	// Namespace is the UID of the exposure's Namespace: it outlives the exposure object
	// too, and unlike the Shoot's UID, which gardenadm keeps in a file on the node, only
	// this cluster's etcd holds it.
	Namespace string
}

// MarkOf returns the mark of an exposure: the recorded identity and owner; an exposure
// that has recorded nothing yet takes the derived identity and its own UID.
func MarkOf(status *v1alpha1.ExposureStatus, derivedIdentity string, uid types.UID, shoot *gardencorev1beta1.Shoot) Mark {
	m := Mark{Identity: derivedIdentity, Owner: string(uid)}
	if status.Identity != "" {
		m.Identity, m.Owner = status.Identity, status.Owner
	}
	if shoot != nil {
		m.Shoot = string(shoot.Status.UID)
	}
	return m
}

// Description is the description of the VIP port and of the floating IPs this extension
// creates. On floating IPs it is the mark of ownership: only a floating IP with exactly
// this description is ever deleted; others (pre-allocated by the user, or another
// exposure's) are left alone or only disassociated. Neutron stores the description with
// the create request, at no extra call.
func (m Mark) Description() string {
	d := m.describe(m.Identity)
	if over := len(d) - maxDescription; over > 0 {
		// An identity too long for Neutron is shortened; its hash keeps the mark unique.
		h := shortHash(m.Identity)
		d = m.describe(m.Identity[:max(0, len(m.Identity)-over-len(h)-1)] + "-" + h)
	}
	return d
}

// maxDescription is Neutron's limit on a description.
const maxDescription = 255

func (m Mark) describe(identity string) string {
	if m.Owner == "" {
		return fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s (gardener-extension-kube-vip); do not delete", identity)
	}
	return fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s, owner %s (gardener-extension-kube-vip); do not delete", identity, m.Owner)
}

// ClusterTags are the tags every VIP port of the cluster carries.
func (m Mark) ClusterTags() []string {
	return []string{openstack.TagExtension, openstack.ClusterTag(m.Identity)}
}

// Tags are the tags that find the exposure's VIP port: the cluster's and the owner's.
func (m Mark) Tags() []string {
	if m.Owner == "" {
		return m.ClusterTags()
	}
	return append(m.ClusterTags(), openstack.OwnerTag(m.Owner))
}

// PortTags are the tags the exposure puts on its VIP port: tags() and the shoot's and the
// namespace's.
func (m Mark) PortTags() []string {
	tags := m.Tags()
	if m.Shoot != "" {
		tags = append(tags, openstack.ShootTag(m.Shoot))
	}
	if m.Namespace != "" {
		tags = append(tags, openstack.NamespaceTag(m.Namespace))
	}
	return tags
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

// ForeignOwner returns the owner of a port of the cluster that another exposure owns, ""
// when the port is this exposure's or carries no owner. An untagged port (tags lost, or
// not yet put on after the create) is told by its description.
func (m Mark) ForeignOwner(p *ports.Port) string {
	for _, t := range p.Tags {
		if uid, ok := strings.CutPrefix(t, openstack.OwnerTagPrefix); ok && uid != m.Owner {
			return uid
		}
	}
	if len(p.Tags) == 0 && m.Owner != "" && strings.Contains(p.Description, ", owner ") && p.Description != m.Description() {
		return "(unknown, see the port's description)"
	}
	return ""
}

// WithTags returns the port's tags plus the exposure's, without tags that name another
// cluster, owner or shoot: a recorded port whose tags were edited gets the exposure's
// back, and keeps the tags of others.
func (m Mark) WithTags(have []string) []string {
	out := m.PortTags()
	for _, t := range have {
		ours := strings.HasPrefix(t, openstack.ClusterTag("")) || strings.HasPrefix(t, openstack.OwnerTagPrefix) ||
			(m.Shoot != "" && strings.HasPrefix(t, openstack.ShootTagPrefix)) ||
			(m.Namespace != "" && strings.HasPrefix(t, openstack.NamespaceTagPrefix))
		if ours || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// portClass is what a port found by the cluster's VIP port name, or holding its VIP, is to
// an exposure. Claim, reconcile, deletion and the explanation of a taken address all read
// this one classification, each choosing the classes it acts on.
type portClass int

const (
	// classRecorded: the VIP port the status records, unbound.
	classRecorded portClass = iota
	// classOurs: unbound, with all of the mark's tags and no other owner.
	classOurs
	// classOursUntagged: unbound, without tags, in the exposure's network, and no other
	// owner in its description: a create whose tagging failed.
	classOursUntagged
	// classTaken: the recorded port, or one with the mark's tags and no other owner, that
	// is bound to a device now: someone uses it, so it and its floating IP stay.
	classTaken
	// classUnmarked: unbound and without another owner, but neither with the mark's tags
	// nor, untagged, in the exposure's network.
	classUnmarked
	// classOtherExposure: unbound, another owner with the cluster's tags (or none), and
	// tagged with this cluster's Shoot and Namespace (or no Namespace yet): another
	// exposure of this cluster, live or lost.
	classOtherExposure
	// classOtherOwner: as classOtherExposure, but nothing proves it this Shoot's.
	classOtherOwner
	// classSomeoneElse: bound but not classTaken, or another owner's with another
	// cluster's tags.
	classSomeoneElse
)

// portView is what classifyPort judges a port by.
type portView struct {
	mark Mark
	// self is the exposure's own UID, which counts as ours beside the mark's owner (a
	// take-over makes the mark name the lost exposure); empty: the mark alone counts.
	self types.UID
	// networkID is where an untagged port of ours can be; empty: nowhere.
	networkID string
	// recordedPortID is the VIP port the status records; empty: none.
	recordedPortID string
}

// otherOwner is the owner of p other than the mark's and self, "" when there is none.
func (v portView) otherOwner(p *ports.Port) string {
	owner := v.mark.ForeignOwner(p)
	if owner == string(v.self) {
		return ""
	}
	return owner
}

// classifyPort is the one ownership rule for VIP ports; it reads no Neutron state but p.
func classifyPort(v portView, p *ports.Port) portClass {
	bound := p.DeviceOwner != ""
	switch {
	case v.recordedPortID != "" && p.ID == v.recordedPortID:
		if bound {
			return classTaken
		}
		return classRecorded
	case v.otherOwner(p) != "":
		namespace := tagValue(p, openstack.NamespaceTagPrefix)
		switch {
		case bound || (len(p.Tags) > 0 && !openstack.HasAllTags(p.Tags, v.mark.ClusterTags())):
			return classSomeoneElse
		case v.mark.Shoot != "" && tagValue(p, openstack.ShootTagPrefix) == v.mark.Shoot && (namespace == "" || namespace == v.mark.Namespace):
			return classOtherExposure
		}
		return classOtherOwner
	case len(p.Tags) > 0 && openstack.HasAllTags(p.Tags, v.mark.Tags()):
		if bound {
			return classTaken
		}
		return classOurs
	case bound:
		return classSomeoneElse
	case len(p.Tags) == 0 && v.networkID != "" && p.NetworkID == v.networkID:
		return classOursUntagged
	}
	return classUnmarked
}

// PortOwner is the claim's verdict on a port with the cluster's VIP port name.
type PortOwner int

const (
	// PortOurs: no other owner and not bound to a device; the claim leaves it to
	// reconcile.
	PortOurs PortOwner = iota
	// PortOfLostExposure: the VIP port of an exposure of this cluster that no longer
	// exists (the object was lost and created again): its owner is no exposure of the
	// cluster, its shoot tag names this cluster's Shoot, and its namespace tag this
	// cluster's Namespace (or it has none yet: a port from before that tag, which gets it
	// at its next verification). An exposure that has recorded no VIP port yet takes it
	// over.
	PortOfLostExposure
	// PortOfLiveExposure: another exposure of this cluster owns it: a cluster has one
	// front door, a second exposure is refused and touches nothing.
	PortOfLiveExposure
	// PortOfSomeoneElse: bound, another cluster's (tags or Shoot), or unprovable: left alone.
	PortOfSomeoneElse
)

// OwnerOfPort is classifyPort plus the look-up of live exposures, for the claim. owner is
// the other owner UID and who the live exposure that owns it ("" unless PortOfLiveExposure).
func (s *Service) OwnerOfPort(ctx context.Context, m Mark, self types.UID, p *ports.Port) (kind PortOwner, owner, who string, err error) {
	v := portView{mark: m, self: self}
	owner = v.otherOwner(p)
	switch class := classifyPort(v, p); class {
	case classOtherExposure, classOtherOwner:
		if s.opts.ExposureOwning != nil {
			if who, err = s.opts.ExposureOwning(ctx, owner); err != nil || who != "" {
				return PortOfLiveExposure, owner, who, err
			}
		}
		if class == classOtherExposure {
			return PortOfLostExposure, owner, "", nil
		}
		return PortOfSomeoneElse, owner, "", nil
	case classSomeoneElse:
		return PortOfSomeoneElse, owner, "", nil
	}
	return PortOurs, owner, "", nil
}

// claimFrontDoor runs for an exposure that has recorded no VIP port yet. It refuses the
// exposure while another live exposure of the cluster owns a VIP port (and leaves that
// alone). A VIP port of a lost exposure of this cluster is the cluster's front door: the
// exposure takes over its owner (the owner tag and the floating IP's description name it),
// so that the port, the floating IP and the published address are found as its own.
// Ports of other clusters sharing the project and shoot name are left alone, and so is a
// lost port that does not fit this exposure's network, subnet and addresses (checked before
// anything is recorded): a copy of the Shoot's UID, e.g. from a cloned disk, does not make
// another network's front door this one's.
func (s *Service) claimFrontDoor(ctx context.Context, fd *FrontDoor, self types.UID, named []ports.Port, status *v1alpha1.ExposureStatus) error {
	spec := vipPortSpec(fd, status)
	var lost *ports.Port
	var lostOwner string
	for i := range named {
		p := &named[i]
		kind, owner, who, err := s.OwnerOfPort(ctx, fd.Mark, self, p)
		switch {
		case err != nil:
			return err
		case kind == PortOfLiveExposure:
			return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the cluster's front door (VIP port %s) belongs to the SelfHostedShootExposure %s (owner %s), and a cluster has one: this exposure leaves it alone; delete this exposure",
				p.ID, who, owner), gardencorev1beta1.ErrorConfigurationProblem)
		case kind == PortOfLostExposure && openstack.CheckVIPPort(p, spec) != nil:
			s.log.Info("Leaving a lost VIP port of this cluster's Shoot alone: its network, subnet or address is not this exposure's", "port", p.ID, "owner", owner, "reason", openstack.CheckVIPPort(p, spec).Error())
		case kind == PortOfLostExposure && (lost == nil || p.CreatedAt.Before(lost.CreatedAt)):
			lost, lostOwner = p, owner
		case kind == PortOfSomeoneElse && owner != "":
			s.log.Info("Leaving a VIP port of the same name alone: its owner is no exposure of this cluster, and it is not tagged with this cluster's Shoot and Namespace", "port", p.ID, "owner", owner)
		}
	}
	if lost != nil {
		s.log.Info("Taking over the front door of a lost exposure of this cluster", "port", lost.ID, "owner", lostOwner)
		s.record(EventFrontDoorTakenOver, "The VIP port %s of the lost exposure %s of this cluster (same Shoot and Namespace) is taken over with its addresses", lost.ID, lostOwner)
		fd.Mark.Owner = lostOwner
	}
	return nil
}

// FloatingIPOwner says whose a floating IP is.
type FloatingIPOwner int

const (
	// FloatingIPOurs: the extension allocated it for the exposure (it carries the mark's
	// description) and the user has not pinned it: it is released with the exposure.
	FloatingIPOurs FloatingIPOwner = iota
	// FloatingIPPinned: the user named it in floatingIP (now, or when it was adopted): it
	// is kept and on deletion only disassociated.
	FloatingIPPinned
	// FloatingIPOfSomeoneElse: neither: never released; only disassociated from the VIP
	// port.
	FloatingIPOfSomeoneElse
)

// FloatingIPOwners is the one ownership rule for floating IPs, used by reconcile and
// delete alike. It is fixed before anything changes, so that clearing the status during a
// deletion never turns a pinned floating IP into one the extension releases.
type FloatingIPOwners struct {
	mark Mark
	// pinnedAddress and pinnedID name the floating IP the user pinned.
	pinnedAddress, pinnedID string
	// taken are the cluster's VIP ports that are bound to a device now: a floating IP on
	// one of them serves that device and is left alone by a deletion.
	taken map[string]bool
}

// onTakenPort tells whether fip is associated with a VIP port someone bound to a device.
func (o FloatingIPOwners) onTakenPort(fip *floatingips.FloatingIP) bool {
	return fip.PortID != "" && o.taken[fip.PortID]
}

// FloatingIPOwnersOf fixes whose each floating IP is for the exposure marked m whose
// provider config pins pinnedAddress ("" for none).
func FloatingIPOwnersOf(m Mark, pinnedAddress string, status *v1alpha1.ExposureStatus) FloatingIPOwners {
	o := FloatingIPOwners{mark: m, pinnedAddress: pinnedAddress}
	if status.FloatingIPAdopted {
		o.pinnedID = status.FloatingIPID
		if o.pinnedAddress == "" {
			o.pinnedAddress = status.FloatingIPAddress
		}
	}
	return o
}

// Of says whose fip is.
func (o FloatingIPOwners) Of(fip *floatingips.FloatingIP) FloatingIPOwner {
	switch {
	case (o.pinnedAddress != "" && fip.FloatingIP == o.pinnedAddress) || (o.pinnedID != "" && fip.ID == o.pinnedID):
		return FloatingIPPinned
	case fip.Description == o.mark.Description():
		return FloatingIPOurs
	}
	return FloatingIPOfSomeoneElse
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}
