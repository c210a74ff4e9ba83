// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package networkingtest holds an in-memory Neutron for the unit tests of the packages
// that use package networking.
package networkingtest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// Neutron is an in-memory Neutron with the semantics the rules depend on: IDs, fixed
// IPs that only one port holds, floating IPs with a description and a port, filters of
// the list calls. Its errors are classified as Neutron's are.
type Neutron struct {
	// Mu guards the fields; a test that reads them while calls may run takes it.
	Mu          sync.Mutex
	n           int
	Ports       map[string]*ports.Port
	FloatingIPs map[string]*floatingips.FloatingIP
	// Writes describe the writes, in order.
	Writes []string
	// Listed are the filters of the port lists, in order.
	Listed []openstack.PortFilter
}

func NewNeutron() *Neutron {
	return &Neutron{Ports: map[string]*ports.Port{}, FloatingIPs: map[string]*floatingips.FloatingIP{}}
}

func neutronError(status int, typ, op string) error {
	body := fmt.Sprintf(`{"NeutronError":{"type":%q,"message":"fake %s"}}`, typ, typ)
	return openstack.Classify(gophercloud.ErrUnexpectedResponseCode{Actual: status, Body: []byte(body)}, op)
}

func (f *Neutron) wrote(format string, args ...any) {
	f.Writes = append(f.Writes, fmt.Sprintf(format, args...))
}

func (f *Neutron) WriteCount() int {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return len(f.Writes)
}

func (f *Neutron) GetNetwork(_ context.Context, id string) (*networks.Network, error) {
	return &networks.Network{ID: id}, nil
}

func (f *Neutron) GetSubnet(_ context.Context, id string) (*subnets.Subnet, error) {
	return &subnets.Subnet{ID: id, NetworkID: "net", CIDR: "198.18.0.0/24"}, nil
}

func (f *Neutron) FindExternalNetworkByName(context.Context, string) (string, error) {
	return "ext", nil
}

