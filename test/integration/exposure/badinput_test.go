// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/quotas"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
)

// TestQuotaExhaustedThenRaised: docs/operations.md's "quota used up" row, end to end on real
// Neutron. With the project's port or floating IP quota at 0 (set by the cloud's admin), the
// exposure reports ERR_INFRA_QUOTA_EXCEEDED in one line, without ingress and without a
// duplicate of anything; once the quota is raised again, the next reconciliation converges
// to Succeeded with exactly one VIP port and one floating IP, and deletion leaves nothing
// (create's cleanup checks that).
func TestQuotaExhaustedThenRaised(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admin := adminNetwork(t, ctx, e)
	original, err := quotas.Get(ctx, admin.ServiceClient(), e.os.ProjectID).Extract()
	if err != nil {
		t.Fatalf("reading the project's quota: %v", err)
	}
	setQuota := func(t *testing.T, opts quotas.UpdateOpts) {
		t.Helper()
		if _, err := quotas.Update(ctx, admin.ServiceClient(), e.os.ProjectID, opts).Extract(); err != nil {
			t.Fatalf("setting the project's quota: %v", err)
		}
	}
	restore := func() quotas.UpdateOpts {
		return quotas.UpdateOpts{Port: &original.Port, FloatingIP: &original.FloatingIP}
	}
	t.Cleanup(func() {
		_, _ = quotas.Update(context.Background(), admin.ServiceClient(), e.os.ProjectID, restore()).Extract()
	})
	startController(t, e)
	zero := 0

	for _, tc := range []struct {
		name     string
		exhaust  quotas.UpdateOpts
		wantPort bool // the VIP port exists while the floating IP cannot be created
	}{
		{name: "ports", exhaust: quotas.UpdateOpts{Port: &zero}},
		{name: "floating IPs", exhaust: quotas.UpdateOpts{FloatingIP: &zero}, wantPort: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			identity := useIdentity(t, ctx, e)
			// The node ports exist before the quota goes to zero (they are the machines').
			nodes := createNodes(t, ctx, e, identity, 1)
			setQuota(t, tc.exhaust)
			exp := newExposure(exposureOptions{name: identity, nodes: nodes})
			create(t, ctx, e, exp, identity)
			got := waitForError(t, ctx, e, exp, gardencorev1beta1.ErrorInfraQuotaExceeded)
			if len(got.Status.Ingress) != 0 {
				t.Errorf("ingress %v despite the error", got.Status.Ingress)
			}
			portsNow := taggedPorts(t, ctx, e, identity)
			if tc.wantPort && len(portsNow) != 1 || !tc.wantPort && len(portsNow) != 0 {
				t.Errorf("%d VIP ports while the %s quota is used up, want %v", len(portsNow), tc.name, tc.wantPort)
			}
			for _, p := range portsNow {
				if fips := floatingIPsOfPort(t, ctx, e, p.ID); len(fips) != 0 {
					t.Errorf("the VIP port has %d floating IPs although their quota is 0", len(fips))
				}
			}

			// The operator raises the quota; the next reconciliation converges.
			setQuota(t, restore())
			final := triggerReconcile(t, ctx, e, exp, nil)()
			if !succeeded(final) {
				t.Fatalf("not Succeeded after the quota was raised: %s", describe(final))
			}
			status, err := exposure.DecodeStatus(final)
			if err != nil {
				t.Fatal(err)
			}
			portsAfter := taggedPorts(t, ctx, e, identity)
			if len(portsAfter) != 1 || portsAfter[0].ID != status.PortID {
				t.Fatalf("after the quota was raised: %d VIP ports, want exactly the recorded one %s", len(portsAfter), status.PortID)
			}
			if tc.wantPort && portsAfter[0].ID != portsNow[0].ID {
				t.Errorf("the VIP port made before the quota error was replaced (%s, then %s)", portsNow[0].ID, portsAfter[0].ID)
			}
			if fips := floatingIPsOfPort(t, ctx, e, status.PortID); len(fips) != 1 || final.Status.Ingress[0].IP != fips[0].FloatingIP {
				t.Errorf("floating IPs %v, ingress %v: want one, reported as ingress", fips, final.Status.Ingress)
			}
			checkPairs(t, ctx, e, nodes, status.VIPAddress, true)
		})
	}
}

