// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package networking

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// checkRecordedPort tells whether the port recorded in the status is still the exposure's
// VIP port: unbound and holding the recorded VIP (a changed network is refused earlier,
// by CheckImmutable).
func checkRecordedPort(port *ports.Port, status *v1alpha1.ExposureStatus) error {
	switch {
	case port.DeviceOwner != "":
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the VIP port %s was bound to %s %s outside of the extension: unbind it so that it only reserves the VIP %s",
			port.ID, port.DeviceOwner, port.DeviceID, status.VIPAddress), gardencorev1beta1.ErrorInfraDependencies)
	case port.NetworkID != status.NetworkID || !openstack.HasFixedIP(port, status.VIPAddress):
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the VIP port %s no longer holds the VIP %s in network %s (it has %s in %s): the VIP cannot change; restore the port's fixed IP",
			port.ID, status.VIPAddress, status.NetworkID, openstack.PortAddress(port, ""), port.NetworkID), gardencorev1beta1.ErrorInfraDependencies)
	}
	for _, v := range status.OtherVIPs {
		if !openstack.HasFixedIP(port, v.Address) {
			return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the VIP port %s no longer holds the VIP %s of subnet %s (it has %v): the VIP cannot change; restore the port's fixed IP",
				port.ID, v.Address, v.SubnetID, port.FixedIPs), gardencorev1beta1.ErrorInfraDependencies)
		}
	}
	return nil
}

// CheckImmutable is the one rule for what never changes. Before any OpenStack call it
// refuses every provider-config change that would move the front door away from what the
// status records: Gardener writes status.ingress into DNS only once
// (continuousEndpointUpdate: false), so a new address would strand every client, and a
// VIP taken from a changed subnet would leave the node pairs and agents on nothing. The
// exposure keeps running on its recorded addresses while the error is shown.
func CheckImmutable(cfg *Spec, status *v1alpha1.ExposureStatus) error {
	hasVIP := status.VIPAddress != ""
	hasFloatingIP := status.FloatingIPID != ""
	internal := status.Ingress != "" && status.Ingress == status.VIPAddress && !hasFloatingIP
	var c *change
	switch {
	case hasVIP && status.NetworkID != "" && cfg.NetworkID != status.NetworkID:
		c = &change{"networkID", status.NetworkID, cfg.NetworkID}
	case hasVIP && status.SubnetID != "" && cfg.SubnetID != status.SubnetID:
		c = &change{"subnetID", status.SubnetID, cfg.SubnetID}
	case hasVIP && cfg.VIPAddress != "" && cfg.VIPAddress != status.VIPAddress:
		c = &change{"vipAddress", status.VIPAddress, cfg.VIPAddress}
	case hasFloatingIP && cfg.InternalOnly:
		c = &change{"internalOnly", "false", "true"}
	case internal && !cfg.InternalOnly:
		c = &change{"internalOnly", "true", "false"}
	case hasFloatingIP && cfg.FloatingIP != "" && cfg.FloatingIP != status.FloatingIPAddress:
		c = &change{"floatingIP", status.FloatingIPAddress, cfg.FloatingIP}
	case hasFloatingIP && !status.FloatingIPAdopted && cfg.FloatingIP == "" && status.FloatingNetworkID != "" &&
		cfg.FloatingNetworkID != "" && cfg.FloatingNetworkID != status.FloatingNetworkID:
		c = &change{"floatingNetworkID", status.FloatingNetworkID, cfg.FloatingNetworkID}
	}
	if c == nil && hasVIP {
		c = otherFamiliesChange(cfg, status)
	}
	if c == nil {
		return nil
	}
	return refuseChange(*c, status)
}

// KeepRecordedFamilies drops from spec the subnets of IP families the front door was not
// made with: a shoot migrated to dual stack after its VIP was recorded keeps the door it
// has, since Gardener publishes the door once, at gardenadm init, and a VIP added later
// would reach no DNS record. It returns the dropped subnets. A recorded family that is gone
// from spec is left for CheckImmutable to refuse: that would move the door.
func KeepRecordedFamilies(spec *Spec, status *v1alpha1.ExposureStatus) (dropped []string) {
	if status.VIPAddress == "" {
		return nil
	}
	spec.OtherSubnets = slices.DeleteFunc(spec.OtherSubnets, func(o SubnetVIP) bool {
		if recordedOtherVIP(status, o.SubnetID) != "" {
			return false
		}
		dropped = append(dropped, o.SubnetID)
		return true
	})
	return dropped
}

// otherFamiliesChange finds a change of the other families' subnets or pinned VIPs: a
// family added, removed or moved after the VIP was recorded.
func otherFamiliesChange(cfg *Spec, status *v1alpha1.ExposureStatus) *change {
	recorded := make([]string, 0, len(status.OtherVIPs))
	for _, v := range status.OtherVIPs {
		recorded = append(recorded, v.SubnetID)
	}
	configured := make([]string, 0, len(cfg.OtherSubnets))
	for _, o := range cfg.OtherSubnets {
		configured = append(configured, o.SubnetID)
		if r := recordedOtherVIP(status, o.SubnetID); r != "" && o.VIPAddress != "" && o.VIPAddress != r {
			return &change{"vipAddress", r, o.VIPAddress}
		}
	}
	if !slices.Equal(recorded, configured) {
		return &change{otherFamilySubnets, strings.Join(recorded, ","), strings.Join(configured, ",")}
	}
	return nil
}

// change is a setting, usually a provider-config field, that differs from what the front
// door was made with.
type change struct{ field, recorded, configured string }

// otherFamilySubnets stands for the subnets of the shoot's IP families besides the first:
// they come from the shoot's ipFamilies and the Infrastructure's node subnets, not from a
// provider-config field.
const otherFamilySubnets = "the other IP families' subnets"

// refuseChange is the one error sentence of CheckImmutable.
func refuseChange(c change, status *v1alpha1.ExposureStatus) error {
	door := "VIP " + status.VIPAddress
	for _, v := range status.OtherVIPs {
		door += ", VIP " + v.Address
	}
	if status.FloatingIPAddress != "" {
		door += ", floating IP " + status.FloatingIPAddress
	}
	if c.field == otherFamilySubnets {
		return configError("the shoot's ipFamilies and the Infrastructure's node subnets give the subnets %q besides the first family's, but the exposure's front door (%s) was made with %q and cannot move: restore the shoot's networking.ipFamilies and the Infrastructure's nodes and nodes-ipv6 subnets, or create a new exposure",
			c.configured, door, c.recorded)
	}
	return configError("%s is %q in the provider config, but the exposure's front door (%s) was made with %q and cannot move: restore %s, or create a new exposure",
		c.field, c.configured, door, c.recorded, c.field)
}
