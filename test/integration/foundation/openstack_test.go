// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package foundation

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestKeystoneAndNeutron authenticates with what the bootstrapped cloudprovider Secret
// holds, finds the catalog's network endpoint, and reads the provisioned objects.
func TestKeystoneAndNeutron(t *testing.T) {
	osEnv := framework.OpenStack(t)
	cp := framework.StartControlPlane(t)

	for _, tc := range []struct {
		name  string
		creds framework.Credentials
	}{
		{"application credential", framework.ApplicationCredential},
		{"password", framework.Password},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := framework.Bootstrap(ctx, cp.Client, osEnv.BootstrapOptions(tc.creds)); err != nil {
				t.Fatalf("bootstrap: %v", err)
			}
			secret := &corev1.Secret{}
			if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: framework.CloudProviderSecretName}, secret); err != nil {
				t.Fatalf("reading secret: %v", err)
			}
			opts := authOptionsFromSecret(secret.Data)
			if tc.creds == framework.ApplicationCredential && opts.ApplicationCredentialID == "" {
				t.Fatal("secret holds no application credential")
			}
			if tc.creds == framework.Password && opts.Password == "" {
				t.Fatal("secret holds no password")
			}

			start := time.Now()
			provider, err := openstack.AuthenticatedClient(ctx, opts)
			if err != nil {
				t.Fatalf("authenticating at %s: %v", opts.IdentityEndpoint, err)
			}
			t.Logf("authenticated in %v", time.Since(start).Round(time.Millisecond))
			netClient, err := openstack.NewNetworkV2(provider, gophercloud.EndpointOpts{Region: osEnv.Region})
			if err != nil {
				t.Fatalf("network endpoint from the catalog: %v", err)
			}
			if got, want := netClient.ResourceBaseURL(), osEnv.NeutronURL+"/v2.0/"; got != want {
				t.Errorf("network API from the catalog at %q, want %q", got, want)
			}

			network, err := networks.Get(ctx, netClient, osEnv.NetworkID).Extract()
			if err != nil {
				t.Fatalf("getting network %s: %v", osEnv.NetworkID, err)
			}
			if network.Name != "nodes" || network.ProjectID != osEnv.ProjectID {
				t.Errorf("network %s: name %q project %q, want nodes in %s", network.ID, network.Name, network.ProjectID, osEnv.ProjectID)
			}

			pages, err := ports.List(netClient, ports.ListOpts{NetworkID: osEnv.NetworkID, DeviceOwner: "compute:nova"}).AllPages(ctx)
			if err != nil {
				t.Fatalf("listing node ports: %v", err)
			}
			nodePorts, err := ports.ExtractPorts(pages)
			if err != nil {
				t.Fatalf("extracting ports: %v", err)
			}
			// one fixed IP per node subnet: the IPv4 one and, when provisioned, the IPv6 one
			ipOf := map[string]map[string]string{}
			for _, p := range nodePorts {
				ipOf[p.ID] = map[string]string{}
				for _, f := range p.FixedIPs {
					if _, dup := ipOf[p.ID][f.SubnetID]; dup {
						t.Errorf("node port %s has two fixed IPs on subnet %s", p.ID, f.SubnetID)
					}
					ipOf[p.ID][f.SubnetID] = f.IPAddress
				}
				want := 1
				if len(osEnv.NodeIPs6) > 0 {
					want = 2
				}
				if len(p.FixedIPs) != want {
					t.Errorf("node port %s has %d fixed IPs, want %d", p.ID, len(p.FixedIPs), want)
				}
			}
			for i, id := range osEnv.NodePortIDs {
				if got := ipOf[id][osEnv.SubnetID]; got != osEnv.NodeIPs[i] {
					t.Errorf("node port %s has IPv4 %q, want %s", id, got, osEnv.NodeIPs[i])
				}
				if len(osEnv.NodeIPs6) > i {
					if got := ipOf[id][osEnv.Subnet6ID]; got != osEnv.NodeIPs6[i] {
						t.Errorf("node port %s has IPv6 %q, want %s", id, got, osEnv.NodeIPs6[i])
					}
				}
			}
		})
	}
}

// authOptionsFromSecret maps provider-openstack's Secret keys to gophercloud's options.
func authOptionsFromSecret(data map[string][]byte) gophercloud.AuthOptions {
	opts := gophercloud.AuthOptions{
		IdentityEndpoint:            string(data["authURL"]),
		DomainName:                  string(data["domainName"]),
		ApplicationCredentialID:     string(data["applicationCredentialID"]),
		ApplicationCredentialSecret: string(data["applicationCredentialSecret"]),
	}
	if opts.ApplicationCredentialID == "" {
		opts.Username = string(data["username"])
		opts.Password = string(data["password"])
		opts.TenantName = string(data["tenantName"])
	}
	return opts
}
