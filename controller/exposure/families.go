// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"net/netip"
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
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
