// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"k8s.io/apimachinery/pkg/util/rand"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
)

// secondExternalNetwork creates, as the cloud's admin, another external network (floating
// pool) with a subnet, and removes it when the test ends.
func secondExternalNetwork(t *testing.T, ctx context.Context, e *sharedEnv) (id, name string) {
	t.Helper()
	admin := adminNetwork(t, ctx, e)
	name = "pool-b-" + rand.String(5)
	up := true
	net, err := networks.Create(ctx, admin.ServiceClient(), external.CreateOptsExt{
		CreateOptsBuilder: networks.CreateOpts{Name: name, AdminStateUp: &up},
		External:          &up,
	}).Extract()
	if err != nil {
		t.Fatalf("creating external network %s: %v", name, err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), admin.ServiceClient(), net.ID).ExtractErr() })
	dhcp := false
	if _, err := subnets.Create(ctx, admin.ServiceClient(), subnets.CreateOpts{
		NetworkID: net.ID, Name: name, IPVersion: 4, CIDR: "198.19.64.0/24", EnableDHCP: &dhcp,
	}).Extract(); err != nil {
		t.Fatalf("creating the subnet of %s: %v", name, err)
	}
	return net.ID, name
}

// TestFloatingPoolNameChoosesAmongTwoExternalNetworks: with two external networks in the
// cloud, floatingPoolName decides where the floating IP comes from (the name used to be
// dropped from the Neutron query, so two external networks made every pool name
// "ambiguous", and one would have won whatever the name).
func TestFloatingPoolNameChoosesAmongTwoExternalNetworks(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	otherID, otherName := secondExternalNetwork(t, ctx, e)

	t.Run("the named pool", func(t *testing.T) {
		identity := useIdentity(t, ctx, e)
		nodes := createNodes(t, ctx, e, identity, 1)
		startController(t, e)
		exp := newExposure(exposureOptions{name: identity, nodes: nodes, providerConfig: fmt.Sprintf(
			`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingPoolName":%q}`, e.os.ExternalNetworkName)})
		create(t, ctx, e, exp, identity)
		got := waitFor(t, ctx, e, exp, "ingress", succeeded)
		status, err := exposure.DecodeStatus(got)
		if err != nil {
			t.Fatal(err)
		}
		fip, err := e.neutron.GetFloatingIP(ctx, status.FloatingIPID)
		if err != nil {
			t.Fatal(err)
		}
		if fip.FloatingNetworkID != e.os.ExternalNetworkID {
			t.Errorf("floating IP %s on network %s, want the pool %q (%s), not %s", fip.FloatingIP, fip.FloatingNetworkID, e.os.ExternalNetworkName, e.os.ExternalNetworkID, otherID)
		}
	})

	t.Run("the other pool, which the node subnet's router does not reach", func(t *testing.T) {
		identity := useIdentity(t, ctx, e)
		nodes := createNodes(t, ctx, e, identity, 1)
		startController(t, e)
		exp := newExposure(exposureOptions{name: identity, nodes: nodes, providerConfig: fmt.Sprintf(
			`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingPoolName":%q}`, otherName)})
		create(t, ctx, e, exp, identity)
		got := waitFor(t, ctx, e, exp, "lastError", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
			return x.Status.LastError != nil
		})
		msg := got.Status.LastError.Description
		t.Logf("lastError: %s", msg)
		if !strings.Contains(msg, otherID) {
			t.Errorf("lastError %q does not name the chosen pool's network %s", msg, otherID)
		}
		if len(got.Status.Ingress) != 0 {
			t.Errorf("ingress %v without a floating IP", got.Status.Ingress)
		}
		t.Logf("codes: %v", got.Status.LastError.Codes)
		oneSentence(t, msg)
		// The operator names the pool the router reaches; no floating IP was ever made,
		// so the exposure may still choose its pool, and converges.
		fixed := triggerReconcile(t, ctx, e, exp, func(x *extensionsv1alpha1.SelfHostedShootExposure) {
			x.Spec.ProviderConfig = rawConfig(fmt.Sprintf(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingPoolName":%q}`, e.os.ExternalNetworkName))
		})()
		if len(fixed.Status.Ingress) != 1 || len(taggedPorts(t, ctx, e, identity)) != 1 {
			t.Errorf("after the pool was fixed: ingress %v, want one floating IP and one VIP port", fixed.Status.Ingress)
		}
	})
}