// TestKeystoneCertificateThatDoesNotVerify: docs/operations.md's "certificate" row. The
// credentials Secret points authURL at a Keystone whose TLS certificate no CA in the
// Secret signs: ERR_CONFIGURATION_PROBLEM in one line naming the certificate, nothing
// created; once the operator puts the right CA into the Secret (caCert), the exposure
// converges.
func TestKeystoneCertificateThatDoesNotVerify(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A TLS front of the real Keystone with a certificate of its own test CA.
	keystone, err := url.Parse(e.os.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(&url.URL{Scheme: keystone.Scheme, Host: keystone.Host}))
	defer front.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})

	startController(t, e)
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 1)
	secretName := passwordSecret(t, ctx, e, identity, e.os.Password)
	setSecretKeys(t, ctx, e, secretName, map[string]string{"authURL": front.URL + keystone.Path})
	exp := newExposure(exposureOptions{name: identity, nodes: nodes, secretName: secretName})
	create(t, ctx, e, exp, identity)
	waitForUntrustedKeystone(t, ctx, e, exp, identity)

	// The operator adds the CA that signed Keystone's certificate.
	setSecretKeys(t, ctx, e, secretName, map[string]string{"caCert": string(caPEM)})
	final := triggerReconcile(t, ctx, e, exp, nil)()
	if len(final.Status.Ingress) != 1 || len(taggedPorts(t, ctx, e, identity)) != 1 {
		t.Errorf("after the CA was added: ingress %v, want one floating IP and one VIP port", final.Status.Ingress)
	}
}

// waitForUntrustedKeystone waits for the exposure's lastError about a Keystone certificate
// that does not verify: ERR_CONFIGURATION_PROBLEM naming the certificate, nothing created.
func waitForUntrustedKeystone(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, identity string) {
	t.Helper()
	got := waitForError(t, ctx, e, exp, gardencorev1beta1.ErrorConfigurationProblem)
	if le := got.Status.LastError; !strings.Contains(le.Description, "certificate") {
		t.Errorf("lastError %q does not name the certificate", le.Description)
	}
	if p := taggedPorts(t, ctx, e, identity); len(p) != 0 {
		t.Errorf("%d VIP ports created although Keystone could not be trusted", len(p))
	}
}

// setSecretKeys sets keys of the credentials Secret of the exposure name.
func setSecretKeys(t *testing.T, ctx context.Context, e *sharedEnv, name string, keys map[string]string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := e.cp.Client.Get(ctx, clientKey(name), s); err != nil {
		t.Fatal(err)
	}
	for k, v := range keys {
		s.Data[k] = []byte(v)
	}
	if err := e.cp.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// TestExternalNetworkWithoutFreeAddresses: docs/operations.md's "ExternalIpAddressExhausted"
// row. The floating pool's subnet has no free address left (its allocation pool shrunk by
// the admin to the router's own gateway address): ERR_INFRA_RESOURCES_DEPLETED in one sentence,
// the VIP port kept and no floating IP; once addresses are free again, the exposure
// converges.
func TestExternalNetworkWithoutFreeAddresses(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	restore := exhaustFloatingPool(t, ctx, e)

	startController(t, e)
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 1)
	exp := newExposure(exposureOptions{name: identity, nodes: nodes})
	create(t, ctx, e, exp, identity)
	waitForError(t, ctx, e, exp, gardencorev1beta1.ErrorInfraResourcesDepleted)
	portsNow := taggedPorts(t, ctx, e, identity)
	if len(portsNow) != 1 {
		t.Fatalf("%d VIP ports while the pool is exhausted, want the one", len(portsNow))
	}
	if fips := floatingIPsOfPort(t, ctx, e, portsNow[0].ID); len(fips) != 0 {
		t.Errorf("floating IPs %v from an exhausted pool", fips)
	}

	restore()
	final := triggerReconcile(t, ctx, e, exp, nil)()
	if len(final.Status.Ingress) != 1 {
		t.Errorf("after addresses were freed: ingress %v, want the floating IP", final.Status.Ingress)
	}
	if after := taggedPorts(t, ctx, e, identity); len(after) != 1 || after[0].ID != portsNow[0].ID {
		t.Errorf("the VIP port was not kept across the error: %d ports", len(after))
	}
}

