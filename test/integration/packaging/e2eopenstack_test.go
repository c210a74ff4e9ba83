// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestE2EScriptOpenStackSteps runs the OpenStack steps of hack/e2e/e2e.sh (openstack-up and
// openstack-down, which its up and down run) against the local Keystone + Neutron, with the
// OS_* variables as devstack's openrc sets them (an unversioned Keystone URL, domain IDs):
// only the kind part of the script is left to .github/workflows/e2e-devstack.yaml. The
// extension's own code then authenticates with the Secret the script wrote and creates its
// VIP port and floating IP from the Infrastructure status the script wrote; the sweep must
// remove exactly those, and leave another cluster's, a user's and untagged resources alone.
// The node addressing is devstack's: the network also has an IPv6 SLAAC subnet (devstack's
// default IP_VERSION=4+6), so each node port has an address of both families, and the node's
// address must be the IPv4 one of the named subnet; the port admits the pod network (kindnet
// routes pod traffic through it); and the kubelet flags kind wrote get exactly that address.
func TestE2EScriptOpenStackSteps(t *testing.T) {
	env := framework.OpenStack(t)
	if _, err := exec.LookPath("openstack"); err != nil {
		framework.Unavailable(t, "the openstack CLI is missing (python3-openstackclient; hack/install-deps.sh)")
	}
	ctx := t.Context()
	root := repoRoot(t)
	neutron, err := env.Network(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := neutron.ServiceClient()

	name := "e2e-" + rand.String(6)
	nodes := []string{name + "-control-plane", name + "-control-plane2"}
	state := t.TempDir()
	network, err := neutron.GetNetwork(ctx, env.NetworkID)
	if err != nil {
		t.Fatal(err)
	}
	var mtu struct {
		MTU int `json:"mtu"`
	}
	if err := networks.Get(ctx, client, env.NetworkID).ExtractInto(&mtu); err != nil {
		t.Fatal(err)
	}
	subnet, err := neutron.GetSubnet(ctx, env.SubnetID)
	if err != nil {
		t.Fatal(err)
	}
	router, err := routers.Get(ctx, client, env.RouterID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	const podCIDR = "10.244.0.0/16" // kind's default podSubnet, e2e.sh's default
	scriptOutput := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "e2e", "e2e.sh"), args...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("e2e.sh %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	script := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "e2e", "e2e.sh"), args...)
		cmd.Env = append(withoutOpenStackVariables(os.Environ()),
			// devstack's openrc: Keystone's unversioned URL, the domains by ID
			"OS_AUTH_URL="+strings.TrimSuffix(strings.TrimSuffix(env.AuthURL, "/"), "/v3"),
			"OS_AUTH_TYPE=password",
			"OS_USERNAME="+env.Username, "OS_PASSWORD="+env.Password, "OS_PROJECT_NAME="+env.ProjectName,
			"OS_USER_DOMAIN_ID=default", "OS_PROJECT_DOMAIN_ID=default", "OS_REGION_NAME="+env.Region,
			"E2E_NAME="+name, "E2E_STATE="+state,
			"E2E_NETWORK="+network.Name, "E2E_SUBNET="+subnet.Name, "E2E_ROUTER="+router.Name,
			"E2E_FLOATING_POOL="+env.ExternalNetworkName)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("e2e.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// devstack's ipv6-private-subnet: SLAAC, so Neutron adds an address of it to every port of
	// the network, the nodes' too, beside the one of the IPv4 subnet they ask for.
	slaac, err := subnets.Create(ctx, client, subnets.CreateOpts{
		NetworkID: env.NetworkID, Name: name + "-v6", IPVersion: gophercloud.IPv6, CIDR: "fd00:e2e:" + fmt.Sprint(1000+rand.Intn(8000)) + "::/64",
		IPv6AddressMode: "slaac", IPv6RAMode: "slaac",
	}).Extract()
	if err != nil {
		t.Fatalf("an IPv6 SLAAC subnet as devstack's: %v", err)
	}
	// registered before the ports' cleanup below, so it runs after it
	t.Cleanup(func() {
		if err := subnets.Delete(context.WithoutCancel(ctx), client, slaac.ID).ExtractErr(); err != nil {
			t.Errorf("deleting the SLAAC subnet %s: %v", slaac.ID, err)
		}
	})

	// What a failed run leaves behind goes, the bystanders too.
	var leftovers []func(context.Context)
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		for _, f := range leftovers {
			f(ctx)
		}
		for _, n := range nodes {
			if list, err := neutron.ListPorts(ctx, openstack.PortFilter{Name: n}); err == nil {
				for _, p := range list {
					_ = neutron.DeletePort(ctx, p.ID)
				}
			}
		}
		if sg, err := findGroup(ctx, client, name+"-nodes"); err == nil && sg != nil {
			_ = groups.Delete(ctx, client, sg.ID).ExtractErr()
		}
	})

	script(append([]string{"openstack-up"}, nodes...)...)

	// The nodes' security group: the API port and ICMP from anywhere, all between the nodes
	// and from their pods (kind's default pod network).
	sg, err := findGroup(ctx, client, name+"-nodes")
	if err != nil || sg == nil {
		t.Fatalf("security group %s-nodes: %v (found: %v)", name, err, sg != nil)
	}
	var ruleSet []string
	for _, r := range sg.Rules {
		if r.Direction == string(rules.DirIngress) {
			ruleSet = append(ruleSet, fmt.Sprintf("%s %s %d-%d %s %s", r.EtherType, r.Protocol, r.PortRangeMin, r.PortRangeMax, r.RemoteIPPrefix, r.RemoteGroupID))
		}
	}
	for _, want := range []string{
		"IPv4 tcp 6443-6443 0.0.0.0/0 ",
		"IPv4 icmp 0-0 0.0.0.0/0 ",
		"IPv4  0-0  " + sg.ID,
		"IPv4  0-0 10.244.0.0/16 ",
	} {
		if !slices.Contains(ruleSet, want) {
			t.Errorf("security group %s has no ingress rule %q; it has %q", sg.Name, want, ruleSet)
		}
	}

	// A port per node as Nova makes it, and the script's record of it.
	recorded := readNodePorts(t, filepath.Join(state, "node-ports"))
	if len(recorded) != len(nodes) {
		t.Fatalf("node-ports records %d nodes, want %d: %v", len(recorded), len(nodes), recorded)
	}
	for i, n := range nodes {
		rec := recorded[i]
		p, err := neutron.GetPort(ctx, rec[1])
		if err != nil {
			t.Fatalf("the port node-ports records for %s: %v", n, err)
		}
		want := []string{n, p.ID, p.MACAddress, openstack.PortAddress(p, subnet.ID), subnet.CIDR, subnet.GatewayIP, fmt.Sprint(mtu.MTU)}
		if !slices.Equal(rec, want) {
			t.Errorf("node-ports line %q, want %q (from Neutron)", rec, want)
		}
		if p.Name != n || p.NetworkID != network.ID || p.DeviceOwner != "compute:nova" || !slices.Equal(p.SecurityGroups, []string{sg.ID}) {
			t.Errorf("port %s: name %q network %s device_owner %q security groups %v; want %q, %s, compute:nova, [%s]",
				p.ID, p.Name, p.NetworkID, p.DeviceOwner, p.SecurityGroups, n, network.ID, sg.ID)
		}
		if openstack.PortAddress(p, slaac.ID) == "" {
			t.Errorf("port %s has no address of the SLAAC subnet (fixed IPs %+v): the test does not stand for devstack's network", p.ID, p.FixedIPs)
		}
		if !slices.ContainsFunc(p.AllowedAddressPairs, func(a ports.AddressPair) bool { return a.IPAddress == podCIDR }) {
			t.Errorf("port %s does not admit the pod network %s (allowed address pairs %+v)", p.ID, podCIDR, p.AllowedAddressPairs)
		}

		// kind's kubelet flags (its kubeadm template's node-ip, in the order kubeadm writes
		// them), rewritten to the port's address: one --node-ip, that address.
		kindFlags := `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=172.18.0.3 --node-labels= --pod-infra-container-image=registry.k8s.io/pause:3.10 --provider-id=kind://docker/` + name + `/` + n + `"`
		flags := scriptOutput(kindFlags, "kubelet-flags", rec[3])
		if got := regexp.MustCompile(`--node-ip=[^ "]*`).FindAllString(flags, -1); !slices.Equal(got, []string{"--node-ip=" + rec[3]}) {
			t.Errorf("kubelet flags of %s: node IP flags %q, want exactly --node-ip=%s:\n%s", n, got, rec[3], flags)
		}
	}

	// The extension authenticates with the Secret the script wrote, as its controller would.
	var secret struct {
		StringData map[string]string `json:"stringData"`
	}
	readJSON(t, filepath.Join(state, "cloudprovider.json"), &secret)
	data := map[string][]byte{}
	for k, v := range secret.StringData {
		data[k] = []byte(v)
	}
	creds, err := openstack.CredentialsFromSecretData(data)
	if err != nil {
		t.Fatalf("the cloudprovider Secret of e2e.sh: %v", err)
	}
	factory := openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)})
	ext, err := factory.Network(ctx, openstack.AuthConfig{Credentials: creds, Region: env.Region})
	if err != nil {
		t.Fatalf("the extension cannot authenticate with the cloudprovider Secret of e2e.sh (authURL %q): %v", creds.AuthURL, err)
	}

	// The Infrastructure status the script wrote, read and resolved by the controller's code.
	var infra struct {
		Status struct {
			ProviderStatus json.RawMessage `json:"providerStatus"`
		} `json:"status"`
	}
	readJSON(t, filepath.Join(state, "infrastructure-status.json"), &infra)
	status, err := exposure.DecodeInfrastructureStatus(&runtime.RawExtension{Raw: infra.Status.ProviderStatus})
	if err != nil {
		t.Fatal(err)
	}
	cfg := exposure.ResolveConfig(&v1alpha1.ExposureConfig{}, status)
	if cfg.NetworkID != network.ID || cfg.SubnetID != subnet.ID || cfg.SubnetCIDR != subnet.CIDR ||
		cfg.FloatingNetworkID != env.ExternalNetworkID || status.Networks.Router.ID != router.ID {
		t.Fatalf("the Infrastructure status of e2e.sh resolves to network %s subnet %s (%s) pool %s router %s; want %s %s (%s) %s %s",
			cfg.NetworkID, cfg.SubnetID, cfg.SubnetCIDR, cfg.FloatingNetworkID, status.Networks.Router.ID,
			network.ID, subnet.ID, subnet.CIDR, env.ExternalNetworkID, router.ID)
	}

	// The front doors: this cluster's (the identity is the technical ID, E2E_NAME) and one of
	// a cluster whose name only starts with it, made by the extension's own code.
	frontDoor := func(identity string) (portID, fipID string) {
		t.Helper()
		uid := types.UID("uid-" + rand.String(8))
		fd := &networking.FrontDoor{UID: uid, Mark: networking.Mark{Identity: identity, Owner: string(uid)}, Spec: cfg.Spec}
		st := &v1alpha1.ExposureStatus{Identity: identity, Owner: string(uid)}
		svc := networking.NewService(ext, networking.Options{Log: logr.Discard()})
		port, created, err := svc.GetOrCreateVIPPort(ctx, fd, st)
		if err != nil {
			t.Fatalf("VIP port of %s: %v", identity, err)
		}
		leftovers = append(leftovers, func(ctx context.Context) { _ = neutron.DeletePort(ctx, port.ID) })
		st.VIPAddress = openstack.PortAddress(port, cfg.SubnetID)
		if err := svc.ReconcileFloatingIP(ctx, fd, port, created, st); err != nil {
			t.Fatalf("floating IP of %s: %v", identity, err)
		}
		leftovers = append(leftovers, func(ctx context.Context) { _ = neutron.DeleteFloatingIP(ctx, st.FloatingIPID) })
		return port.ID, st.FloatingIPID
	}
	ourPort, ourFIP := frontDoor(name)
	otherPort, otherFIP := frontDoor(name + "x")

	// Bystanders: a user's untagged port and floating IP, and a port with the cluster's tag
	// but not the extension's.
	bystanderPort := func(suffix string, tags ...string) string {
		t.Helper()
		p, err := ports.Create(ctx, client, ports.CreateOpts{Name: name + "-" + suffix, NetworkID: network.ID}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		leftovers = append(leftovers, func(ctx context.Context) { _ = neutron.DeletePort(ctx, p.ID) })
		if len(tags) > 0 {
			if err := neutron.ReplacePortTags(ctx, p.ID, tags); err != nil {
				t.Fatal(err)
			}
		}
		return p.ID
	}
	untaggedPort := bystanderPort("user")
	clusterTagOnly := bystanderPort("tagged-by-user", openstack.ClusterTag(name))
	userFIP, err := floatingips.Create(ctx, client, floatingips.CreateOpts{FloatingNetworkID: env.ExternalNetworkID, Description: "a user's"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	leftovers = append(leftovers, func(ctx context.Context) { _ = neutron.DeleteFloatingIP(ctx, userFIP.ID) })

	script("openstack-down")

	gone := func(what, id string, get func(context.Context, string) error) {
		t.Helper()
		if err := get(ctx, id); !openstack.IsNotFound(err) {
			t.Errorf("%s %s is still there after e2e.sh openstack-down (%v)", what, id, err)
		}
	}
	kept := func(what, id string, get func(context.Context, string) error) {
		t.Helper()
		if err := get(ctx, id); err != nil {
			t.Errorf("e2e.sh openstack-down removed %s %s: %v", what, id, err)
		}
	}
	getPort := func(ctx context.Context, id string) error { _, err := neutron.GetPort(ctx, id); return err }
	getFIP := func(ctx context.Context, id string) error { _, err := neutron.GetFloatingIP(ctx, id); return err }
	gone("the extension's VIP port", ourPort, getPort)
	gone("the extension's floating IP", ourFIP, getFIP)
	for _, rec := range recorded {
		gone("the node port of "+rec[0], rec[1], getPort)
	}
	if g, err := findGroup(ctx, client, name+"-nodes"); err != nil || g != nil {
		t.Errorf("security group %s-nodes after openstack-down: %v (still there: %v)", name, err, g != nil)
	}
	kept("the VIP port of cluster "+name+"x", otherPort, getPort)
	kept("the floating IP of cluster "+name+"x", otherFIP, getFIP)
	kept("a user's untagged port", untaggedPort, getPort)
	kept("a user's port with only the cluster tag", clusterTagOnly, getPort)
	kept("a user's floating IP", userFIP.ID, getFIP)
	for _, id := range env.NodePortIDs {
		kept("the environment's node port", id, getPort)
	}
	if _, err := groups.Get(ctx, client, env.SecurityGroupID).Extract(); err != nil {
		t.Errorf("e2e.sh openstack-down removed the environment's security group: %v", err)
	}
	for _, f := range []string{"node-ports", "cloudprovider.json", "infrastructure-status.json"} {
		if _, err := os.Stat(filepath.Join(state, f)); !os.IsNotExist(err) {
			t.Errorf("%s is left in the state directory (%v)", f, err)
		}
	}
}

// withoutOpenStackVariables drops the OS_* variables of the test's own environment: the
// script gets exactly the openrc the test sets.
func withoutOpenStackVariables(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "OS_") })
}

func findGroup(ctx context.Context, client *gophercloud.ServiceClient, name string) (*groups.SecGroup, error) {
	pages, err := groups.List(client, groups.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	list, err := groups.ExtractGroups(pages)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[0], nil
}

func readNodePorts(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, strings.Fields(s.Text()))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