func (f *Neutron) ListPorts(_ context.Context, filter openstack.PortFilter) ([]ports.Port, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Listed = append(f.Listed, filter)
	var out []ports.Port
	for _, p := range f.Ports {
		switch {
		case filter.Name != "" && p.Name != filter.Name,
			filter.NetworkID != "" && p.NetworkID != filter.NetworkID,
			!openstack.HasAllTags(p.Tags, filter.Tags),
			len(filter.FixedIPs) > 0 && !slices.ContainsFunc(filter.FixedIPs, func(ip string) bool { return openstack.HasFixedIP(p, ip) }):
			continue
		}
		out = append(out, *copyPort(p))
	}
	slices.SortFunc(out, func(a, b ports.Port) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func copyPort(p *ports.Port) *ports.Port {
	c := *p
	c.Tags = slices.Clone(p.Tags)
	c.FixedIPs = slices.Clone(p.FixedIPs)
	c.AllowedAddressPairs = slices.Clone(p.AllowedAddressPairs)
	return &c
}

func (f *Neutron) GetPort(_ context.Context, id string) (*ports.Port, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if p, ok := f.Ports[id]; ok {
		return copyPort(p), nil
	}
	return nil, neutronError(404, "PortNotFound", "read port "+id)
}

// fillID counts one more object put into the fake and names it kind-<count> unless it
// has an ID. The caller holds f.Mu.
func (f *Neutron) fillID(id *string, kind string) {
	f.n++
	if *id == "" {
		*id = fmt.Sprintf("%s-%d", kind, f.n)
	}
}

// AddPort puts a port into the fake as someone (a user, another cluster) made it.
func (f *Neutron) AddPort(p ports.Port) *ports.Port {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.fillID(&p.ID, "port")
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Unix(int64(1000+f.n), 0)
	}
	f.Ports[p.ID] = &p
	return copyPort(&p)
}

func (f *Neutron) CreateVIPPort(_ context.Context, spec openstack.VIPPortSpec) (*ports.Port, error) {
	f.Mu.Lock()
	address := spec.IPAddress
	if address == "" {
		address = fmt.Sprintf("198.18.0.%d", 100+f.n)
	}
	for _, p := range f.Ports {
		if openstack.HasFixedIP(p, address) {
			f.Mu.Unlock()
			return nil, neutronError(409, "IpAddressAlreadyAllocated", "create the VIP port")
		}
	}
	fixed := []ports.IP{{SubnetID: spec.SubnetID, IPAddress: address}}
	for _, o := range spec.OtherFixedIPs {
		if o.IPAddress == "" {
			// The other families of the fake are IPv6, in the benchmarking range.
			o.IPAddress = fmt.Sprintf("2001:2:0:10::%x", 100+f.n)
		}
		fixed = append(fixed, o)
	}
	f.wrote("create port %s", address)
	f.Mu.Unlock()
	return f.AddPort(ports.Port{Name: spec.Name, Description: spec.Description, NetworkID: spec.NetworkID,
		FixedIPs: fixed, Tags: slices.Clone(spec.Tags)}), nil
}

func (f *Neutron) DeletePort(_ context.Context, id string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.wrote("delete port %s", id)
	delete(f.Ports, id)
	// As Neutron does: a floating IP on the port is disassociated, not deleted.
	for _, fip := range f.FloatingIPs {
		if fip.PortID == id {
			fip.PortID, fip.FixedIP = "", ""
		}
	}
	return nil
}

func (f *Neutron) ReplacePortTags(_ context.Context, id string, tags []string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	p, ok := f.Ports[id]
	if !ok {
		return neutronError(404, "PortNotFound", "tag port "+id)
	}
	f.wrote("tag port %s", id)
	p.Tags = slices.Clone(tags)
	return nil
}

func (f *Neutron) updatePairs(port *ports.Port, pairs []ports.AddressPair, op string) (bool, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	p, ok := f.Ports[port.ID]
	if !ok {
		return false, neutronError(404, "PortNotFound", op)
	}
	f.wrote("%s %s", op, port.ID)
	p.AllowedAddressPairs = pairs
	*port = *copyPort(p)
	return true, nil
}

func (f *Neutron) EnsurePair(_ context.Context, port *ports.Port, ip string) (bool, error) {
	pairs, changed := openstack.MergePair(port.AllowedAddressPairs, ip, port.MACAddress)
	if !changed {
		return false, nil
	}
	return f.updatePairs(port, pairs, "add pair")
}

func (f *Neutron) RemovePairFromPort(_ context.Context, port *ports.Port, ip string) (bool, error) {
	pairs, changed := openstack.RemovePair(port.AllowedAddressPairs, ip, port.MACAddress)
	if !changed {
		return false, nil
	}
	return f.updatePairs(port, pairs, "remove pair")
}

// AddFloatingIP puts a floating IP into the fake as someone (a user, an admin) allocated it.
func (f *Neutron) AddFloatingIP(fip floatingips.FloatingIP) *floatingips.FloatingIP {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.fillID(&fip.ID, "fip")
	if fip.FloatingIP == "" {
		fip.FloatingIP = fmt.Sprintf("198.19.0.%d", f.n)
	}
	if fip.FloatingNetworkID == "" {
		fip.FloatingNetworkID = "ext"
	}
	f.FloatingIPs[fip.ID] = &fip
	c := fip
	return &c
}

func (f *Neutron) CreateFloatingIP(_ context.Context, spec openstack.FloatingIPSpec) (*floatingips.FloatingIP, error) {
	f.Mu.Lock()
	for _, x := range f.FloatingIPs {
		if spec.Address != "" && x.FloatingIP == spec.Address {
			f.Mu.Unlock()
			return nil, neutronError(409, "FloatingIPAddressAlreadyAllocated", "create the floating IP")
		}
	}
	f.wrote("create floating IP %s", spec.Address)
	f.Mu.Unlock()
	return f.AddFloatingIP(floatingips.FloatingIP{FloatingNetworkID: spec.FloatingNetworkID, PortID: spec.PortID, FixedIP: spec.FixedIP,
		Description: spec.Description, FloatingIP: spec.Address}), nil
}

func (f *Neutron) ListFloatingIPs(_ context.Context, opts floatingips.ListOpts) ([]floatingips.FloatingIP, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	var out []floatingips.FloatingIP
	for _, x := range f.FloatingIPs {
		switch {
		case opts.Description != "" && x.Description != opts.Description,
			opts.PortID != "" && x.PortID != opts.PortID,
			opts.FloatingIP != "" && x.FloatingIP != opts.FloatingIP:
			continue
		}
		out = append(out, *x)
	}
	slices.SortFunc(out, func(a, b floatingips.FloatingIP) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func (f *Neutron) GetFloatingIP(_ context.Context, id string) (*floatingips.FloatingIP, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if x, ok := f.FloatingIPs[id]; ok {
		c := *x
		return &c, nil
	}
	return nil, neutronError(404, "FloatingIPNotFound", "read floating IP "+id)
}

func (f *Neutron) FloatingIPsOfPort(ctx context.Context, portID string) ([]floatingips.FloatingIP, error) {
	return f.ListFloatingIPs(ctx, floatingips.ListOpts{PortID: portID})
}

func (f *Neutron) FindFloatingIPByAddress(ctx context.Context, address string) (*floatingips.FloatingIP, error) {
	list, _ := f.ListFloatingIPs(ctx, floatingips.ListOpts{FloatingIP: address})
	if len(list) == 0 {
		return nil, openstack.NewConfigurationError(fmt.Errorf("floating IP %s is not allocated in the project", address))
	}
	return &list[0], nil
}

func (f *Neutron) setFloatingIPPort(id, portID, op string) (*floatingips.FloatingIP, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	x, ok := f.FloatingIPs[id]
	if !ok {
		return nil, neutronError(404, "FloatingIPNotFound", op)
	}
	f.wrote("%s %s", op, id)
	x.PortID = portID
	c := *x
	return &c, nil
}

func (f *Neutron) AssociateFloatingIP(_ context.Context, id, portID string) (*floatingips.FloatingIP, error) {
	f.Mu.Lock()
	_, ok := f.Ports[portID]
	f.Mu.Unlock()
	if !ok {
		return nil, neutronError(404, "PortNotFound", "associate floating IP "+id)
	}
	return f.setFloatingIPPort(id, portID, "associate floating IP")
}

func (f *Neutron) DisassociateFloatingIP(_ context.Context, id string) error {
	_, err := f.setFloatingIPPort(id, "", "disassociate floating IP")
	if openstack.IsNotFound(err) {
		return nil
	}
	return err
}

func (f *Neutron) DeleteFloatingIP(_ context.Context, id string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.wrote("delete floating IP %s", id)
	delete(f.FloatingIPs, id)
	return nil
}
