// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package ovn_test walks the front door through ML2/OVN (`hack/ovn.sh up`): external client
// -> floating IP -> OVN's logical router (DNAT on the gateway chassis) -> the VIP, which OVN
// delivers to the node that last announced it, because the unbound VIP port is a virtual port
// of the node ports whose allowed address pairs carry it.
package ovn_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/dataplane"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

const (
	vip     = "198.18.0.60"
	apiPort = "6443"
)

// ovnEnv is what `hack/ovn.sh up` wrote next to the OpenStack env file.
type ovnEnv struct {
	os       framework.OpenStackEnv
	dir      string
	bridge   string
	clientNS string
	nb, sb   string
	ovsdb    string
}

func load(t *testing.T) ovnEnv {
	t.Helper()
	framework.RequireRoot(t)
	osEnv := framework.OpenStack(t)
	path, err := framework.OpenStackEnvFile()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "ovn", "env.sh"))
	if err != nil {
		framework.Unavailable(t, "no ML2/OVN (%v); start it with: hack/ovn.sh up", err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok && !strings.HasPrefix(line, "#") {
			vars[k] = v
		}
	}
	return ovnEnv{os: osEnv, dir: vars["OVN_DIR"], bridge: vars["OVN_INTEGRATION_BRIDGE"], clientNS: vars["OVN_CLIENT_NS"],
		nb: vars["OVN_NB"], sb: vars["OVN_SB"], ovsdb: vars["OVS_DB"]}
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// node is a namespace whose NIC is plugged into a Neutron port on OVN's integration bridge,
// as Nova and os-vif plug a VM (iface-id = the port's ID), serving HTTP on the API port.
type node struct {
	ns, portID, ip, mac string
}

func (e ovnEnv) plug(ctx context.Context, t *testing.T, neutron *openstack.Network, ns, portID string) node {
	t.Helper()
	port, err := neutron.GetPort(ctx, portID)
	if err != nil {
		t.Fatal(err)
	}
	n := node{ns: ns, portID: portID, ip: port.FixedIPs[0].IPAddress, mac: port.MACAddress}
	veth := "kvovn-" + portID[:8]
	t.Cleanup(func() {
		_, _ = run(context.Background(), "ovs-vsctl", "--db="+e.ovsdb, "--if-exists", "del-port", e.bridge, veth)
		_ = dataplane.IP("netns", "del", ns)
		_ = dataplane.IP("link", "del", veth)
	})
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "set", "eth0", "address", n.mac, "up"},
		{"-n", ns, "addr", "add", n.ip + "/24", "dev", "eth0"},
		{"-n", ns, "route", "add", "default", "via", "198.18.0.1"},
		{"link", "set", veth, "up"},
	} {
		if err := dataplane.IP(args...); err != nil {
			t.Fatal(err)
		}
	}
	// The userspace datapath's conntrack checks TCP checksums, which a veth leaves to offload.
	if _, err := dataplane.Exec(ctx, ns, "ethtool", "-K", "eth0", "tx", "off"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx, "ovs-vsctl", "--db="+e.ovsdb, "add-port", e.bridge, veth, "--", "set", "interface", veth,
		"external_ids:iface-id="+portID, "external_ids:attached-mac="+n.mac, "external_ids:iface-status=active"); err != nil {
		t.Fatal(err)
	}
	server := exec.Command("ip", "netns", "exec", ns, "python3", "-m", "http.server", apiPort, "--bind", "0.0.0.0")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	return n
}

