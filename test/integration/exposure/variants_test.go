// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestAdoptFloatingIP: a pre-allocated floating IP becomes the ingress and survives the
// deletion, disassociated.
func TestAdoptFloatingIP(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 1)
	fip, err := floatingips.Create(ctx, e.neutron.ServiceClient(), floatingips.CreateOpts{FloatingNetworkID: e.os.ExternalNetworkID, Description: identity}).Extract()
	if err != nil {
		t.Fatalf("pre-allocating floating IP: %v", err)
	}
	t.Cleanup(func() { _ = e.neutron.DeleteFloatingIP(context.Background(), fip.ID) })
	startController(t, e)

	exp := newExposure(exposureOptions{name: identity, nodes: nodes,
		providerConfig: fmt.Sprintf(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingIP":%q}`, fip.FloatingIP)})
	create(t, ctx, e, exp, identity)
	got := waitFor(t, ctx, e, exp, "ingress", succeeded)
	if got.Status.Ingress[0].IP != fip.FloatingIP {
		t.Fatalf("ingress %v, want the adopted %s", got.Status.Ingress, fip.FloatingIP)
	}
	status, _ := exposure.DecodeStatus(got)
	if !status.FloatingIPAdopted || status.FloatingIPID != fip.ID {
		t.Errorf("status does not record the adoption: %+v", status)
	}
	if list := floatingIPsOfPort(t, ctx, e, status.PortID); len(list) != 1 || list[0].ID != fip.ID {
		t.Errorf("VIP port has floating IPs %v, want only %s", list, fip.ID)
	}

	deleteKeepsFloatingIP(t, ctx, e, exp, fip.ID)
}

// deleteKeepsFloatingIP deletes the exposure, waits until it is gone, and checks that the
// user's floating IP still exists and is no longer associated.
func deleteKeepsFloatingIP(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, fipID string) {
	t.Helper()
	if err := e.cp.Client.Delete(ctx, exp); err != nil {
		t.Fatal(err)
	}
	if err := waitGone(ctx, e, exp); err != nil {
		t.Fatal(err)
	}
	after, err := floatingips.Get(ctx, e.neutron.ServiceClient(), fipID).Extract()
	if err != nil {
		t.Fatalf("the user's floating IP was deleted: %v", err)
	}
	if after.PortID != "" {
		t.Errorf("the user's floating IP is still associated with %s", after.PortID)
	}
}

// TestInternalOnlyWithPasswordAndFixedVIP: internalOnly gives the VIP as ingress and no
// floating IP; the fixed vipAddress is used; the Secret holds username and password.
func TestInternalOnlyWithPasswordAndFixedVIP(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 2)
	secret := passwordSecret(t, ctx, e, identity, e.os.Password)
	vip := freeAddress(t, ctx, e)
	cut := startController(t, e)

	exp := newExposure(exposureOptions{name: identity, nodes: nodes, secretName: secret,
		providerConfig: fmt.Sprintf(`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","internalOnly":true,"vipAddress":%q}`, vip)})
	create(t, ctx, e, exp, identity)
	got := waitFor(t, ctx, e, exp, "ingress", succeeded)
	if got.Status.Ingress[0].IP != vip {
		t.Fatalf("ingress %v, want the VIP %s", got.Status.Ingress, vip)
	}
	status, _ := exposure.DecodeStatus(got)
	if status.VIPAddress != vip || status.FloatingIPID != "" {
		t.Errorf("status %+v, want VIP %s and no floating IP", status, vip)
	}
	if list := floatingIPsOfPort(t, ctx, e, status.PortID); len(list) != 0 {
		t.Errorf("internal-only VIP port has floating IPs %v", list)
	}
	if n := cut.metrics.Snapshot()["network POST floatingips"]; n != 0 {
		t.Errorf("%d floating IP creates for an internal-only exposure", n)
	}
	checkPairs(t, ctx, e, nodes, vip, true)
}

// badProviderConfigs are the bad exposure providerConfigs of TestErrorsInStatus, which
// TestValidateMatchesStatus also gives to the validate command. Offline ones are found
// without Neutron.
var badProviderConfigs = []struct {
	name, providerConfig, mention string
	offline                       bool
}{
	{name: "vip outside subnet", providerConfig: `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","vipAddress":"198.19.7.7"}`, mention: "vipAddress", offline: true},
	{name: "unknown field", providerConfig: `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","vipAdress":"198.18.0.7"}`, mention: "vipAdress", offline: true},
	// floatingPoolName was dropped from the Neutron query, so any single external
	// network was taken: a pool that does not exist must be reported.
	{name: "unknown floating pool", providerConfig: `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","floatingPoolName":"no-such-pool"}`, mention: "no-such-pool"},
	{name: "missing network", providerConfig: `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","networkID":"00000000-0000-0000-0000-000000000000"}`, mention: "network 00000000-0000-0000-0000-000000000000 does not exist"},
	{name: "missing subnet", providerConfig: `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","subnetID":"00000000-0000-0000-0000-000000000000"}`, mention: "subnet"},
	{name: "agent timings that allow two holders", providerConfig: `{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","agent":{"renewDeadline":"1600ms"}}`, mention: "agent.", offline: true},
}

// TestErrorsInStatus: each bad input ends up in lastError as one line with a Gardener code
// and a hint, never with a secret, before any side effect for a configuration problem; and
// once the operator fixes the input, the next reconciliation converges to Succeeded.
func TestErrorsInStatus(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startController(t, e)

	type testCase struct {
		name           string
		secretPassword string // a password Secret with this password instead of cloudprovider
		bothForms      bool
		providerConfig string
		code           gardencorev1beta1.ErrorCode
		mention        string
		port           int32 // spec.port instead of 6443
	}
	cases := []testCase{
		{name: "wrong password", secretPassword: "wrong-secret-Zq81", code: gardencorev1beta1.ErrorInfraUnauthenticated, mention: "credentials"},
		{name: "both credential forms", secretPassword: "both-secret-Zq82", bothForms: true, code: gardencorev1beta1.ErrorConfigurationProblem, mention: "not both"},
		{name: "port out of range", port: 70000, code: gardencorev1beta1.ErrorConfigurationProblem, mention: "70000"},
	}
	for _, bad := range badProviderConfigs {
		cases = append(cases, testCase{name: bad.name, providerConfig: bad.providerConfig, code: gardencorev1beta1.ErrorConfigurationProblem, mention: bad.mention})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			identity := useIdentity(t, ctx, e)
			secretName := ""
			if tc.secretPassword != "" {
				secretName = passwordSecret(t, ctx, e, identity, tc.secretPassword)
				if tc.bothForms {
					addAppCredential(t, ctx, e, secretName)
				}
			}
			exp := newExposure(exposureOptions{name: identity, secretName: secretName, providerConfig: tc.providerConfig})
			if tc.port != 0 {
				exp.Spec.Port = tc.port
			}
			create(t, ctx, e, exp, identity)
			if secretName != "" {
				// Deletion needs working credentials (it must look for tagged resources):
				// repair them first, as an operator would (cleanups run last-in first-out).
				t.Cleanup(func() { repairSecret(t, e, secretName) })
			}
			got := waitFor(t, ctx, e, exp, "lastError", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
				return x.Status.LastError != nil
			})
			le := got.Status.LastError
			t.Logf("lastError: %s %v", le.Description, le.Codes)
			if !slices.Contains(le.Codes, tc.code) {
				t.Errorf("codes %v, want %s", le.Codes, tc.code)
			}
			if !strings.Contains(le.Description, tc.mention) {
				t.Errorf("description %q does not mention %q", le.Description, tc.mention)
			}
			for _, secret := range []string{tc.secretPassword, e.os.Password, e.os.ApplicationCredentialSecret} {
				if secret != "" && (strings.Contains(le.Description, secret) || strings.Contains(got.Status.LastOperation.Description, secret) || (got.Status.ProviderStatus != nil && strings.Contains(string(got.Status.ProviderStatus.Raw), secret))) {
					t.Errorf("status leaks a secret")
				}
			}
			oneSentence(t, le.Description)
			if len(got.Status.Ingress) != 0 {
				t.Errorf("ingress %v despite the error", got.Status.Ingress)
			}
			// A configuration error is found before the first side effect.
			if slices.Contains(le.Codes, gardencorev1beta1.ErrorConfigurationProblem) {
				if p := taggedPorts(t, ctx, e, identity); len(p) != 0 {
					t.Errorf("a VIP port was created before the configuration error: %v", p[0].ID)
				}
			}

			// The operator fixes the input; the next reconciliation converges.
			if secretName != "" {
				repairSecret(t, e, secretName)
			}
			fixed := triggerReconcile(t, ctx, e, exp, func(x *extensionsv1alpha1.SelfHostedShootExposure) {
				x.Spec.ProviderConfig = nil
				x.Spec.Port = 6443
			})()
			if x := taggedPorts(t, ctx, e, identity); len(fixed.Status.Ingress) != 1 || len(x) != 1 {
				t.Errorf("after the fix: ingress %v and %d VIP ports, want one of each", fixed.Status.Ingress, len(x))
			}
		})
	}
}

