// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package faults_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"k8s.io/apimachinery/pkg/runtime"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
)

// TestNeutronPolicySharedNetworkPairs: Neutron lets only the network's owner or an admin
// set allowed address pairs. On a shared network of another project, the update is refused
// with 403; the exposure reports that with ERR_INFRA_UNAUTHORIZED and a message that names
// network ownership, and its deletion leaves nothing behind.
func TestNeutronPolicySharedNetworkPairs(t *testing.T) {
	last := refusedOnSharedNetwork(t, "pairs", "")
	if !strings.Contains(last.Description, "network's owner") {
		t.Errorf("lastError does not explain the policy: %s", last.Description)
	}
}

// TestNeutronPolicySharedNetworkFixedIP: Neutron lets only the network's owner or an admin
// create a port with an address of its choice. A vipAddress on a shared network of another
// project is refused with 403 before any pair is set; the exposure reports that with
// ERR_INFRA_UNAUTHORIZED and a message that names the address and network ownership, not
// the project role its user already has.
func TestNeutronPolicySharedNetworkFixedIP(t *testing.T) {
	last := refusedOnSharedNetwork(t, "fixedip", `"vipAddress":"198.19.77.50",`)
	if !strings.Contains(last.Description, "network's owner") || !strings.Contains(last.Description, "vipAddress") {
		t.Errorf("lastError does not explain the policy on a chosen address: %s", last.Description)
	}
	if strings.Contains(last.Description, "member role") {
		t.Errorf("lastError asks for a role that would not help: %s", last.Description)
	}
}

// refusedOnSharedNetwork creates an internal-only exposure on a shared network of another
// project (sharedNetworkWithNode; fields are more providerConfig fields, each ending in a
// comma) and returns its lastError once it carries ERR_INFRA_UNAUTHORIZED.
func refusedOnSharedNetwork(t *testing.T, name, fields string) *gardencorev1beta1.LastError {
	t.Helper()
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*converge)
	defer cancel()
	net, sub := sharedNetworkWithNode(t, ctx, e, name)
	exp, _ := createExposure(t, ctx, e, func(exp *extensionsv1alpha1.SelfHostedShootExposure) {
		exp.Spec.ProviderConfig = &runtime.RawExtension{Raw: fmt.Appendf(nil,
			`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","networkID":%q,"subnetID":%q,%s"internalOnly":true}`, net.ID, sub.ID, fields)}
	}, false)
	last := waitLastError(t, ctx, e, exp, gardencorev1beta1.ErrorInfraUnauthorized)
	t.Logf("lastError: %s", last.Description)
	return last
}

// sharedNetworkWithNode creates, as admin, a shared network of another project with a
// subnet, and a control-plane node port of the shoot's project on it (the only one: the
// test's controller sees no other control-plane node until the test ends). name tells the
// tests' networks apart.
func sharedNetworkWithNode(t *testing.T, ctx context.Context, e *sharedEnv, name string) (*networks.Network, *subnets.Subnet) {
	t.Helper()
	admin, err := e.os.AdminNetwork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shared := true
	net, err := networks.Create(ctx, admin.ServiceClient(), networks.CreateOpts{Name: fmt.Sprintf("faults-shared-%s-%d", name, os.Getpid()), Shared: &shared}).Extract()
	if err != nil {
		t.Fatalf("creating a shared network as admin: %v", err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), admin.ServiceClient(), net.ID).ExtractErr() })
	sub, err := subnets.Create(ctx, admin.ServiceClient(), subnets.CreateOpts{NetworkID: net.ID, CIDR: "198.19.77.0/24", IPVersion: 4, Name: net.Name}).Extract()
	if err != nil {
		t.Fatalf("creating its subnet: %v", err)
	}
	t.Cleanup(func() { _ = subnets.Delete(context.Background(), admin.ServiceClient(), sub.ID).ExtractErr() })

	node := net.Name + "-cp"
	startController(t, e)
	e.setControlPlane(t, ctx, false)
	t.Cleanup(func() { e.setControlPlane(t, context.Background(), true) })
	extraNode(t, ctx, e, node, ports.CreateOpts{NetworkID: net.ID, Name: node, DeviceOwner: "compute:nova", DeviceID: node,
		FixedIPs: []ports.IP{{SubnetID: sub.ID}}})
	return net, sub
}
