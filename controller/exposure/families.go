// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"fmt"
	"net/netip"
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
)

// PurposeNodesIPv6 is provider-openstack's purpose of the IPv6 node subnet of a dual-stack
// shoot in the InfrastructureStatus (the IPv4 one has PurposeNodes).
const PurposeNodesIPv6 = "nodes-ipv6"

// FamilySubnet is the VIP's subnet of one IP family.
type FamilySubnet struct {
	Family   gardencorev1beta1.IPFamily
	SubnetID string
	CIDR     netip.Prefix
	// VIPAddress is the pinned VIP of this family (the provider config's vipAddress when it
	// is of this family), else empty: Neutron picks one.
	VIPAddress string
}

// FamilyInputs is what ResolveFamilies decides from.
type FamilyInputs struct {
	Config *v1alpha1.ExposureConfig
	Infra  *InfrastructureStatus
	// IPFamilies is the shoot's spec.networking.ipFamilies, in its order (empty: IPv4).
	IPFamilies []gardencorev1beta1.IPFamily
	// SubnetCIDRs maps every subnet ID named by the config or the Infrastructure to its CIDR,
	// from the InfrastructureStatus or read from Neutron by the caller; the family of a subnet
	// is its CIDR's.
	SubnetCIDRs map[string]string
}

