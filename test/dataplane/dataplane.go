// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

// Package dataplane gives tests the real Neutron dataplane of `hack/dataplane.sh up`: the
// external client namespace (whose only way to the nodes is a floating IP) and the "Nova step",
// which plugs a network namespace into a Neutron port the way Nova and os-vif plug a VM: the
// port is bound to the linuxbridge agent's host, the namespace gets a veth NIC with the port's
// MAC and fixed IP, and the host end joins the network's bridge, where the agent applies the
// port's security groups and allowed address pairs.
package dataplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// Env is what `hack/dataplane.sh up` wrote to .local/openstack/dataplane/env.sh.
type Env struct {
	OpenStack framework.OpenStackEnv
	// AgentHost is the host name of the linuxbridge and L3 agents: ports bound to it are wired.
	AgentHost string
	// ClientNS is the external client's namespace, ClientIP its address on the public network.
	ClientNS string
	ClientIP string
	// NodeBridge is the node network's Linux bridge, NodeGateway the router's address on it.
	NodeBridge  string
	NodeGateway string
	NodeMTU     int
	// RouterNS is the L3 agent's qrouter namespace of the node router.
	RouterNS string
	// Admin is a network client as the cloud admin (binding:host_id is admin-only).
	Admin *gophercloud.ServiceClient
}

// Load returns the dataplane, or ends the test (framework.Unavailable) if it is not up.
func Load(t testing.TB) Env {
	t.Helper()
	framework.RequireRoot(t)
	osEnv := framework.OpenStack(t)
	path, err := framework.OpenStackEnvFile()
	if err != nil {
		t.Fatalf("locating the OpenStack env file: %v", err)
	}
	env, err := load(osEnv, filepath.Join(filepath.Dir(path), "dataplane", "env.sh"))
	if err != nil {
		framework.Unavailable(t, "no Neutron dataplane (%v); start it with: hack/dataplane.sh up", err)
	}
	return env
}

func load(osEnv framework.OpenStackEnv, path string) (Env, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Env{}, fmt.Errorf("reading %s: %w", path, err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "=")
		if ok && !strings.HasPrefix(name, "#") {
			vars[name] = value
		}
	}
	env := Env{
		OpenStack:   osEnv,
		AgentHost:   vars["DATAPLANE_AGENT_HOST"],
		ClientNS:    vars["DATAPLANE_CLIENT_NS"],
		ClientIP:    vars["DATAPLANE_CLIENT_IP"],
		NodeBridge:  vars["DATAPLANE_NODE_BRIDGE"],
		NodeGateway: vars["DATAPLANE_NODE_GATEWAY"],
		RouterNS:    vars["DATAPLANE_ROUTER_NS"],
	}
	if env.NodeMTU, err = strconv.Atoi(vars["DATAPLANE_NODE_MTU"]); err != nil {
		return Env{}, fmt.Errorf("%s: DATAPLANE_NODE_MTU: %w", path, err)
	}
	if env.AgentHost == "" || env.ClientNS == "" || env.NodeBridge == "" || env.NodeGateway == "" {
		return Env{}, fmt.Errorf("%s lacks a DATAPLANE_ variable", path)
	}
	provider, err := openstack.AuthenticatedClient(context.Background(), gophercloud.AuthOptions{
		IdentityEndpoint: osEnv.AuthURL,
		Username:         vars["DATAPLANE_ADMIN_USER"],
		Password:         vars["DATAPLANE_ADMIN_PASSWORD"],
		DomainName:       osEnv.DomainName,
		Scope:            &gophercloud.AuthScope{ProjectName: "admin", DomainName: osEnv.DomainName},
	})
	if err != nil {
		return Env{}, fmt.Errorf("authenticating as the admin: %w", err)
	}
	if env.Admin, err = openstack.NewNetworkV2(provider, gophercloud.EndpointOpts{Region: osEnv.Region}); err != nil {
		return Env{}, fmt.Errorf("network client: %w", err)
	}
	return env, nil
}

// Node is a namespace plugged into a Neutron port.
type Node struct {
	NS     string
	PortID string
	IP     string
	MAC    string
	tap    string
}

// Plug creates namespace ns with interface eth0 on Neutron port portID (its MAC, its first
// fixed IP in the /24 node subnet, a default route via the router) and waits until Neutron
// reports the port ACTIVE, i.e. the agent wired it. The test's cleanup unplugs it.
func (e Env) Plug(ctx context.Context, t testing.TB, ns, portID string) Node {
	t.Helper()
	port, err := ports.Get(ctx, e.Admin, portID).Extract()
	if err != nil {
		t.Fatalf("reading port %s: %v", portID, err)
	}
	if len(port.FixedIPs) == 0 {
		t.Fatalf("port %s has no fixed IP", portID)
	}
	n := Node{NS: ns, PortID: portID, IP: port.FixedIPs[0].IPAddress, MAC: port.MACAddress, tap: "tap" + portID[:11]}
	t.Cleanup(func() { e.unplug(t, n) })
	mtu := strconv.Itoa(e.NodeMTU)
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", n.tap, "mtu", mtu, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "set", "eth0", "address", n.MAC, "mtu", mtu, "up"},
		{"-n", ns, "addr", "add", n.IP + "/24", "dev", "eth0"},
		{"-n", ns, "route", "add", "default", "via", e.NodeGateway},
		{"link", "set", n.tap, "up"},
	} {
		if err := IP(args...); err != nil {
			t.Fatal(err)
		}
	}
	host := e.AgentHost
	if _, err := ports.Update(ctx, e.Admin, portID, portsbinding.UpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{}, HostID: &host,
	}).Extract(); err != nil {
		t.Fatalf("binding port %s to %s: %v", portID, host, err)
	}
	// os-vif's part: the agent makes the bridge but never enslaves taps of compute ports
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return IP("link", "set", n.tap, "master", e.NodeBridge) == nil, nil
	}); err != nil {
		t.Fatalf("bridge %s did not appear: %v", e.NodeBridge, err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := ports.Get(ctx, e.Admin, portID).Extract()
		return err == nil && p.Status == "ACTIVE", nil
	}); err != nil {
		t.Fatalf("port %s did not become ACTIVE: %v", portID, err)
	}
	return n
}

func (e Env) unplug(t testing.TB, n Node) {
	if err := IP("netns", "del", n.NS); err != nil {
		t.Errorf("unplug: %v", err)
	}
	_ = IP("link", "del", n.tap) // gone with the namespace's end already, normally
	empty := ""
	if _, err := ports.Update(context.Background(), e.Admin, n.PortID, portsbinding.UpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{}, HostID: &empty,
	}).Extract(); err != nil {
		t.Errorf("unbinding port %s: %v", n.PortID, err)
	}
}

// Exec runs a command in namespace ns and returns its combined output.
func Exec(ctx context.Context, ns string, cmd ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, cmd...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s in %s: %w: %s", strings.Join(cmd, " "), ns, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Ping tells whether ns gets an ICMP echo reply from addr within timeout.
func Ping(ctx context.Context, ns, addr string, timeout time.Duration) bool {
	secs := strconv.Itoa(max(1, int(timeout.Seconds())))
	_, err := Exec(ctx, ns, "ping", "-c", "1", "-W", secs, addr)
	return err == nil
}

// IP runs the ip(8) command.
func IP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return errors.Join(fmt.Errorf("ip %s: %w", strings.Join(args, " "), err), errors.New(strings.TrimSpace(string(out))))
	}
	return nil
}
