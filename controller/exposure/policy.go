// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// This file holds the policy beside the flow of actuator.go: what the extension owns, and
// which changes of the provider config it accepts once the front-door address is public.

// vipPortName is the name of the cluster's VIP port.
func vipPortName(identity string) string {
	return "kube-vip-" + identity
}

// ownerDescription is the description of the VIP port and of the floating IPs this
// extension creates. On floating IPs it is the mark of ownership: only a floating IP with
// exactly this description is ever deleted; others (pre-allocated by the user) are only
// disassociated. Neutron stores the description with the create request, at no extra call.
func ownerDescription(identity string) string {
	return fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s (gardener-extension-kube-vip); do not delete", identity)
}

// ownedFloatingIP tells whether this extension created the floating IP for the cluster.
func ownedFloatingIP(fip *floatingips.FloatingIP, identity string) bool {
	return fip.Description == ownerDescription(identity)
}

func clusterTags(identity string) []string {
	return []string{openstack.TagExtension, openstack.ClusterTag(identity)}
}

// withClusterTags returns the port's tags plus the cluster's, without tags that name
// another cluster: a recorded port whose tags were edited gets the cluster's back, and
// keeps the tags of others.
func withClusterTags(have []string, identity string) []string {
	want := clusterTags(identity)
	out := slices.Clone(want)
	for _, t := range have {
		if strings.HasPrefix(t, openstack.ClusterTag("")) || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// checkRecordedPort tells whether the port recorded in the status is still the exposure's
// VIP port: unbound, in the configured network, holding the recorded VIP.
func checkRecordedPort(port *ports.Port, status *v1alpha1.ExposureStatus, networkID string) error {
	switch {
	case port.DeviceOwner != "":
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the VIP port %s was bound to %s %s outside of the extension: unbind it so that it only reserves the VIP %s",
			port.ID, port.DeviceOwner, port.DeviceID, status.VIPAddress), gardencorev1beta1.ErrorInfraDependencies)
	case port.NetworkID != networkID:
		return configError("the VIP port %s is in network %s, not in %s: the network of an exposure cannot change; restore networkID in the provider config",
			port.ID, port.NetworkID, networkID)
	case !hasFixedIP(port, status.VIPAddress):
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the VIP port %s no longer holds the VIP %s (it has %s): the VIP cannot change; restore the port's fixed IP",
			port.ID, status.VIPAddress, openstack.PortAddress(port, "")), gardencorev1beta1.ErrorInfraDependencies)
	}
	return nil
}

// checkAddressChange refuses, before any OpenStack call, every provider-config change that
// would move the front-door address once it was reported: Gardener writes status.ingress
// into DNS only once (continuousEndpointUpdate: false), so a new address would strand
// every client. The exposure keeps running on its addresses while the error is shown.
func checkAddressChange(cfg *Config, status *v1alpha1.ExposureStatus) error {
	if status.VIPAddress != "" && cfg.VIPAddress != "" && cfg.VIPAddress != status.VIPAddress {
		return configError("vipAddress %s differs from the exposure's VIP %s, and the VIP cannot change: restore vipAddress in the provider config, or create a new exposure",
			cfg.VIPAddress, status.VIPAddress)
	}
	if status.Ingress == "" {
		return nil
	}
	internal := status.Ingress == status.VIPAddress && status.FloatingIPID == ""
	switch {
	case cfg.InternalOnly && !internal:
		return configError("internalOnly would remove the floating IP %s, the exposure's published address: unset internalOnly, or create a new exposure", status.Ingress)
	case !cfg.InternalOnly && internal:
		return configError("the exposure is internal only and publishes the VIP %s: setting internalOnly to false would change the published address; restore internalOnly, or create a new exposure", status.Ingress)
	case cfg.FloatingIP != "" && cfg.FloatingIP != status.Ingress:
		return configError("floatingIP %s differs from the exposure's published floating IP %s, and that address cannot change: set floatingIP to %s or remove it",
			cfg.FloatingIP, status.Ingress, status.Ingress)
	}
	return nil
}

// ingressOf is the address to report: the recorded front door once there is one, else the
// floating IP, else (internal only) the VIP. A public exposure never reports its private
// VIP, also not while its floating IP is still missing.
func ingressOf(status *v1alpha1.ExposureStatus, internalOnly bool) string {
	switch {
	case status == nil:
		return ""
	case status.Ingress != "":
		return status.Ingress
	case status.FloatingIPAddress != "":
		return status.FloatingIPAddress
	case internalOnly && status.PortID != "":
		return status.VIPAddress
	}
	return ""
}
