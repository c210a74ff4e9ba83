// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
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
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
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
	// ClientIP6 is the client's IPv6 address on the public network, NodeGateway6 the router's
	// IPv6 address on the node network (empty with an IPv4-only hack/dataplane.sh).
	ClientIP6    string
	NodeGateway6 string
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
	env, err := loadFor(osEnv)
	if err != nil {
		framework.Unavailable(t, "no Neutron dataplane (%v); start it with: hack/dataplane.sh up", err)
	}
	return env
}

// LoadEnv returns the dataplane outside a test (the benchmark).
func LoadEnv(ctx context.Context) (Env, error) {
	path, err := framework.OpenStackEnvFile()
	if err != nil {
		return Env{}, err
	}
	osEnv, err := framework.LoadOpenStackEnv(path)
	if err != nil {
		return Env{}, fmt.Errorf("no local OpenStack (%w); start the dataplane with: hack/dataplane.sh up", err)
	}
	if err := osEnv.Ping(ctx); err != nil {
		return Env{}, fmt.Errorf("the local OpenStack does not answer (%w); start the dataplane with: hack/dataplane.sh up", err)
	}
	return loadFor(osEnv)
}

func loadFor(osEnv framework.OpenStackEnv) (Env, error) {
	path, err := framework.OpenStackEnvFile()
	if err != nil {
		return Env{}, err
	}
	return load(osEnv, filepath.Join(filepath.Dir(path), "dataplane", "env.sh"))
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
		OpenStack:    osEnv,
		AgentHost:    vars["DATAPLANE_AGENT_HOST"],
		ClientNS:     vars["DATAPLANE_CLIENT_NS"],
		ClientIP:     vars["DATAPLANE_CLIENT_IP"],
		NodeBridge:   vars["DATAPLANE_NODE_BRIDGE"],
		NodeGateway:  vars["DATAPLANE_NODE_GATEWAY"],
		RouterNS:     vars["DATAPLANE_ROUTER_NS"],
		ClientIP6:    vars["DATAPLANE_CLIENT_IP6"],
		NodeGateway6: vars["DATAPLANE_NODE_GATEWAY6"],
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
	// IP6 is the port's IPv6 address, empty if it has none.
	IP6 string
	MAC string
}

