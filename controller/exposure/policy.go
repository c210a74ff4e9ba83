// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// This file holds the policy beside the flow of actuator.go: what the extension owns, and
// which changes of the provider config it accepts once the front-door address is public.

// vipPortName is the name of the cluster's VIP port.
func vipPortName(identity string) string {
	return "kube-vip-" + identity
}

// mark is what the extension puts on the OpenStack resources of one exposure: the
// cluster's identity (port name, cluster tag) and the owning exposure's UID (owner tag on
// the port, part of the floating IP's description). Two exposures of one cluster share the
// identity and differ in the owner; so do two clusters that share a project and a shoot
// name (and with it the technical ID the identity comes from).
type mark struct {
	identity string
	// owner is the recorded owner UID; empty for exposures from before owners were
	// recorded, whose resources carry no owner.
	owner string
}

// markOf returns the mark of an exposure: the recorded identity and owner; an exposure
// that has recorded nothing yet takes the derived identity and its own UID.
func markOf(status *v1alpha1.ExposureStatus, derivedIdentity string, uid types.UID) mark {
	if status.Identity != "" {
		return mark{identity: status.Identity, owner: status.Owner}
	}
	return mark{identity: derivedIdentity, owner: string(uid)}
}

// description is the description of the VIP port and of the floating IPs this extension
// creates. On floating IPs it is the mark of ownership: only a floating IP with exactly
// this description is ever deleted; others (pre-allocated by the user, or another
// exposure's) are left alone or only disassociated. Neutron stores the description with
// the create request, at no extra call.
func (m mark) description() string {
	if m.owner == "" {
		return fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s (gardener-extension-kube-vip); do not delete", m.identity)
	}
	return fmt.Sprintf("Virtual IP of the kube-apiserver of cluster %s, owner %s (gardener-extension-kube-vip); do not delete", m.identity, m.owner)
}

// ownsFloatingIP tells whether this extension created the floating IP for the exposure.
func (m mark) ownsFloatingIP(fip *floatingips.FloatingIP) bool {
	return fip.Description == m.description()
}

// clusterTags are the tags every VIP port of the cluster carries.
func (m mark) clusterTags() []string {
	return []string{openstack.TagExtension, openstack.ClusterTag(m.identity)}
}

// tags are the tags of the exposure's VIP port: the cluster's and the owner's.
func (m mark) tags() []string {
	if m.owner == "" {
		return m.clusterTags()
	}
	return append(m.clusterTags(), openstack.OwnerTag(m.owner))
}

// foreignOwner returns the owner of a port of the cluster that another exposure owns, ""
// when the port is this exposure's or carries no owner. An untagged port (tags lost, or
// not yet put on after the create) is told by its description.
func (m mark) foreignOwner(p *ports.Port) string {
	for _, t := range p.Tags {
		if uid, ok := strings.CutPrefix(t, openstack.OwnerTagPrefix); ok && uid != m.owner {
			return uid
		}
	}
	if len(p.Tags) == 0 && m.owner != "" && strings.Contains(p.Description, ", owner ") && p.Description != m.description() {
		return "(unknown, see the port's description)"
	}
	return ""
}

// withTags returns the port's tags plus the exposure's, without tags that name another
// cluster or owner: a recorded port whose tags were edited gets the exposure's back, and
// keeps the tags of others.
func (m mark) withTags(have []string) []string {
	out := m.tags()
	for _, t := range have {
		if strings.HasPrefix(t, openstack.ClusterTag("")) || strings.HasPrefix(t, openstack.OwnerTagPrefix) || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// checkOneOwner refuses an exposure that has no VIP port yet while another exposure of
// this cluster owns one: the cluster has one front door, and a second exposure must not
// take it over (or delete it with itself). A port of the cluster's identity whose owner is
// no exposure of this cluster belongs to another cluster that shares the project and the
// shoot name; it is left alone, and this exposure creates its own.
func (a *Actuator) checkOneOwner(ctx context.Context, log logr.Logger, in *inputs, named []ports.Port) error {
	for i := range named {
		p := &named[i]
		uid := in.mark.foreignOwner(p)
		if uid == "" || p.DeviceOwner != "" || (len(p.Tags) > 0 && !openstack.HasAllTags(p.Tags, in.mark.clusterTags())) {
			continue
		}
		owner, err := a.exposureOwning(ctx, uid)
		if err != nil {
			return err
		}
		if owner == "" {
			log.Info("Leaving a VIP port of the same name alone: its owner is no exposure of this cluster (another cluster sharing the project and shoot name)", "port", p.ID, "owner", uid)
			continue
		}
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the cluster's front door (VIP port %s) belongs to the SelfHostedShootExposure %s (owner %s), and a cluster has one: this exposure leaves it alone; delete this exposure",
			p.ID, owner, uid), gardencorev1beta1.ErrorConfigurationProblem)
	}
	return nil
}

// exposureOwning returns namespace/name of the SelfHostedShootExposure in this cluster
// whose UID, or recorded owner, is uid; "" when there is none.
func (a *Actuator) exposureOwning(ctx context.Context, uid string) (string, error) {
	list := &extensionsv1alpha1.SelfHostedShootExposureList{}
	if err := a.client.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing the SelfHostedShootExposures: %w", err)
	}
	for i := range list.Items {
		x := &list.Items[i]
		if string(x.UID) == uid {
			return client.ObjectKeyFromObject(x).String(), nil
		}
		if s, err := DecodeStatus(x); err == nil && s.Owner == uid {
			return client.ObjectKeyFromObject(x).String(), nil
		}
	}
	return "", nil
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
