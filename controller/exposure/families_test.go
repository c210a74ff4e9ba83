// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	extensionsv1alpha1helper "github.com/gardener/gardener/pkg/api/extensions/v1alpha1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
)

var (
	v4   = gardencorev1beta1.IPFamilyIPv4
	v6   = gardencorev1beta1.IPFamilyIPv6
	cidr = map[string]string{"s4": "198.18.0.0/24", "s6": "2001:2:0:10::/64", "s6b": "2001:2:0:11::/64"}
)

func dualInfra() *InfrastructureStatus {
	infra := &InfrastructureStatus{}
	infra.Networks.Subnets = []InfrastructureSubnet{
		{Purpose: PurposeNodes, ID: "s4", CIDR: "198.18.0.0/24"},
		{Purpose: PurposeNodesIPv6, ID: "s6", CIDR: "2001:2:0:10::/64"},
	}
	return infra
}

func TestResolveFamilies(t *testing.T) {
	type want struct {
		subnets []string // "family=subnet[@vip]" in order
		err     string   // a substring of the error, if any
	}
	for _, tc := range []struct {
		name     string
		cfg      v1alpha1.ExposureConfig
		infra    *InfrastructureStatus
		families []gardencorev1beta1.IPFamily
		want     want
	}{
		{name: "default IPv4 from the Infrastructure", infra: dualInfra(), want: want{subnets: []string{"IPv4=s4"}}},
		{name: "dual-stack from the Infrastructure, shoot order", infra: dualInfra(), families: []gardencorev1beta1.IPFamily{v6, v4}, want: want{subnets: []string{"IPv6=s6", "IPv4=s4"}}},
		{name: "IPv6-only from the Infrastructure", infra: dualInfra(), families: []gardencorev1beta1.IPFamily{v6}, want: want{subnets: []string{"IPv6=s6"}}},
		{name: "subnetIDs override the Infrastructure", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{SubnetIDs: []string{"s6b"}}, families: []gardencorev1beta1.IPFamily{v4, v6}, want: want{subnets: []string{"IPv4=s4", "IPv6=s6b"}}},
		{name: "pinned IPv6 VIP", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{VIPAddress: ptr.To("2001:2:0:10::c8")}, families: []gardencorev1beta1.IPFamily{v4, v6}, want: want{subnets: []string{"IPv4=s4", "IPv6=s6@2001:2:0:10::c8"}}},
		{name: "no IPv6 subnet", infra: func() *InfrastructureStatus { i := dualInfra(); i.Networks.Subnets = i.Networks.Subnets[:1]; return i }(), families: []gardencorev1beta1.IPFamily{v4, v6}, want: want{err: "the shoot's ipFamilies include IPv6, but neither the provider config nor the Infrastructure status names an IPv6 subnet"}},
		{name: "two subnets of one family", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{SubnetIDs: []string{"s6", "s6b"}}, families: []gardencorev1beta1.IPFamily{v6}, want: want{err: "a second IPv6 subnet"}},
		{name: "subnet of a family the shoot has not", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{SubnetIDs: []string{"s6"}}, want: want{err: "the subnet is IPv6, but the shoot's ipFamilies are [IPv4]"}},
		{name: "subnetID and subnetIDs", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{SubnetID: ptr.To("s4"), SubnetIDs: []string{"s6"}}, want: want{err: "must not be set together with subnetID"}},
		{name: "IPv6 floating IP", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{FloatingIP: ptr.To("2001:2:0:1::5")}, families: []gardencorev1beta1.IPFamily{v4, v6}, want: want{err: "Neutron has no IPv6 floating IPs"}},
		{name: "IPv6-only with a floating pool", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{FloatingPoolName: ptr.To("public")}, families: []gardencorev1beta1.IPFamily{v6}, want: want{err: "an IPv6-only exposure has no floating IP"}},
		{name: "IPv6 VIP outside its subnet", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{VIPAddress: ptr.To("2001:2:0:99::1")}, families: []gardencorev1beta1.IPFamily{v6}, want: want{err: "must be in the subnet's range 2001:2:0:10::/64"}},
		{name: "IPv6 VIP on an IPv4 shoot", infra: dualInfra(), cfg: v1alpha1.ExposureConfig{VIPAddress: ptr.To("2001:2:0:10::c8")}, want: want{err: "the address is IPv6, but the shoot's ipFamilies are [IPv4]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ResolveFamilies(FamilyInputs{Config: &tc.cfg, Infra: tc.infra, IPFamilies: tc.families, SubnetCIDRs: cidr}, field.NewPath("providerConfig"))
			if tc.want.err != "" {
				if !strings.Contains(errs.ToAggregate().Error(), tc.want.err) {
					t.Fatalf("errors %v, want one with %q", errs, tc.want.err)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			var names []string
			for _, s := range got {
				n := string(s.Family) + "=" + s.SubnetID
				if s.VIPAddress != "" {
					n += "@" + s.VIPAddress
				}
				names = append(names, n)
			}
			if !slices.Equal(names, tc.want.subnets) {
				t.Errorf("subnets %v, want %v", names, tc.want.subnets)
			}
		})
	}
}

// The DNS value Gardener computes from status.ingress (its own helper, as gardenadm init
// does) is the front door of the shoot's first family.
func TestFamilyIngressDNSValue(t *testing.T) {
	const fip, vip6 = "198.19.0.50", "2001:2:0:10::c8"
	doors := map[gardencorev1beta1.IPFamily]string{v4: fip, v6: vip6}
	for _, tc := range []struct {
		families []gardencorev1beta1.IPFamily
		doors    map[gardencorev1beta1.IPFamily]string
		want     []string
	}{
		{families: []gardencorev1beta1.IPFamily{v4}, doors: map[gardencorev1beta1.IPFamily]string{v4: fip}, want: []string{fip}},
		{families: []gardencorev1beta1.IPFamily{v6}, doors: map[gardencorev1beta1.IPFamily]string{v6: vip6}, want: []string{vip6}},
		{families: []gardencorev1beta1.IPFamily{v4, v6}, doors: doors, want: []string{fip}},
		{families: []gardencorev1beta1.IPFamily{v6, v4}, doors: doors, want: []string{vip6}},
	} {
		ingress := FamilyIngress(tc.families, tc.doors)
		if len(ingress) != len(tc.families) {
			t.Errorf("%v: ingress %v, want one address per family", tc.families, ingress)
		}
		values, _, err := extensionsv1alpha1helper.DNSValuesFromIngress(ingress, tc.families)
		if err != nil {
			t.Fatalf("%v: DNSValuesFromIngress: %v", tc.families, err)
		}
		if !slices.Equal(values, tc.want) {
			t.Errorf("%v: DNS values %v, want %v", tc.families, values, tc.want)
		}
	}
}

// What the actuator does not build is refused before any OpenStack call, as a
// configuration problem: a subnetIDs list, an IPv6 VIP on an IPv4 shoot, an IPv6 floating
// IP. IPv4, IPv6-only and dual-stack shoots pass.
func TestCheckIPv4Build(t *testing.T) {
	shoot := func(families ...gardencorev1beta1.IPFamily) *gardencorev1beta1.Shoot {
		return &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{Networking: &gardencorev1beta1.Networking{IPFamilies: families}}}
	}
	for _, tc := range []struct {
		name  string
		cfg   v1alpha1.ExposureConfig
		shoot *gardencorev1beta1.Shoot
		want  string
	}{
		{name: "IPv4 shoot", shoot: shoot(v4)},
		{name: "no networking", shoot: &gardencorev1beta1.Shoot{}},
		{name: "IPv6-only shoot", shoot: shoot(v6)},
		{name: "dual-stack shoot", shoot: shoot(v4, v6)},
		{name: "IPv6 VIP on a dual-stack shoot", shoot: shoot(v6, v4), cfg: v1alpha1.ExposureConfig{VIPAddress: ptr.To("2001:2:0:10::c8")}},
		{name: "subnetIDs", shoot: shoot(v4, v6), cfg: v1alpha1.ExposureConfig{SubnetIDs: []string{"s4"}}, want: "providerConfig.subnetIDs is not supported by this version"},
		{name: "IPv6 floating IP on a dual-stack shoot", shoot: shoot(v4, v6), cfg: v1alpha1.ExposureConfig{FloatingIP: ptr.To("2001:2:0:1::5")}, want: "Neutron has no IPv6 floating IPs"},
		{name: "IPv6 VIP", shoot: shoot(v4), cfg: v1alpha1.ExposureConfig{VIPAddress: ptr.To("2001:2:0:10::c8")}, want: "is IPv6, but the shoot's ipFamilies are [IPv4]"},
		{name: "IPv6 floating IP", shoot: shoot(v4), cfg: v1alpha1.ExposureConfig{FloatingIP: ptr.To("2001:2:0:1::5")}, want: "Neutron has no IPv6 floating IPs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkFamilyConfig(&tc.cfg, tc.shoot, SourceNone)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
			if codes := v1beta1helper.ExtractErrorCodes(err); !slices.Contains(codes, gardencorev1beta1.ErrorConfigurationProblem) {
				t.Errorf("codes %v, want %s", codes, gardencorev1beta1.ErrorConfigurationProblem)
			}
		})
	}
}