// Plug creates namespace ns with interface eth0 on Neutron port portID (its MAC, its first
// fixed IP in the /24 node subnet, a default route via the router) and waits until Neutron
// reports the port ACTIVE, i.e. the agent wired it. The test's cleanup unplugs it.
func (e Env) Plug(ctx context.Context, t testing.TB, ns, portID string) Node {
	t.Helper()
	t.Cleanup(func() { _ = IP("netns", "del", ns) })
	if err := IP("netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	n, err := e.plug(ctx, ns, portID)
	t.Cleanup(func() {
		if err := e.unplug(context.Background(), portID); err != nil {
			t.Errorf("unplug: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// plug gives the existing namespace ns its interface eth0 on Neutron port portID, binds the
// port to the agents' host and waits until it is ACTIVE.
func (e Env) plug(ctx context.Context, ns, portID string) (Node, error) {
	port, err := ports.Get(ctx, e.Admin, portID).Extract()
	if err != nil {
		return Node{}, fmt.Errorf("reading port %s: %w", portID, err)
	}
	if len(port.FixedIPs) == 0 {
		return Node{}, fmt.Errorf("port %s has no fixed IP", portID)
	}
	n := Node{NS: ns, PortID: portID, MAC: port.MACAddress}
	// one address per family, configured statically as a VM's cloud-init would from the port
	for _, f := range port.FixedIPs {
		if a, err := netip.ParseAddr(f.IPAddress); err == nil && a.Is6() {
			n.IP6 = cmp.Or(n.IP6, f.IPAddress)
		} else {
			n.IP = cmp.Or(n.IP, f.IPAddress)
		}
	}
	if n.IP == "" {
		return Node{}, fmt.Errorf("port %s has no IPv4 fixed IP", portID)
	}
	tap := tapOf(portID)
	mtu := strconv.Itoa(e.NodeMTU)
	for _, args := range [][]string{
		{"link", "add", tap, "mtu", mtu, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "set", "eth0", "address", n.MAC, "mtu", mtu, "up"},
		{"-n", ns, "addr", "add", n.IP + "/24", "dev", "eth0"},
		{"-n", ns, "route", "add", "default", "via", e.NodeGateway},
	} {
		if err := IP(args...); err != nil {
			return n, err
		}
	}
	if n.IP6 != "" && e.NodeGateway6 != "" {
		// nodad: the port's address is Neutron's to give, as a VM takes it from its metadata
		// keep_addr_on_down: a VM's static address survives a cut link (the kernel flushes IPv6
		// addresses of a link that goes down by default)
		for _, args := range [][]string{
			{"netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.eth0.keep_addr_on_down=1"},
			{"-n", ns, "addr", "add", n.IP6 + "/64", "dev", "eth0", "nodad"},
			{"-n", ns, "-6", "route", "add", "default", "via", e.NodeGateway6},
		} {
			if err := IP(args...); err != nil {
				return n, err
			}
		}
	}
	if err := IP("link", "set", tap, "up"); err != nil {
		return n, err
	}
	host := e.AgentHost
	if _, err := ports.Update(ctx, e.Admin, portID, portsbinding.UpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{}, HostID: &host,
	}).Extract(); err != nil {
		return n, fmt.Errorf("binding port %s to %s: %w", portID, host, err)
	}
	// os-vif's part: the agent makes the bridge but never enslaves taps of compute ports
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return IP("link", "set", tap, "master", e.NodeBridge) == nil, nil
	}); err != nil {
		return n, fmt.Errorf("bridge %s did not appear: %w", e.NodeBridge, err)
	}
	// The agent may wire the tap twice (once when it appears, again once it is on the
	// bridge; the port goes ACTIVE, BUILD, ACTIVE): wait until ACTIVE holds for two of its
	// polling intervals.
	var activeSince time.Time
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := ports.Get(ctx, e.Admin, portID).Extract()
		switch {
		case err != nil || p.Status != "ACTIVE":
			activeSince = time.Time{}
		case activeSince.IsZero():
			activeSince = time.Now()
		}
		return !activeSince.IsZero() && time.Since(activeSince) >= settled, nil
	}); err != nil {
		return n, fmt.Errorf("port %s did not become ACTIVE: %w", portID, err)
	}
	return n, nil
}

// unplug removes the port's tap (and with it the namespace's end) and unbinds the port.
func (e Env) unplug(ctx context.Context, portID string) error {
	_ = IP("link", "del", tapOf(portID)) // gone with the namespace already, if that went first
	empty := ""
	if _, err := ports.Update(ctx, e.Admin, portID, portsbinding.UpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{}, HostID: &empty,
	}).Extract(); gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil // deleted, as a replaced machine's port: nothing is bound
	} else if err != nil {
		return fmt.Errorf("unbinding port %s: %w", portID, err)
	}
	// Neutron reports DOWN a moment later; a plug before that would take the old ACTIVE
	// for the new binding's.
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := ports.Get(ctx, e.Admin, portID).Extract()
		return err == nil && p.Status == "DOWN", nil
	}); err != nil {
		return fmt.Errorf("port %s not DOWN after unbinding: %w", portID, err)
	}
	return nil
}

// settled is how long a port must stay ACTIVE to count as wired: two polling intervals of
// the linuxbridge agent (hack/dataplane.sh sets 1 s).
const settled = 2 * time.Second

// tapOf is the host end's name, as Nova names a VM's tap.
func tapOf(portID string) string { return "tap" + portID[:11] }

// NIC is a test/netns NIC provider: node i of a harness is plugged into Neutron port
// portIDs[i] (Options.Subnet must be the port's /24 subnet). Add gives a node that joins
// later (netns.Harness.AddNode) its port.
func (e Env) NIC(portIDs []string) *NodePorts {
	return &NodePorts{env: e, ports: slices.Clone(portIDs)}
}