// ResolveFamilies gives one subnet per IP family of the shoot, in the shoot's order. The
// subnets named in the config come first, then the Infrastructure's node subnets. All the
// errors are found here, before any side effect (fldPath is the provider config's root).
func ResolveFamilies(in FamilyInputs, fldPath *field.Path) ([]FamilySubnet, field.ErrorList) {
	cfg := in.Config
	families := in.IPFamilies
	if len(families) == 0 {
		families = []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv4}
	}
	var errs field.ErrorList
	explicit := cfg.SubnetIDs
	if cfg.SubnetID != nil {
		if len(cfg.SubnetIDs) > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("subnetIDs"), "must not be set together with subnetID"))
		}
		explicit = []string{*cfg.SubnetID}
	}
	chosen := map[gardencorev1beta1.IPFamily]FamilySubnet{}
	for i, id := range explicit {
		path := fldPath.Child("subnetIDs").Index(i)
		if cfg.SubnetID != nil {
			path = fldPath.Child("subnetID")
		}
		prefix, err := netip.ParsePrefix(in.SubnetCIDRs[id])
		if err != nil {
			errs = append(errs, field.Invalid(path, id, "the subnet's CIDR is unknown"))
			continue
		}
		family := familyOf(prefix.Addr())
		if _, dup := chosen[family]; dup {
			errs = append(errs, field.Invalid(path, id, fmt.Sprintf("a second %s subnet: give at most one subnet per IP family", family)))
			continue
		}
		if !slices.Contains(families, family) {
			errs = append(errs, field.Invalid(path, id, fmt.Sprintf("the subnet is %s, but the shoot's ipFamilies are %v", family, families)))
			continue
		}
		chosen[family] = FamilySubnet{Family: family, SubnetID: id, CIDR: prefix}
	}
	for _, purpose := range []string{PurposeNodes, PurposeNodesIPv6} {
		for _, s := range in.Infra.Networks.Subnets {
			if s.Purpose != purpose {
				continue
			}
			prefix, err := netip.ParsePrefix(s.CIDR)
			if err != nil {
				prefix, err = netip.ParsePrefix(in.SubnetCIDRs[s.ID])
			}
			if err != nil {
				continue
			}
			if family := familyOf(prefix.Addr()); slices.Contains(families, family) {
				if _, ok := chosen[family]; !ok {
					chosen[family] = FamilySubnet{Family: family, SubnetID: s.ID, CIDR: prefix}
				}
			}
		}
	}
	var out []FamilySubnet
	for _, family := range families {
		fs, ok := chosen[family]
		if !ok {
			errs = append(errs, field.Required(fldPath.Child("subnetIDs"), fmt.Sprintf("the shoot's ipFamilies include %s, but neither the provider config nor the Infrastructure status names an %s subnet", family, family)))
			continue
		}
		out = append(out, fs)
	}
	errs = append(errs, validateFamilyAddresses(cfg, families, out, fldPath)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// validateFamilyAddresses checks the pinned VIP and the floating IP settings against the
// families, and pins the VIP on its family's subnet.
func validateFamilyAddresses(cfg *v1alpha1.ExposureConfig, families []gardencorev1beta1.IPFamily, subnets []FamilySubnet, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if cfg.VIPAddress != nil {
		if vip, err := netip.ParseAddr(*cfg.VIPAddress); err == nil {
			i := slices.IndexFunc(subnets, func(s FamilySubnet) bool { return s.Family == familyOf(vip) })
			switch {
			case i < 0:
				errs = append(errs, field.Invalid(fldPath.Child("vipAddress"), *cfg.VIPAddress, fmt.Sprintf("the address is %s, but the shoot's ipFamilies are %v", familyOf(vip), families)))
			case !subnets[i].CIDR.Contains(vip):
				errs = append(errs, field.Invalid(fldPath.Child("vipAddress"), *cfg.VIPAddress, fmt.Sprintf("must be in the subnet's range %s", subnets[i].CIDR)))
			default:
				subnets[i].VIPAddress = vip.String()
			}
		}
	}
	if cfg.FloatingIP != nil {
		if fip, err := netip.ParseAddr(*cfg.FloatingIP); err == nil && !fip.Unmap().Is4() {
			errs = append(errs, field.Invalid(fldPath.Child("floatingIP"), *cfg.FloatingIP, "Neutron has no IPv6 floating IPs: the floating IP must be an IPv4 address (the IPv6 VIP is itself the front door)"))
		}
	}
	if !slices.Contains(families, gardencorev1beta1.IPFamilyIPv4) {
		for _, f := range []namedField{{"floatingIP", cfg.FloatingIP}, {"floatingPoolName", cfg.FloatingPoolName}, {"floatingNetworkID", cfg.FloatingNetworkID}} {
			if f.value != nil {
				errs = append(errs, field.Forbidden(fldPath.Child(f.name), "an IPv6-only exposure has no floating IP (Neutron has no IPv6 floating IPs): the IPv6 VIP is the front door"))
			}
		}
	}
	return errs
}

// FamilyIngress orders the front doors as the shoot's ipFamilies do, which is what Gardener's
// DNSValuesFromIngress reads: the floating IP (or, internal-only, the VIP) for IPv4 and the
// VIP itself for IPv6. A family without an address is left out.
func FamilyIngress(families []gardencorev1beta1.IPFamily, doors map[gardencorev1beta1.IPFamily]string) []corev1.LoadBalancerIngress {
	if len(families) == 0 {
		families = []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv4}
	}
	var out []corev1.LoadBalancerIngress
	for _, f := range families {
		if a := doors[f]; a != "" {
			out = append(out, corev1.LoadBalancerIngress{IP: a})
		}
	}
	return out
}

func familyOf(a netip.Addr) gardencorev1beta1.IPFamily {
	if a.Unmap().Is4() {
		return gardencorev1beta1.IPFamilyIPv4
	}
	return gardencorev1beta1.IPFamilyIPv6
}

// shootFamilies is the shoot's spec.networking.ipFamilies (empty: IPv4 only).
func shootFamilies(shoot *gardencorev1beta1.Shoot) []gardencorev1beta1.IPFamily {
	if shoot == nil || shoot.Spec.Networking == nil {
		return nil
	}
	return shoot.Spec.Networking.IPFamilies
}

// hasIPv6 tells whether the shoot's ipFamilies include IPv6: only then are the families
// resolved (ResolveFamilies); an IPv4-only exposure keeps its one-subnet path.
func hasIPv6(families []gardencorev1beta1.IPFamily) bool {
	return slices.Contains(families, gardencorev1beta1.IPFamilyIPv6)
}