func passwordSecret(t *testing.T, ctx context.Context, e *sharedEnv, identity, password string) string {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: identity + "-password", Namespace: ns},
		Data: map[string][]byte{
			"domainName": []byte(e.os.DomainName), "tenantName": []byte(e.os.ProjectName),
			"username": []byte(e.os.Username), "password": []byte(password),
		},
	}
	if err := e.cp.Client.Create(ctx, s); err != nil {
		t.Fatalf("creating Secret: %v", err)
	}
	t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), s) })
	return s.Name
}

func addAppCredential(t *testing.T, ctx context.Context, e *sharedEnv, name string) {
	t.Helper()
	setSecretKeys(t, ctx, e, name, map[string]string{
		"applicationCredentialID":     e.os.ApplicationCredentialID,
		"applicationCredentialSecret": e.os.ApplicationCredentialSecret,
	})
}

// freeAddress returns an address of the node subnet outside its allocation pool that no
// port uses.
func freeAddress(t *testing.T, ctx context.Context, e *sharedEnv) string {
	t.Helper()
	prefix := netip.MustParsePrefix(framework.NodeSubnetCIDR)
	for attempt := 0; attempt < 50; attempt++ {
		b := prefix.Addr().As4()
		b[3] = byte(30 + time.Now().UnixNano()%60) // .30 - .89
		addr := netip.AddrFrom4(b).String()
		list, err := e.neutron.ListPorts(ctx, portFilterIP(e.os.NetworkID, addr))
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 0 {
			return addr
		}
	}
	t.Fatal("no free address in the node subnet")
	return ""
}

func repairSecret(t *testing.T, e *sharedEnv, name string) {
	s := &corev1.Secret{}
	if err := e.cp.Client.Get(context.Background(), clientKey(name), s); err != nil {
		t.Errorf("reading Secret: %v", err)
		return
	}
	s.Data["password"] = []byte(e.os.Password)
	delete(s.Data, "applicationCredentialID")
	delete(s.Data, "applicationCredentialSecret")
	if err := e.cp.Client.Update(context.Background(), s); err != nil {
		t.Errorf("repairing Secret: %v", err)
	}
}