// TestNodePortAtThePairLimit: a node port that already carries as many allowed address
// pairs as Neutron allows (max_allowed_address_pair, 10 by default) cannot take the VIP's.
// The status says so in one sentence with ERR_CONFIGURATION_PROBLEM and names the limit,
// not the providerConfig; once the user frees a pair, the next reconciliation succeeds.
func TestNodePortAtThePairLimit(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)
	setPairs(t, ctx, e, nodes[0].port, 10)
	startController(t, e)

	exp := newExposure(exposureOptions{name: id, nodes: nodes})
	create(t, ctx, e, exp, id)
	got := waitFor(t, ctx, e, exp, "lastError", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool { return x.Status.LastError != nil })
	le := got.Status.LastError
	t.Logf("lastError: %s %v", le.Description, le.Codes)
	if !slices.Contains(le.Codes, gardencorev1beta1.ErrorConfigurationProblem) || !strings.Contains(le.Description, "max_allowed_address_pair") {
		t.Errorf("lastError %q %v, want %s naming max_allowed_address_pair", le.Description, le.Codes, gardencorev1beta1.ErrorConfigurationProblem)
	}
	oneSentence(t, le.Description)

	setPairs(t, ctx, e, nodes[0].port, 9)
	triggerReconcile(t, ctx, e, exp, nil)()
}

// TestTwoProblemsAtOnceShowEveryCode: the floating pool has no free address and the node
// port is at the pair limit, so the floating IP and the pairs, made side by side, fail
// together. lastError carries both codes, so that Gardener sees the configuration problem
// (which stops its retries) behind the depleted pool (which does not).
func TestTwoProblemsAtOnceShowEveryCode(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exhaustFloatingPool(t, ctx, e)
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)
	setPairs(t, ctx, e, nodes[0].port, 10)
	startController(t, e)

	exp := newExposure(exposureOptions{name: id, nodes: nodes})
	create(t, ctx, e, exp, id)
	want := []gardencorev1beta1.ErrorCode{gardencorev1beta1.ErrorInfraResourcesDepleted, gardencorev1beta1.ErrorConfigurationProblem}
	var le *gardencorev1beta1.LastError
	waitFor(t, ctx, e, exp, "lastError with both codes", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		le = x.Status.LastError
		return le != nil && strings.Contains(le.Description, "max_allowed_address_pair") && strings.Contains(le.Description, "free addresses")
	})
	t.Logf("lastError: %s %v", le.Description, le.Codes)
	for _, code := range want {
		if !slices.Contains(le.Codes, code) {
			t.Errorf("lastError codes %v, want %s among them", le.Codes, code)
		}
	}
}

// exhaustFloatingPool shrinks the floating pool's IPv4 subnet to the router's own gateway
// address, so that no floating IP can be allocated, until the returned restore (also the
// test's cleanup) gives the subnet its allocation pools back.
func exhaustFloatingPool(t *testing.T, ctx context.Context, e *sharedEnv) (restore func()) {
	t.Helper()
	admin := adminNetwork(t, ctx, e)
	// floating IPs come from the IPv4 subnet (the external network's IPv6 subnet is routed)
	pages, err := subnets.List(admin.ServiceClient(), subnets.ListOpts{NetworkID: e.os.ExternalNetworkID, IPVersion: 4}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	external, err := subnets.ExtractSubnets(pages)
	if err != nil || len(external) != 1 {
		t.Fatalf("want the one IPv4 subnet of the floating pool: %v, %d", err, len(external))
	}
	router, err := routers.Get(ctx, admin.ServiceClient(), e.os.RouterID).Extract()
	if err != nil {
		t.Fatalf("reading the router's gateway: %v", err)
	}
	gateway := ""
	for _, ip := range router.GatewayInfo.ExternalFixedIPs {
		if ip.SubnetID == external[0].ID {
			gateway = ip.IPAddress
		}
	}
	if gateway == "" {
		t.Fatalf("the router has no gateway address on %s", external[0].ID)
	}
	setPools := func(pools []subnets.AllocationPool) error {
		_, err := subnets.Update(context.Background(), admin.ServiceClient(), external[0].ID, subnets.UpdateOpts{AllocationPools: pools}).Extract()
		return err
	}
	if err := setPools([]subnets.AllocationPool{{Start: gateway, End: gateway}}); err != nil {
		t.Fatalf("shrinking the floating pool: %v", err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := setPools(external[0].AllocationPools); err != nil {
				t.Errorf("restoring the floating pool's allocation pools: %v", err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

// setPairs gives the node port n allowed address pairs: the node's own, then made-up ones.
func setPairs(t *testing.T, ctx context.Context, e *sharedEnv, port string, n int) {
	t.Helper()
	var pairs []ports.AddressPair
	for _, ip := range ownPairs {
		pairs = append(pairs, ports.AddressPair{IPAddress: ip})
	}
	for i := range n - len(ownPairs) {
		pairs = append(pairs, ports.AddressPair{IPAddress: fmt.Sprintf("10.251.0.%d/32", i+1)})
	}
	if _, err := ports.Update(ctx, e.neutron.ServiceClient(), port, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract(); err != nil {
		t.Fatalf("giving the node port %d pairs: %v", n, err)
	}
}
