// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// EnvFileVariable overrides where OpenStack reads the environment file.
const EnvFileVariable = "KUBE_VIP_OPENSTACK_ENV"

// OpenStackEnv is the local Keystone and Neutron of `hack/openstack.sh up` and what it
// provisioned in project demo, as written to .local/openstack/env.sh.
type OpenStackEnv struct {
	AuthURL    string // OS_AUTH_URL, Keystone v3
	Region     string // OS_REGION_NAME
	DomainName string // OS_DOMAIN_NAME
	// ProjectName and ProjectID are the project (provider-openstack's tenantName).
	ProjectName string
	ProjectID   string
	// Username and Password are a member of the project.
	Username string
	Password string
	// ApplicationCredentialID and ApplicationCredentialSecret are the user's application credential.
	ApplicationCredentialID     string
	ApplicationCredentialSecret string
	NeutronURL                  string
	ExternalNetworkID           string
	ExternalNetworkName         string
	NetworkID                   string
	SubnetID                    string
	RouterID                    string
	SecurityGroupID             string
	// NodePortIDs and NodeIPs are the control-plane machines' ports, in the same order.
	NodePortIDs []string
	NodeIPs     []string
	// Subnet6ID is the node network's IPv6 subnet, NodeIPs6 the node ports' IPv6 addresses (in
	// NodePortIDs' order), ExternalSubnet6ID the external network's IPv6 subnet and
	// RouterGatewayIP6 the router's address on it; empty in an env file of an IPv4-only
	// hack/openstack.sh.
	Subnet6ID         string
	NodeIPs6          []string
	ExternalSubnet6ID string
	RouterGatewayIP6  string
	// AdminUsername, AdminPassword and AdminProjectName are the local cloud's admin
	// (optional: empty in an env file without them).
	AdminUsername    string
	AdminPassword    string
	AdminProjectName string
	// KeystoneUWSGIConfig and KeystoneTLSPort let a test serve the same Keystone over HTTPS
	// (KeystoneTLS); empty in an env file of an older hack/openstack.sh.
	KeystoneUWSGIConfig string
	KeystoneTLSPort     string
}

// NodeSubnetCIDR is the CIDR of the node subnet that hack/openstack.sh provisions.
const NodeSubnetCIDR = "198.18.0.0/24"

// OpenStack returns the local OpenStack environment. Without it (no env file, or Keystone
// or Neutron not answering) the test ends, see Unavailable.
func OpenStack(t testing.TB) OpenStackEnv {
	t.Helper()
	path, err := OpenStackEnvFile()
	if err != nil {
		t.Fatalf("locating the OpenStack env file: %v", err)
	}
	env, err := LoadOpenStackEnv(path)
	if err != nil {
		Unavailable(t, "no local OpenStack (%v); start it with: hack/openstack.sh up", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := env.Ping(ctx); err != nil {
		Unavailable(t, "local OpenStack from %s does not answer (%v); start it with: hack/openstack.sh up", path, err)
	}
	return env
}

// OpenStackEnvFile returns $KUBE_VIP_OPENSTACK_ENV, else .local/openstack/env.sh in the repository.
func OpenStackEnvFile() (string, error) {
	if p := os.Getenv(EnvFileVariable); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".local", "openstack", "env.sh"), nil
}

// ReplaceNodePort writes newID in place of oldID into the env file's NODE_PORT_IDS, for a
// test that deleted a machine's port and made it again (a new ID), so that the next test
// of the run finds the port as hack/openstack.sh up would have recorded it.
func ReplaceNodePort(oldID, newID string) error {
	path, err := OpenStackEnvFile()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	found := false
	for i, l := range lines {
		if strings.HasPrefix(l, "export NODE_PORT_IDS=") && strings.Contains(l, oldID) {
			lines[i], found = strings.Replace(l, oldID, newID, 1), true
		}
	}
	if !found {
		return fmt.Errorf("%s: no NODE_PORT_IDS with %s", path, oldID)
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600)
}

// LoadOpenStackEnv parses an env file of hack/openstack.sh: lines `export NAME=value`,
// values optionally in double quotes. It fails if a variable is missing.
func LoadOpenStackEnv(path string) (OpenStackEnv, error) {
	vars, err := readEnvFile(path)
	if err != nil {
		return OpenStackEnv{}, err
	}
	var missing []string
	get := func(name string) string {
		v, ok := vars[name]
		if !ok || v == "" {
			missing = append(missing, name)
		}
		return v
	}
	env := OpenStackEnv{
		AuthURL:                     get("OS_AUTH_URL"),
		Region:                      get("OS_REGION_NAME"),
		DomainName:                  get("OS_DOMAIN_NAME"),
		ProjectName:                 get("OS_PROJECT_NAME"),
		ProjectID:                   get("OS_PROJECT_ID"),
		Username:                    get("OS_USERNAME"),
		Password:                    get("OS_PASSWORD"),
		ApplicationCredentialID:     get("OS_APPLICATION_CREDENTIAL_ID"),
		ApplicationCredentialSecret: get("OS_APPLICATION_CREDENTIAL_SECRET"),
		NeutronURL:                  get("NEUTRON_URL"),
		ExternalNetworkID:           get("EXTERNAL_NETWORK_ID"),
		ExternalNetworkName:         get("EXTERNAL_NETWORK_NAME"),
		NetworkID:                   get("NETWORK_ID"),
		SubnetID:                    get("SUBNET_ID"),
		RouterID:                    get("ROUTER_ID"),
		SecurityGroupID:             get("SECURITY_GROUP_ID"),
		NodePortIDs:                 strings.Fields(get("NODE_PORT_IDS")),
		NodeIPs:                     strings.Fields(get("NODE_IPS")),
		Subnet6ID:                   vars["SUBNET6_ID"],
		NodeIPs6:                    strings.Fields(vars["NODE_IPS6"]),
		ExternalSubnet6ID:           vars["EXTERNAL_SUBNET6_ID"],
		RouterGatewayIP6:            vars["ROUTER_GATEWAY_IP6"],
		AdminUsername:               vars["OS_ADMIN_USERNAME"],
		AdminPassword:               vars["OS_ADMIN_PASSWORD"],
		AdminProjectName:            vars["OS_ADMIN_PROJECT_NAME"],
		KeystoneUWSGIConfig:         vars["KEYSTONE_UWSGI_INI"],
		KeystoneTLSPort:             vars["KEYSTONE_TLS_PORT"],
	}
	if len(missing) > 0 {
		return OpenStackEnv{}, fmt.Errorf("%s lacks %s", path, strings.Join(missing, ", "))
	}
	if len(env.NodePortIDs) != len(env.NodeIPs) {
		return OpenStackEnv{}, fmt.Errorf("%s: %d node ports but %d node IPs", path, len(env.NodePortIDs), len(env.NodeIPs))
	}
	return env, nil
}

func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening env file: %w", err)
	}
	defer f.Close()
	vars := map[string]string{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: unexpected line %q", path, line)
		}
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		vars[strings.TrimSpace(name)] = value
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return vars, nil
}

