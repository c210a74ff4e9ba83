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

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// TestIPv6InputsRefusedBeforeAnyPort: on the dual-stack local Neutron, an IPv4 shoot's
// provider config that would give an IPv6 VIP (the node network's IPv6 subnet, an IPv6
// vipAddress), an IPv6 floating IP and subnetIDs (not built) are refused with ERR_CONFIGURATION_PROBLEM in one sentence, and
// Neutron has no port of the exposure, nor one holding the asked VIP. Before, the IPv6 subnet
// got a VIP port and then failed at the floating IP.
func TestIPv6InputsRefusedBeforeAnyPort(t *testing.T) {
	e := ipv6Env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	startController(t, e)
	const vip6 = "2001:2:0:10::c8"
	for _, tc := range []struct {
		name, config, want string
	}{
		{"IPv6 subnet", fmt.Sprintf(`"subnetID":%q`, e.os.Subnet6ID), "is IPv6, but the shoot's ipFamilies are [IPv4]"},
		{"IPv6 subnet and VIP", fmt.Sprintf(`"subnetID":%q,"vipAddress":%q`, e.os.Subnet6ID, vip6), "is IPv6, but the shoot's ipFamilies are [IPv4]"},
		{"IPv6 floating IP", `"floatingIP":"2001:2:0:1::5"`, "Neutron has no IPv6 floating IPs"},
		{"subnetIDs", fmt.Sprintf(`"subnetIDs":[%q,%q]`, e.os.SubnetID, e.os.Subnet6ID), "subnetIDs is not supported by this version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			identity := useIdentity(t, ctx, e)
			nodes := createNodes(t, ctx, e, identity, 1)
			exp := newExposure(exposureOptions{name: identity, nodes: nodes, providerConfig: fmt.Sprintf(`{%s,%s}`, exposureConfigHead, tc.config)})
			create(t, ctx, e, exp, identity)
			got := waitForError(t, ctx, e, exp, gardencorev1beta1.ErrorConfigurationProblem)
			if d := got.Status.LastError.Description; !strings.Contains(d, tc.want) || strings.Count(strings.TrimSuffix(d, "."), ". ") > 0 {
				t.Errorf("lastError %q, want one sentence with %q", d, tc.want)
			}
			if p := taggedPorts(t, ctx, e, identity); len(p) != 0 {
				t.Errorf("%d VIP ports created although the config was refused", len(p))
			}
			holders, err := e.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: e.os.NetworkID, FixedIPs: []string{vip6}})
			if err != nil {
				t.Fatal(err)
			}
			if len(holders) != 0 {
				t.Errorf("a port holds %s: %s", vip6, holders[0].ID)
			}
		})
	}
}
