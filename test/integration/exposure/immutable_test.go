// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
)

// secondSubnet creates another subnet in the nodes' network, deleted at the end.
func secondSubnet(t *testing.T, ctx context.Context, e *sharedEnv) string {
	t.Helper()
	cidr := fmt.Sprintf("198.18.%d.0/24", 100+rand.IntN(100))
	s, err := subnets.Create(ctx, e.neutron.ServiceClient(), subnets.CreateOpts{
		NetworkID: e.os.NetworkID, Name: "second-" + cidr, CIDR: cidr, IPVersion: 4, GatewayIP: new(string),
	}).Extract()
	if err != nil {
		t.Fatalf("creating a second subnet in the nodes' network: %v", err)
	}
	t.Cleanup(func() { _ = subnets.Delete(context.Background(), e.neutron.ServiceClient(), s.ID).ExtractErr() })
	return s.ID
}

// TestSubnetChangeIsRefusedAndTheVIPKept: moving the exposure to another subnet of the
// same network would move the VIP. It is refused before any OpenStack call with a
// configuration error that names subnetID; the recorded VIP stays, and restoring the
// subnet brings the exposure back on the same addresses.
func TestSubnetChangeIsRefusedAndTheVIPKept(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exp, nodes, before, identity := frontDoor(t, ctx, e, 3)
	other := secondSubnet(t, ctx, e)

	patchConfig(t, ctx, e, exp, fmt.Sprintf(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","subnetID":%q}`, other))
	refused := waitForError(t, ctx, e, exp, gardencorev1beta1.ErrorConfigurationProblem)
	if le := refused.Status.LastError.Description; !strings.Contains(le, "subnetID") {
		t.Errorf("lastError %q does not name subnetID", le)
	}
	// The next attempts must not erase the VIP either.
	time.Sleep(2 * time.Second)
	got := waitFor(t, ctx, e, exp, "the status", func(*extensionsv1alpha1.SelfHostedShootExposure) bool { return true })
	if st := providerStatus(t, got); st.VIPAddress != before.VIPAddress || st.SubnetID != before.SubnetID || st.PortID != before.PortID {
		t.Fatalf("after the refused subnet change the status has VIP %q subnet %q port %q, want %s %s %s",
			st.VIPAddress, st.SubnetID, st.PortID, before.VIPAddress, before.SubnetID, before.PortID)
	}
	if len(got.Status.Ingress) == 0 || got.Status.Ingress[0].IP != before.FloatingIPAddress {
		t.Errorf("ingress %v while refusing, want %s", got.Status.Ingress, before.FloatingIPAddress)
	}
	checkPairs(t, ctx, e, nodes, before.VIPAddress, true)

	// Restoring the subnet (the Infrastructure's default) heals it on the same addresses.
	patchConfig(t, ctx, e, exp, `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig"}`)
	waitFor(t, ctx, e, exp, "success after restoring the subnet", succeeded)
	repair(t, ctx, e, exp, nodes, before, identity)
}