// applyFamilies places the front door on the resolved subnets: the IPv4 subnet (if any)
// is the VIP port's first fixed IP, so that vipAddress, the floating IP and the pair label
// keep meaning the IPv4 VIP; the other family's subnet is in OtherSubnets. An IPv6-only
// exposure has no floating IP: its IPv6 VIP is the front door, as for internalOnly.
func applyFamilies(c *Config, families []FamilySubnet, networkID string) {
	c.Families = families
	first := slices.IndexFunc(families, func(f FamilySubnet) bool { return f.Family == gardencorev1beta1.IPFamilyIPv4 })
	if first < 0 {
		first = 0
		c.InternalOnly = true
		c.FloatingNetworkID, c.FloatingPoolName, c.FloatingIP = "", "", ""
	}
	c.SubnetID, c.VIPAddress = families[first].SubnetID, families[first].VIPAddress
	c.SubnetCIDR, c.SubnetNetworkID = families[first].CIDR.String(), networkID
	c.OtherSubnets = nil
	for i, f := range families {
		if i != first {
			c.OtherSubnets = append(c.OtherSubnets, networking.SubnetVIP{SubnetID: f.SubnetID, VIPAddress: f.VIPAddress})
		}
	}
}

// subnetCIDRs maps the Infrastructure's subnets to their CIDRs.
func subnetCIDRs(infra *InfrastructureStatus) map[string]string {
	m := map[string]string{}
	for _, s := range infra.Networks.Subnets {
		m[s.ID] = s.CIDR
	}
	return m
}

// checkFamilyConfig refuses, before any side effect, what this actuator does not build: a
// subnetIDs list (its subnets' families would need Neutron before the immutability rule;
// the Infrastructure's nodes and nodes-ipv6 subnets are used instead), an IPv6 vipAddress
// on an IPv4-only shoot, and an IPv6 floating IP (Neutron has none).
func checkFamilyConfig(cfg *v1alpha1.ExposureConfig, shoot *gardencorev1beta1.Shoot, source ConfigSource) error {
	path := field.NewPath(string(source))
	if len(cfg.SubnetIDs) > 0 {
		return configError("fix the provider config: %s is not supported by this version: it takes the VIP's subnet of each IP family from the Infrastructure (purposes nodes and nodes-ipv6); remove %s", path.Child("subnetIDs"), path.Child("subnetIDs"))
	}
	if cfg.VIPAddress != nil && !hasIPv6(shootFamilies(shoot)) {
		if vip, err := netip.ParseAddr(*cfg.VIPAddress); err == nil && !vip.Unmap().Is4() {
			return configError("fix the provider config: %s %s is IPv6, but the shoot's ipFamilies are [IPv4]", path.Child("vipAddress"), *cfg.VIPAddress)
		}
	}
	if cfg.FloatingIP != nil {
		if fip, err := netip.ParseAddr(*cfg.FloatingIP); err == nil && !fip.Unmap().Is4() {
			return configError("fix the provider config: %s %s is IPv6, and Neutron has no IPv6 floating IPs", path.Child("floatingIP"), *cfg.FloatingIP)
		}
	}
	return nil
}

// familyIngress is status.ingress of a resolved exposure, in the shoot's ipFamilies order:
// the published door of the first fixed IP (floating IP, or the VIP when internal-only or
// IPv6-only) and each other VIP for its family.
func familyIngress(families []gardencorev1beta1.IPFamily, status *v1alpha1.ExposureStatus, internalOnly bool) []corev1.LoadBalancerIngress {
	first := ingressOf(status, internalOnly)
	if first == "" {
		return nil
	}
	vip, err := netip.ParseAddr(status.VIPAddress)
	if err != nil {
		return ingress(first)
	}
	doors := map[gardencorev1beta1.IPFamily]string{familyOf(vip): first}
	for _, v := range status.OtherVIPs {
		if a, err := netip.ParseAddr(v.Address); err == nil {
			doors[familyOf(a)] = v.Address
		}
	}
	return FamilyIngress(families, doors)
}