// NodePorts is the NIC provider of NIC.
type NodePorts struct {
	env   Env
	mu    sync.Mutex
	ports []string
}

// Add appends a port for the next node.
func (p *NodePorts) Add(portID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ports = append(p.ports, portID)
}

func (p *NodePorts) port(i int) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i >= len(p.ports) {
		return "", false
	}
	return p.ports[i], true
}

// Plug implements netns.NIC.
func (p *NodePorts) Plug(ctx context.Context, i int, ns string) (netns.PluggedNIC, error) {
	id, ok := p.port(i)
	if !ok {
		return netns.PluggedNIC{}, fmt.Errorf("node %d: only %d Neutron ports", i+1, len(p.ports))
	}
	n, err := p.env.plug(ctx, ns, id)
	if err != nil {
		return netns.PluggedNIC{}, err
	}
	addr, err := netip.ParseAddr(n.IP)
	if err != nil {
		return netns.PluggedNIC{}, fmt.Errorf("port %s: %w", n.PortID, err)
	}
	mac, err := net.ParseMAC(n.MAC)
	if err != nil {
		return netns.PluggedNIC{}, fmt.Errorf("port %s: %w", n.PortID, err)
	}
	return netns.PluggedNIC{Addr: addr, MAC: mac}, nil
}

// Unplug implements netns.NIC.
func (p *NodePorts) Unplug(ctx context.Context, i int, _ string) error {
	id, ok := p.port(i)
	if !ok {
		return nil
	}
	return p.env.unplug(ctx, id)
}

// CreateMachinePort creates a port as the machine controller makes one for a control-plane
// machine, like hack/openstack.sh's: in the project, on the node network (an address of
// each node subnet, Neutron's choice), port security on with the node security group,
// owned by a compute instance named machine. The caller deletes it.
func (e Env) CreateMachinePort(ctx context.Context, machine string) (*ports.Port, error) {
	fixed := []ports.IP{{SubnetID: e.OpenStack.SubnetID}}
	if e.OpenStack.Subnet6ID != "" {
		fixed = append(fixed, ports.IP{SubnetID: e.OpenStack.Subnet6ID})
	}
	return e.createPort(ctx, ports.CreateOpts{
		Name: machine, NetworkID: e.OpenStack.NetworkID, ProjectID: e.OpenStack.ProjectID,
		DeviceOwner: "compute:nova", DeviceID: "machine-" + machine, FixedIPs: fixed,
		SecurityGroups: &[]string{e.OpenStack.SecurityGroupID},
	})
}

// RecreatePort creates a deleted port again with what made it: name, network, project,
// owner, MAC address, fixed IPs, security groups. It returns the new port (a new ID).
func (e Env) RecreatePort(ctx context.Context, was *ports.Port) (*ports.Port, error) {
	fixed := make([]ports.IP, 0, len(was.FixedIPs))
	for _, f := range was.FixedIPs {
		fixed = append(fixed, ports.IP{SubnetID: f.SubnetID, IPAddress: f.IPAddress})
	}
	return e.createPort(ctx, ports.CreateOpts{
		Name: was.Name, NetworkID: was.NetworkID, ProjectID: was.ProjectID, MACAddress: was.MACAddress,
		DeviceOwner: was.DeviceOwner, DeviceID: was.DeviceID, FixedIPs: fixed,
		SecurityGroups: &was.SecurityGroups,
	})
}

func (e Env) createPort(ctx context.Context, opts ports.CreateOpts) (*ports.Port, error) {
	p, err := ports.Create(ctx, e.Admin, opts).Extract()
	if err != nil {
		return nil, fmt.Errorf("creating port %s: %w", opts.Name, err)
	}
	return p, nil
}

// FrontDoor is a hand-made front door, what the controller makes: a VIP port, a floating
// IP on it, and the VIP in the node ports' allowed address pairs.
type FrontDoor struct {
	VIP, FloatingIP string
	portID, fipID   string
	nodePorts       []string
}

