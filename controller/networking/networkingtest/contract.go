// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networkingtest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// Client is the part of package networking's Neutron interface that Check exercises.
type Client interface {
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

// Place is where Check creates its port and floating IP: a network and subnet, an
// external network a router connects to them, and a name no other port has.
type Place struct {
	NetworkID, SubnetID, ExternalNetworkID string
	Name                                   string
}

// Check runs the semantics the exposure's rules depend on against n: the fake here and
// the real Neutron in the integration tier, so that the unit tests' Neutron is held to
// Neutron's behaviour. It creates one port and one floating IP at p and deletes both;
// it returns every difference it found.
func Check(ctx context.Context, n Client, p Place) error {
	c := &checker{ctx: ctx, n: n}
	tag, other := p.Name+"-tag", p.Name+"-other"
	port, err := n.CreateVIPPort(ctx, openstack.VIPPortSpec{Name: p.Name, Description: "contract", NetworkID: p.NetworkID, SubnetID: p.SubnetID, Tags: []string{tag}})
	if err != nil {
		return fmt.Errorf("creating the port: %w", err)
	}
	defer func() { _ = n.DeletePort(context.WithoutCancel(ctx), port.ID) }()
	vip := openstack.PortAddress(port, p.SubnetID)
	c.expect(port.Name == p.Name && port.NetworkID == p.NetworkID && vip != "" && slices.Equal(port.Tags, []string{tag}),
		"the created port %+v has not the spec's name, network, a fixed IP on the subnet and the tag", port)

	_, err = n.CreateVIPPort(ctx, openstack.VIPPortSpec{Name: other, NetworkID: p.NetworkID, SubnetID: p.SubnetID, IPAddress: vip})
	c.expect(openstack.IsAddressTaken(err), "a second port with the address %s: %v, want an address-taken error", vip, err)

	c.ports("by name", openstack.PortFilter{Name: p.Name}, port.ID)
	c.ports("by name and tag", openstack.PortFilter{Name: p.Name, Tags: []string{tag}}, port.ID)
	c.ports("by name and another tag", openstack.PortFilter{Name: p.Name, Tags: []string{other}})
	c.ports("by network and address", openstack.PortFilter{NetworkID: p.NetworkID, FixedIPs: []string{vip}}, port.ID)

	const pair = "198.18.0.250"
	c.pair("adding", n.EnsurePair, port, pair, true)
	c.pair("adding again", n.EnsurePair, port, pair, false)
	got := c.port(port.ID)
	c.expect(got != nil && slices.ContainsFunc(got.AllowedAddressPairs, func(a ports.AddressPair) bool { return a.IPAddress == pair }),
		"the port read back has no pair %s", pair)
	c.pair("removing", n.RemovePairFromPort, port, pair, true)
	c.pair("removing again", n.RemovePairFromPort, port, pair, false)

	c.expect(n.ReplacePortTags(ctx, port.ID, []string{other}) == nil, "replacing the port's tags failed")
	got = c.port(port.ID)
	c.expect(got != nil && slices.Equal(got.Tags, []string{other}), "the port's tags after replacing them: %v, want [%s]", got, other)

	fip, err := n.CreateFloatingIP(ctx, openstack.FloatingIPSpec{FloatingNetworkID: p.ExternalNetworkID, PortID: port.ID, FixedIP: vip, Description: p.Name})
	if err != nil {
		return errors.Join(append(c.errs, fmt.Errorf("creating the floating IP: %w", err))...)
	}
	defer func() { _ = n.DeleteFloatingIP(context.WithoutCancel(ctx), fip.ID) }()
	c.expect(fip.PortID == port.ID && fip.Description == p.Name && fip.FloatingIP != "", "the created floating IP %+v is not on the port with the description", fip)
	c.floatingIPs("of the port", func() ([]floatingips.FloatingIP, error) { return n.FloatingIPsOfPort(ctx, port.ID) }, fip.ID)
	c.floatingIPs("by description", func() ([]floatingips.FloatingIP, error) {
		return n.ListFloatingIPs(ctx, floatingips.ListOpts{Description: p.Name})
	}, fip.ID)
	found, err := n.FindFloatingIPByAddress(ctx, fip.FloatingIP)
	c.expect(err == nil && found.ID == fip.ID, "finding the floating IP by its address %s: %v %v", fip.FloatingIP, found, err)

	c.expect(n.DisassociateFloatingIP(ctx, fip.ID) == nil, "disassociating the floating IP failed")
	c.floatingIPs("of the port after disassociating", func() ([]floatingips.FloatingIP, error) { return n.FloatingIPsOfPort(ctx, port.ID) })
	again, err := n.AssociateFloatingIP(ctx, fip.ID, port.ID)
	c.expect(err == nil && again.PortID == port.ID, "associating the floating IP again: %v %v", again, err)

	// Deleting the port leaves its floating IP allocated, with no port.
	c.expect(n.DeletePort(ctx, port.ID) == nil, "deleting the port failed")
	_, err = n.GetPort(ctx, port.ID)
	c.expect(openstack.IsNotFound(err), "reading the deleted port: %v, want not found", err)
	kept, err := n.GetFloatingIP(ctx, fip.ID)
	c.expect(err == nil && kept.PortID == "", "the floating IP after its port was deleted: %v %v, want allocated without a port", kept, err)
	_, err = n.AssociateFloatingIP(ctx, fip.ID, port.ID)
	c.expect(err != nil, "associating the floating IP with the deleted port succeeded")
	c.expect(n.ReplacePortTags(ctx, port.ID, nil) != nil, "tagging the deleted port succeeded")
	updated, err := n.RemovePairFromPort(ctx, port, pair)
	c.expect(!updated && err == nil, "removing a pair from the deleted port: %v %v, want nothing to do", updated, err)
	c.expect(n.DeletePort(ctx, port.ID) == nil, "deleting the port again failed: a deletion of what is gone is a success")

	c.expect(n.DeleteFloatingIP(ctx, fip.ID) == nil, "deleting the floating IP failed")
	_, err = n.GetFloatingIP(ctx, fip.ID)
	c.expect(openstack.IsNotFound(err), "reading the deleted floating IP: %v, want not found", err)
	c.expect(n.DisassociateFloatingIP(ctx, fip.ID) == nil, "disassociating the deleted floating IP failed: it has nothing to disassociate")
	c.expect(n.DeleteFloatingIP(ctx, fip.ID) == nil, "deleting the floating IP again failed: a deletion of what is gone is a success")
	return errors.Join(c.errs...)
}

type checker struct {
	ctx  context.Context
	n    Client
	errs []error
}

func (c *checker) expect(ok bool, format string, args ...any) {
	if !ok {
		c.errs = append(c.errs, fmt.Errorf(format, args...))
	}
}

func (c *checker) port(id string) *ports.Port {
	p, err := c.n.GetPort(c.ctx, id)
	c.expect(err == nil, "reading the port %s: %v", id, err)
	return p
}

func (c *checker) ports(what string, f openstack.PortFilter, want ...string) {
	list, err := c.n.ListPorts(c.ctx, f)
	var ids []string
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	c.expect(err == nil && slices.Equal(ids, want), "listing ports %s: %v %v, want %v", what, ids, err, want)
}

func (c *checker) floatingIPs(what string, list func() ([]floatingips.FloatingIP, error), want ...string) {
	got, err := list()
	var ids []string
	for _, f := range got {
		ids = append(ids, f.ID)
	}
	c.expect(err == nil && slices.Equal(ids, want), "listing floating IPs %s: %v %v, want %v", what, ids, err, want)
}

func (c *checker) pair(what string, change func(context.Context, *ports.Port, string) (bool, error), port *ports.Port, ip string, want bool) {
	updated, err := change(c.ctx, port, ip)
	c.expect(err == nil && updated == want, "%s the pair %s: updated %v, %v; want updated %v", what, ip, updated, err, want)
}
