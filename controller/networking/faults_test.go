// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/gardener/gardener-extension-kube-vip/controller/networking/networkingtest"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// faultyNeutron is the fake Neutron with calls that fail: fail[call] is returned by the
// named call (and, when failOn is set, only for that port or floating IP ID). The fake
// itself has no failure injection.
type faultyNeutron struct {
	*networkingtest.Neutron
	fail   map[string]error
	failOn map[string]string
}

func faulty(n *networkingtest.Neutron) *faultyNeutron {
	return &faultyNeutron{Neutron: n, fail: map[string]error{}, failOn: map[string]string{}}
}

// neutronErr is an error of Neutron as package openstack classifies it.
func neutronErr(status int, typ, op string) error {
	body := fmt.Sprintf(`{"NeutronError":{"type":%q,"message":"injected %s"}}`, typ, typ)
	return openstack.Classify(gophercloud.ErrUnexpectedResponseCode{Actual: status, Body: []byte(body)}, op)
}

func (f *faultyNeutron) err(call, id string) error {
	if on, ok := f.failOn[call]; ok && on != id {
		return nil
	}
	return f.fail[call]
}

func (f *faultyNeutron) ListPorts(ctx context.Context, filter openstack.PortFilter) ([]ports.Port, error) {
	if err := f.err("ListPorts", filter.Name); err != nil {
		return nil, err
	}
	return f.Neutron.ListPorts(ctx, filter)
}

func (f *faultyNeutron) GetPort(ctx context.Context, id string) (*ports.Port, error) {
	if err := f.err("GetPort", id); err != nil {
		return nil, err
	}
	return f.Neutron.GetPort(ctx, id)
}

func (f *faultyNeutron) DeletePort(ctx context.Context, id string) error {
	if err := f.err("DeletePort", id); err != nil {
		return err
	}
	return f.Neutron.DeletePort(ctx, id)
}

func (f *faultyNeutron) ReplacePortTags(ctx context.Context, id string, tags []string) error {
	if err := f.err("ReplacePortTags", id); err != nil {
		return err
	}
	return f.Neutron.ReplacePortTags(ctx, id, tags)
}

func (f *faultyNeutron) EnsurePair(ctx context.Context, port *ports.Port, ip string) (bool, error) {
	if err := f.err("EnsurePair", port.ID); err != nil {
		return false, err
	}
	return f.Neutron.EnsurePair(ctx, port, ip)
}

func (f *faultyNeutron) RemovePairFromPort(ctx context.Context, port *ports.Port, ip string) (bool, error) {
	if err := f.err("RemovePairFromPort", port.ID); err != nil {
		return false, err
	}
	return f.Neutron.RemovePairFromPort(ctx, port, ip)
}

func (f *faultyNeutron) CreateFloatingIP(ctx context.Context, spec openstack.FloatingIPSpec) (*floatingips.FloatingIP, error) {
	if err := f.err("CreateFloatingIP", spec.PortID); err != nil {
		return nil, err
	}
	return f.Neutron.CreateFloatingIP(ctx, spec)
}

func (f *faultyNeutron) ListFloatingIPs(ctx context.Context, opts floatingips.ListOpts) ([]floatingips.FloatingIP, error) {
	if err := f.err("ListFloatingIPs", opts.Description); err != nil {
		return nil, err
	}
	return f.Neutron.ListFloatingIPs(ctx, opts)
}

func (f *faultyNeutron) GetFloatingIP(ctx context.Context, id string) (*floatingips.FloatingIP, error) {
	if err := f.err("GetFloatingIP", id); err != nil {
		return nil, err
	}
	return f.Neutron.GetFloatingIP(ctx, id)
}

func (f *faultyNeutron) FloatingIPsOfPort(ctx context.Context, portID string) ([]floatingips.FloatingIP, error) {
	if err := f.err("FloatingIPsOfPort", portID); err != nil {
		return nil, err
	}
	return f.Neutron.FloatingIPsOfPort(ctx, portID)
}

func (f *faultyNeutron) DeleteFloatingIP(ctx context.Context, id string) error {
	if err := f.err("DeleteFloatingIP", id); err != nil {
		return err
	}
	return f.Neutron.DeleteFloatingIP(ctx, id)
}

func (f *faultyNeutron) AssociateFloatingIP(ctx context.Context, id, portID string) (*floatingips.FloatingIP, error) {
	if err := f.err("AssociateFloatingIP", id); err != nil {
		return nil, err
	}
	return f.Neutron.AssociateFloatingIP(ctx, id, portID)
}