// hold puts the VIP on the node and announces it as the agent does: gratuitous ARP
// requests (sender = target = VIP), from which OVN binds the virtual port to this node.
func (n node) hold(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := dataplane.IP("-n", n.ns, "addr", "add", vip+"/32", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	_, _ = dataplane.Exec(ctx, n.ns, "arping", "-U", "-S", vip, "-i", "eth0", "-c", "3", "-W", "0.1", vip)
}

func (n node) release(t *testing.T) {
	t.Helper()
	if err := dataplane.IP("-n", n.ns, "addr", "del", vip+"/32", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
}

// TestFloatingIPReachesTheVIPOnOVN: with the allowed address pairs the controller writes,
// OVN makes the VIP port virtual; the floating IP then reaches the node that announced the
// VIP, and follows it to another node on its gratuitous ARP. With pairs of the form "VIP/32"
// (what the controller wrote before) the VIP port stays a plain port and the floating IP
// never answers.
func TestFloatingIPReachesTheVIPOnOVN(t *testing.T) {
	e := load(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	factory := openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)})
	neutron, err := factory.Network(ctx, openstack.AuthConfig{
		Credentials: &openstack.Credentials{DomainName: e.os.DomainName, TenantName: e.os.ProjectName, Username: e.os.Username, Password: e.os.Password},
		AuthURL:     e.os.AuthURL, Region: e.os.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.os.NodePortIDs) < 2 {
		t.Fatalf("need two node ports, have %d", len(e.os.NodePortIDs))
	}
	sc := neutron.ServiceClient()
	vipPort, err := ports.Create(ctx, sc, ports.CreateOpts{Name: "ovn-test-vip", NetworkID: e.os.NetworkID,
		FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID, IPAddress: vip}}}).Extract()
	if err != nil {
		t.Fatalf("creating the VIP port: %v", err)
	}
	t.Cleanup(func() { _ = neutron.DeletePort(context.Background(), vipPort.ID) })
	fip, err := floatingips.Create(ctx, sc, floatingips.CreateOpts{FloatingNetworkID: e.os.ExternalNetworkID, PortID: vipPort.ID}).Extract()
	if err != nil {
		t.Fatalf("creating the floating IP: %v", err)
	}
	t.Cleanup(func() { _ = neutron.DeleteFloatingIP(context.Background(), fip.ID) })

	a := e.plug(ctx, t, neutron, "kvovn-test-a", e.os.NodePortIDs[0])
	b := e.plug(ctx, t, neutron, "kvovn-test-b", e.os.NodePortIDs[1])
	// The pairs exactly as the controller writes them.
	for _, n := range []node{a, b} {
		p, err := neutron.GetPort(ctx, n.portID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := neutron.EnsurePair(ctx, p, vip); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if p, err := neutron.GetPort(context.Background(), n.portID); err == nil {
				_, _ = neutron.RemovePairFromPort(context.Background(), p, vip)
			}
		})
	}
	var lspType string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		lspType, _ = run(ctx, "ovn-nbctl", "--db="+e.nb, "--bare", "--columns=type", "list", "logical_switch_port", vipPort.ID)
		return lspType == "virtual", nil
	}); err != nil {
		t.Fatalf("OVN's logical switch port of the VIP has type %q after the controller's pairs, want virtual: the floating IP would never reach a node", lspType)
	}

	url := "http://" + fip.FloatingIP + ":" + apiPort + "/"
	answers := func(ctx context.Context) bool {
		_, err := dataplane.Exec(ctx, e.clientNS, "curl", "-fsS", "-o", "/dev/null", "-m", "0.5", url)
		return err == nil
	}
	reach := func(what string) time.Duration {
		t.Helper()
		start := time.Now()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
			return answers(ctx), nil
		}); err != nil {
			t.Fatalf("%s: %s did not answer from the client namespace within 15 s", what, url)
		}
		return time.Since(start)
	}
	boundTo := func() string {
		out, _ := run(ctx, "ovn-sbctl", "--db="+e.sb, "--bare", "--columns=virtual_parent", "find", "port_binding", "logical_port="+vipPort.ID)
		return out
	}

	a.hold(ctx, t)
	t.Logf("VIP on a: the floating IP answers after %s", reach("VIP on a").Round(time.Millisecond))
	if got := boundTo(); got != a.portID {
		t.Errorf("OVN bound the VIP to port %q, want a's port %s", got, a.portID)
	}
	a.release(t)
	start := time.Now()
	b.hold(ctx, t)
	reach("VIP moved to b")
	t.Logf("VIP moved a -> b with gratuitous ARP: the floating IP answers %s after b took it", time.Since(start).Round(time.Millisecond))
	if got := boundTo(); got != b.portID {
		t.Errorf("OVN bound the VIP to port %q, want b's port %s", got, b.portID)
	}
	if pid, err := os.ReadFile(filepath.Join(e.dir, "run", "ovs-vswitchd.pid")); err != nil || exec.Command("kill", "-0", strings.TrimSpace(string(pid))).Run() != nil {
		t.Errorf("ovs-vswitchd is gone (see %s/log/ovs-vswitchd.log)", e.dir)
	}
}
