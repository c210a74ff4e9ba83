// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package networking is the Neutron service of an exposure: it owns the VIP port, its
// floating IP, the VIP's allowed address pairs on the node ports, and their cleanup, over
// the small Neutron interface that declares only the calls it makes.
//
// The ownership contract: the extension changes or deletes only what carries its mark
// (Mark: the cluster's identity, the owning exposure's UID, the Shoot's UID, the UID of
// the exposure's Namespace). A VIP port is the exposure's when it has the cluster's name
// and tags and names no other owner; a port of a lost exposure of the same Shoot and
// Namespace is taken over, a live exposure's refuses a second one, anything else (bound,
// another cluster's, unprovable) is left alone (classifyPort). A floating IP is released
// only when it carries the mark's description and the user has not pinned it (floatingIP,
// now or when it was adopted); a pinned or foreign one is at most disassociated from the
// VIP port (FloatingIPOwners). A VIP pair is removed only from the node ports the exposure
// put it on, and only with the VIP port's own MAC-less pair; other pairs stay. Claim,
// reconcile, delete and the explanation of a taken VIP use these same two rules.
// What never changes once published (network, subnet, VIP, floating IP, pool,
// internal-only) is the one rule CheckImmutable, checked before any Neutron call.
//
// The VIP port has one fixed IP per IP family: Spec.SubnetID and Spec.VIPAddress
// (ExposureStatus.VIPAddress) for the first family, Spec.OtherSubnets
// (ExposureStatus.OtherVIPs) for the others; the pairs carry each VIP (Pairs.OtherVIPs).
package networking

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// Spec is the part of the resolved provider config that places the front door.
type Spec struct {
	NetworkID string
	SubnetID  string
	// FloatingNetworkID is the floating pool's network; when empty and FloatingPoolName is
	// set, the pool is looked up by name.
	FloatingNetworkID string
	FloatingPoolName  string
	// FloatingIP is the address the user pinned: adopted, kept, never released.
	FloatingIP   string
	VIPAddress   string
	InternalOnly bool
	// OtherSubnets are the VIP's subnets of the other IP families (the IPv6 subnet of a
	// dual-stack exposure), one fixed IP of the VIP port each.
	OtherSubnets []SubnetVIP
}

// SubnetVIP is a subnet of the VIP port and its pinned address (empty: Neutron picks one).
type SubnetVIP struct {
	SubnetID   string
	VIPAddress string
}

// Options are the service's links to the world outside Neutron.
type Options struct {
	Log logr.Logger
	// ExposureOwning returns namespace/name of the live exposure whose UID, or recorded
	// owner, is uid; "" when there is none. nil: no exposure is live but the caller.
	ExposureOwning func(ctx context.Context, uid string) (string, error)
	// Record records a Normal Event on the exposure; nil: none.
	Record func(reason, format string, args ...any)
}

// Service does the Neutron work of one exposure.
type Service struct {
	neutron Neutron
	log     logr.Logger
	opts    Options
}

// NewService returns the service over n.
func NewService(n Neutron, opts Options) *Service {
	return &Service{neutron: n, log: opts.Log, opts: opts}
}

func (s *Service) record(reason, format string, args ...any) {
	if s.opts.Record != nil {
		s.opts.Record(reason, format, args...)
	}
}

// FrontDoor is what an exposure asks of Neutron.
type FrontDoor struct {
	// UID is the exposure's own UID (the mark's owner may be an earlier exposure's).
	UID types.UID
	// Mark is what the resources carry; GetOrCreateVIPPort sets its owner when it takes
	// over a lost exposure's front door.
	Mark Mark
	Spec Spec
	// FloatingNetworkID is the floating pool resolved from its name before anything was
	// created (empty when Spec names the network by ID or nothing is allocated).
	FloatingNetworkID string
	// RecordFirst writes the status before the exposure's first create in Neutron (nil:
	// the status records the identity already), so that a deletion knows for certain
	// whether anything was ever created.
	RecordFirst func(*v1alpha1.ExposureStatus) error
}

// Events the service records.
const (
	EventPortCreated         = "VIPPortCreated"
	EventPortRecreated       = "VIPPortRecreated"
	EventFrontDoorTakenOver  = "FrontDoorTakenOver"
	EventFloatingIPCreated   = "FloatingIPCreated"
	EventFloatingIPAssociate = "FloatingIPReassociated"
	EventFloatingIPRealloc   = "FloatingIPReallocated"
)

func configError(format string, args ...any) error {
	return openstack.NewConfigurationError(fmt.Errorf(format, args...))
}