// OpenFrontDoor makes a front door for vip (an address of the node subnet) on the node
// ports (none: no pairs yet). On error, what was made is removed again.
func (e Env) OpenFrontDoor(ctx context.Context, vip string, nodePorts []string) (fd *FrontDoor, err error) {
	fd = &FrontDoor{VIP: vip, nodePorts: nodePorts}
	defer func() {
		if err != nil {
			err = errors.Join(err, fd.Close(context.WithoutCancel(ctx), e))
			fd = nil
		}
	}()
	port, err := ports.Create(ctx, e.Admin, ports.CreateOpts{
		Name: "dataplane-front-door", NetworkID: e.OpenStack.NetworkID, ProjectID: e.OpenStack.ProjectID,
		FixedIPs: []ports.IP{{SubnetID: e.OpenStack.SubnetID, IPAddress: vip}},
	}).Extract()
	if err != nil {
		return fd, fmt.Errorf("creating the VIP port: %w", err)
	}
	fd.portID = port.ID
	fip, err := floatingips.Create(ctx, e.Admin, floatingips.CreateOpts{
		FloatingNetworkID: e.OpenStack.ExternalNetworkID, PortID: port.ID, ProjectID: e.OpenStack.ProjectID,
	}).Extract()
	if err != nil {
		return fd, fmt.Errorf("creating the floating IP: %w", err)
	}
	fd.fipID, fd.FloatingIP = fip.ID, fip.FloatingIP
	for _, id := range nodePorts {
		if err := e.SetPairs(ctx, id, vip); err != nil {
			return fd, err
		}
	}
	return fd, nil
}

// Close removes the front door: the pairs, the floating IP and the VIP port.
func (fd *FrontDoor) Close(ctx context.Context, e Env) error {
	var errs []error
	for _, id := range fd.nodePorts {
		errs = append(errs, e.SetPairs(ctx, id))
	}
	if fd.fipID != "" {
		if err := floatingips.Delete(ctx, e.Admin, fd.fipID).ExtractErr(); err != nil {
			errs = append(errs, fmt.Errorf("deleting the floating IP: %w", err))
		}
	}
	if fd.portID != "" {
		if err := ports.Delete(ctx, e.Admin, fd.portID).ExtractErr(); err != nil {
			errs = append(errs, fmt.Errorf("deleting the VIP port: %w", err))
		}
	}
	return errors.Join(errs...)
}

// SetPairs replaces the allowed address pairs of a port with addrs.
func (e Env) SetPairs(ctx context.Context, portID string, addrs ...string) error {
	pairs := []ports.AddressPair{}
	for _, a := range addrs {
		pairs = append(pairs, ports.AddressPair{IPAddress: a})
	}
	if _, err := ports.Update(ctx, e.Admin, portID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract(); err != nil {
		return fmt.Errorf("setting the pairs of port %s: %w", portID, err)
	}
	return nil
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

// WaitARP waits until the L2 agent's ARP spoofing chain of the port (linuxbridge: one
// ebtables chain per tap) accepts ARP from the IPv4 address ip, or no longer does when
// accepted is false. The agent applies a pair's change seconds after Neutron's API answered
// on a busy machine, and each pass over the port flushes the chain before it adds the rules
// again: the answer must hold for settledPolls reads in a row, so that a flush does not
// pass for a removal. It returns the wait.
func (e Env) WaitARP(ctx context.Context, portID, ip string, accepted bool) (time.Duration, error) {
	const settledPolls = 3
	start := time.Now()
	chain := "neutronARP-" + tapOf(portID)
	var out string
	inARow := 0
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		b, err := exec.CommandContext(ctx, "ebtables", "-t", "nat", "--concurrent", "-L", chain).CombinedOutput()
		out = string(b)
		if err == nil && slices.Contains(strings.Fields(out), ip) == accepted {
			inARow++
		} else {
			inARow = 0
		}
		return inARow == settledPolls, nil
	})
	if err != nil {
		want := "accept"
		if !accepted {
			want = "drop"
		}
		return time.Since(start), fmt.Errorf("waiting for the L2 agent's chain %s to %s ARP from %s: %w: %s", chain, want, ip, err, strings.TrimSpace(out))
	}
	return time.Since(start), nil
}