// Ping checks that Keystone and Neutron answer their version documents.
func (e OpenStackEnv) Ping(ctx context.Context) error {
	for _, url := range []string{e.AuthURL, strings.TrimSuffix(e.NeutronURL, "/") + "/"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("request for %s: %w", url, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
		}
	}
	return nil
}

// Credentials selects the credential form in the cloudprovider Secret.
type Credentials int

const (
	// ApplicationCredential puts applicationCredentialID and applicationCredentialSecret in the Secret.
	ApplicationCredential Credentials = iota
	// Password puts username and password in the Secret.
	Password
)

// BootstrapOptions returns the options for Bootstrap that describe this environment.
func (e OpenStackEnv) BootstrapOptions(creds Credentials) BootstrapOptions {
	o := BootstrapOptions{
		Region:            e.Region,
		AuthURL:           e.AuthURL,
		DomainName:        e.DomainName,
		TenantName:        e.ProjectName,
		NetworkID:         e.NetworkID,
		SubnetID:          e.SubnetID,
		SubnetCIDR:        NodeSubnetCIDR,
		RouterID:          e.RouterID,
		FloatingPoolID:    e.ExternalNetworkID,
		FloatingPoolName:  e.ExternalNetworkName,
		SecurityGroupID:   e.SecurityGroupID,
		SecurityGroupName: "nodes",
	}
	switch creds {
	case Password:
		o.Username, o.Password = e.Username, e.Password
	default:
		o.ApplicationCredentialID, o.ApplicationCredentialSecret = e.ApplicationCredentialID, e.ApplicationCredentialSecret
	}
	return o
}

// Network authenticates the tests' own Neutron client as the project's member, straight
// to the local Keystone and Neutron: not through a test proxy, and not counted by the
// metrics of the controller under test.
func (e OpenStackEnv) Network(ctx context.Context) (*openstack.Network, error) {
	return e.network(ctx, &openstack.Credentials{DomainName: e.DomainName, TenantName: e.ProjectName, Username: e.Username, Password: e.Password})
}

// AdminNetwork authenticates a Neutron client as the local cloud's admin. It fails when
// the env file names no admin (an env file written before hack/openstack.sh exported it).
func (e OpenStackEnv) AdminNetwork(ctx context.Context) (*openstack.Network, error) {
	if e.AdminPassword == "" {
		return nil, fmt.Errorf("the OpenStack env file names no admin (OS_ADMIN_PASSWORD); restart it with hack/openstack.sh up")
	}
	return e.network(ctx, &openstack.Credentials{DomainName: e.DomainName, TenantName: e.AdminProjectName, Username: e.AdminUsername, Password: e.AdminPassword})
}

func (e OpenStackEnv) network(ctx context.Context, creds *openstack.Credentials) (*openstack.Network, error) {
	factory := openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)})
	n, err := factory.Network(ctx, openstack.AuthConfig{Credentials: creds, AuthURL: e.AuthURL, Region: e.Region})
	if err != nil {
		return nil, fmt.Errorf("authenticating the tests' Neutron client as %s: %w", creds.Username, err)
	}
	return n, nil
}