// The resolved families place the VIP port: the IPv4 subnet first (vipAddress, floating IP
// and pair label stay IPv4), the IPv6 one beside it; an IPv6-only exposure has no floating
// IP. status.ingress follows the shoot's ipFamilies order, and Gardener's DNS value is the
// first family's door.
func TestApplyFamiliesAndIngress(t *testing.T) {
	v4s := FamilySubnet{Family: v4, SubnetID: "s4", CIDR: netip.MustParsePrefix("198.18.0.0/24")}
	v6s := FamilySubnet{Family: v6, SubnetID: "s6", CIDR: netip.MustParsePrefix("2001:2:0:10::/64"), VIPAddress: "2001:2:0:10::c8"}
	for _, tc := range []struct {
		name     string
		families []gardencorev1beta1.IPFamily
		subnets  []FamilySubnet
		status   v1alpha1.ExposureStatus
		first    string
		others   []networking.SubnetVIP
		internal bool
		dns      []string
	}{
		{name: "dual stack, IPv6 first", families: []gardencorev1beta1.IPFamily{v6, v4}, subnets: []FamilySubnet{v6s, v4s},
			status: v1alpha1.ExposureStatus{PortID: "p", VIPAddress: "198.18.0.5", FloatingIPAddress: "198.19.0.5", OtherVIPs: []v1alpha1.FamilyVIP{{SubnetID: "s6", Address: "2001:2:0:10::c8"}}},
			first:  "s4", others: []networking.SubnetVIP{{SubnetID: "s6", VIPAddress: "2001:2:0:10::c8"}}, dns: []string{"2001:2:0:10::c8"}},
		{name: "dual stack, IPv4 first", families: []gardencorev1beta1.IPFamily{v4, v6}, subnets: []FamilySubnet{v4s, v6s},
			status: v1alpha1.ExposureStatus{PortID: "p", VIPAddress: "198.18.0.5", FloatingIPAddress: "198.19.0.5", OtherVIPs: []v1alpha1.FamilyVIP{{SubnetID: "s6", Address: "2001:2:0:10::c8"}}},
			first:  "s4", others: []networking.SubnetVIP{{SubnetID: "s6", VIPAddress: "2001:2:0:10::c8"}}, dns: []string{"198.19.0.5"}},
		{name: "IPv6 only", families: []gardencorev1beta1.IPFamily{v6}, subnets: []FamilySubnet{v6s},
			status: v1alpha1.ExposureStatus{PortID: "p", VIPAddress: "2001:2:0:10::c8"},
			first:  "s6", internal: true, dns: []string{"2001:2:0:10::c8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Spec: networking.Spec{FloatingPoolName: "ext", FloatingNetworkID: "ext-id"}}
			applyFamilies(c, tc.subnets, "net")
			if c.SubnetID != tc.first || !slices.Equal(c.OtherSubnets, tc.others) || c.InternalOnly != tc.internal {
				t.Fatalf("subnet %s, others %v, internal %v; want %s, %v, %v", c.SubnetID, c.OtherSubnets, c.InternalOnly, tc.first, tc.others, tc.internal)
			}
			if tc.internal && (c.FloatingPoolName != "" || c.FloatingNetworkID != "") {
				t.Errorf("an IPv6-only exposure keeps the floating pool %q/%q", c.FloatingPoolName, c.FloatingNetworkID)
			}
			ingress := familyIngress(tc.families, &tc.status, c.InternalOnly)
			if len(ingress) != len(tc.families) {
				t.Errorf("ingress %v, want one address per family", ingress)
			}
			values, _, err := extensionsv1alpha1helper.DNSValuesFromIngress(ingress, tc.families)
			if err != nil || !slices.Equal(values, tc.dns) {
				t.Errorf("DNS values %v (%v), want %v", values, err, tc.dns)
			}
		})
	}
}
