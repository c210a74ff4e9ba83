// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/quotas"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
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
	if e.os.AdminPassword == "" {
		framework.Unavailable(t, "the OpenStack env file names no admin (OS_ADMIN_PASSWORD); restart it with hack/openstack.sh up")
	}
	admin, err := e.os.AdminNetwork(ctx)
	if err != nil {
		t.Fatal(err)
	}
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
			got := waitFor(t, ctx, e, exp, "lastError", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
				return x.Status.LastError != nil
			})
			le := got.Status.LastError
			t.Logf("lastError: %s %v", le.Description, le.Codes)
			if !slices.Contains(le.Codes, gardencorev1beta1.ErrorInfraQuotaExceeded) {
				t.Errorf("codes %v, want %s", le.Codes, gardencorev1beta1.ErrorInfraQuotaExceeded)
			}
			if strings.Contains(le.Description, "\n") || strings.Contains(le.Description, ".;") {
				t.Errorf("lastError is not one sentence: %q", le.Description)
			}
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
