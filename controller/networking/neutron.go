// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// Neutron declares the Neutron calls the exposure makes, and no more: *openstack.Network
// implements it against Neutron (gophercloud); the unit tests use the in-memory fake of
// package networkingtest. Errors are classified as openstack.Classify does.
type Neutron interface {
	GetNetwork(ctx context.Context, id string) (*networks.Network, error)
	GetSubnet(ctx context.Context, id string) (*subnets.Subnet, error)
	FindExternalNetworkByName(ctx context.Context, name string) (string, error)

	ListPorts(ctx context.Context, f openstack.PortFilter) ([]ports.Port, error)
	GetPort(ctx context.Context, id string) (*ports.Port, error)
	CreateVIPPort(ctx context.Context, spec openstack.VIPPortSpec) (*ports.Port, error)
	DeletePort(ctx context.Context, id string) error
	ReplacePortTags(ctx context.Context, id string, tags []string) error
	EnsurePair(ctx context.Context, port *ports.Port, ip string) (bool, error)
	RemovePairFromPort(ctx context.Context, port *ports.Port, ip string) (bool, error)

	CreateFloatingIP(ctx context.Context, spec openstack.FloatingIPSpec) (*floatingips.FloatingIP, error)
	ListFloatingIPs(ctx context.Context, opts floatingips.ListOpts) ([]floatingips.FloatingIP, error)
	GetFloatingIP(ctx context.Context, id string) (*floatingips.FloatingIP, error)
	FloatingIPsOfPort(ctx context.Context, portID string) ([]floatingips.FloatingIP, error)
	FindFloatingIPByAddress(ctx context.Context, address string) (*floatingips.FloatingIP, error)
	AssociateFloatingIP(ctx context.Context, id, portID string) (*floatingips.FloatingIP, error)
	DisassociateFloatingIP(ctx context.Context, id string) error
	DeleteFloatingIP(ctx context.Context, id string) error
}

var _ Neutron = (*openstack.Network)(nil)
