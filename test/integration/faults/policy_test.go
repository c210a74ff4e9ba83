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
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*converge)
	defer cancel()
	admin, err := e.os.AdminNetwork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shared := true
	net, err := networks.Create(ctx, admin.ServiceClient(), networks.CreateOpts{Name: fmt.Sprintf("faults-shared-%d", os.Getpid()), Shared: &shared}).Extract()
	if err != nil {
		t.Fatalf("creating a shared network as admin: %v", err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), admin.ServiceClient(), net.ID).ExtractErr() })
	sub, err := subnets.Create(ctx, admin.ServiceClient(), subnets.CreateOpts{NetworkID: net.ID, CIDR: "198.19.77.0/24", IPVersion: 4, Name: net.Name}).Extract()
	if err != nil {
		t.Fatalf("creating its subnet: %v", err)
	}
	t.Cleanup(func() { _ = subnets.Delete(context.Background(), admin.ServiceClient(), sub.ID).ExtractErr() })

	// A node port of the shoot's project on the shared network.
	name := net.Name + "-cp"
	startController(t, e)
	e.setControlPlane(t, ctx, false)
	t.Cleanup(func() { e.setControlPlane(t, context.Background(), true) })
	extraNode(t, ctx, e, name, ports.CreateOpts{NetworkID: net.ID, Name: name, DeviceOwner: "compute:nova", DeviceID: name,
		FixedIPs: []ports.IP{{SubnetID: sub.ID}}})

	exp, _ := createExposure(t, ctx, e, func(exp *extensionsv1alpha1.SelfHostedShootExposure) {
		exp.Spec.ProviderConfig = &runtime.RawExtension{Raw: fmt.Appendf(nil,
			`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","networkID":%q,"subnetID":%q,"internalOnly":true}`, net.ID, sub.ID)}
	}, false)
	last := waitLastError(t, ctx, e, exp, gardencorev1beta1.ErrorInfraUnauthorized)
	t.Logf("lastError: %s", last.Description)
	if !strings.Contains(last.Description, "network's owner") {
		t.Errorf("lastError does not explain the policy: %s", last.Description)
	}
}
