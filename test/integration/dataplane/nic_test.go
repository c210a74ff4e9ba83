// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package dataplane_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/gardener/gardener-extension-kube-vip/test/dataplane"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestHarnessNodesOnNeutronPorts: a test/netns harness whose NIC provider is the Neutron
// "Nova step" has nodes with the ports' MACs and fixed IPs, wired by the linuxbridge agent
// with port security on; the node security group lets the nodes reach each other's etcd
// peer port but not an arbitrary port, and the external client reaches no node address.
// A node's way out through the router survives its link going down and up again.
func TestHarnessNodesOnNeutronPorts(t *testing.T) {
	env := dataplane.Load(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := netns.NewForTest(t, netns.Options{Prefix: "kvdpn-", Nodes: 2, NIC: env.NIC(env.OpenStack.NodePortIDs)})

	for i, n := range h.Nodes() {
		p, err := ports.Get(ctx, env.Admin, env.OpenStack.NodePortIDs[i]).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if n.MAC().String() != p.MACAddress || n.IP().String() != p.FixedIPs[0].IPAddress {
			t.Errorf("%s has %s %s, want port %s's %s %s", n, n.MAC(), n.IP(), p.ID, p.MACAddress, p.FixedIPs[0].IPAddress)
		}
		if p.Status != "ACTIVE" {
			t.Errorf("port %s is %s, want ACTIVE", p.ID, p.Status)
		}
		sec := struct {
			PortSecurityEnabled *bool `json:"port_security_enabled"`
		}{}
		if err := ports.Get(ctx, env.Admin, p.ID).ExtractInto(&sec); err != nil {
			t.Fatal(err)
		}
		if sec.PortSecurityEnabled == nil || !*sec.PortSecurityEnabled {
			t.Errorf("port %s: port security is off, want on", p.ID)
		}
		if dataplane.Ping(ctx, env.ClientNS, n.IP().String(), time.Second) {
			t.Errorf("the external client reaches %s's address %s directly", n, n.IP())
		}
	}

	a, b := h.Nodes()[0], h.Nodes()[1]
	reaches := func(port int) bool {
		l, err := b.Listen(ctx, "tcp", net.JoinHostPort(b.IP().String(), strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				_ = c.Close()
			}
		}()
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		defer dcancel()
		c, err := a.DialContext(dctx, "tcp", l.Addr().String())
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}
	if !reaches(2380) {
		t.Errorf("%s cannot reach %s's etcd peer port through the node security group", a, b)
	}
	if reaches(2390) {
		t.Errorf("%s reaches %s's port 2390, which the node security group does not admit", a, b)
	}

	// Out through the router (SNAT) to the external client's address, before and after a
	// cut cable: the kernel drops the default route with the link, LinkUp restores it.
	out := func() bool {
		_, err := a.Run(ctx, "ping", "-c", "1", "-W", "1", env.ClientIP)
		return err == nil
	}
	if !out() {
		t.Fatalf("%s cannot reach %s through the router", a, env.ClientIP)
	}
	if err := a.LinkDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.LinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	if !out() {
		routes, _ := a.Run(ctx, "ip", "route")
		t.Errorf("after link down and up, %s cannot reach %s through the router; routes:\n%s", a, env.ClientIP, routes)
	}
}
