// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
)

// ValidateShoot checks the exposure providerConfig of the Shoot's control-plane worker pool
// offline, with the controller's decoder and checks: it returns the error the exposure's
// status would show, or nil. The VIP address is checked against the node subnet the Shoot
// names (provider-openstack's infrastructureConfig networks.workers, else
// networking.nodes). What only Neutron knows (that a named network, subnet or floating pool
// exists) is left to the controller.
func ValidateShoot(shoot *gardencorev1beta1.Shoot) error {
	pool := v1beta1helper.ControlPlaneWorkerPoolForShoot(shoot.Spec.Provider.Workers)
	if pool == nil || pool.ControlPlane == nil || pool.ControlPlane.Exposure == nil || pool.ControlPlane.Exposure.Extension == nil {
		return errors.New("the Shoot has no control-plane worker pool with controlPlane.exposure.extension")
	}
	if t := pool.ControlPlane.Exposure.Extension.Type; t == nil || *t != DefaultType {
		return fmt.Errorf("the control-plane worker pool's exposure.extension.type is %q, want %q", deref(t), DefaultType)
	}
	raw, source := selectConfig(&extensionsv1alpha1.SelfHostedShootExposure{}, shoot)
	cfg, err := decodeAndValidate(raw, source)
	if err != nil {
		return err
	}
	if err := checkFamilyConfig(cfg, shoot, source); err != nil {
		return err
	}
	// The shoot's nodes CIDR is its IPv4 one: an IPv6 VIP is checked by the controller
	// against the Infrastructure's IPv6 subnet.
	if vip, err := netip.ParseAddr(deref(cfg.VIPAddress)); err == nil && !vip.Unmap().Is4() {
		return nil
	}
	if errs := validateVIPRange(deref(cfg.VIPAddress), shootNodeCIDR(shoot), field.NewPath(string(source))); len(errs) > 0 {
		return configError("fix the provider config: %w", errs.ToAggregate())
	}
	return nil
}

// shootNodeCIDR is the CIDR of the node subnet that provider-openstack creates for the Shoot.
func shootNodeCIDR(shoot *gardencorev1beta1.Shoot) string {
	if raw := shoot.Spec.Provider.InfrastructureConfig; raw != nil && len(raw.Raw) > 0 {
		infra := struct {
			Networks struct {
				Workers string `json:"workers"`
				Worker  string `json:"worker"`
			} `json:"networks"`
		}{}
		if json.Unmarshal(raw.Raw, &infra) == nil {
			if infra.Networks.Workers != "" {
				return infra.Networks.Workers
			}
			if infra.Networks.Worker != "" {
				return infra.Networks.Worker
			}
		}
	}
	if n := shoot.Spec.Networking; n != nil && n.Nodes != nil {
		return *n.Nodes
	}
	return ""
}
