// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// shootWithExposure is a Shoot whose control-plane pool asks for this extension with the
// provider config fields (JSON members without braces), nodes 10.250.0.0/16.
func shootWithExposure(typ, fields string) *gardencorev1beta1.Shoot {
	raw := `{` + header
	if fields != "" {
		raw += "," + fields
	}
	raw += "}"
	return &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{
		Networking: &gardencorev1beta1.Networking{Nodes: ptr.To("10.250.0.0/16")},
		Provider: gardencorev1beta1.Provider{Workers: []gardencorev1beta1.Worker{
			{Name: "worker"},
			{Name: "cp", ControlPlane: &gardencorev1beta1.WorkerControlPlane{Exposure: &gardencorev1beta1.Exposure{
				Extension: &gardencorev1beta1.ExtensionExposure{Type: ptr.To(typ), ProviderConfig: &runtime.RawExtension{Raw: []byte(raw)}}}}},
		}},
	}}
}

func TestValidateShoot(t *testing.T) {
	withWorkersCIDR := shootWithExposure(DefaultType, `"vipAddress":"10.251.0.10"`)
	withWorkersCIDR.Spec.Provider.InfrastructureConfig = &runtime.RawExtension{Raw: []byte(`{"networks":{"workers":"10.251.0.0/16"}}`)}
	for _, tc := range []struct {
		name  string
		shoot *gardencorev1beta1.Shoot
		// wantErr is a part of the error; "" for none.
		wantErr string
		// config: the error is a configuration problem, as the exposure's status would show.
		config bool
	}{
		{"a valid config", shootWithExposure(DefaultType, `"floatingPoolName":"public"`), "", false},
		{"a VIP in the nodes CIDR", shootWithExposure(DefaultType, `"vipAddress":"10.250.0.10"`), "", false},
		{"a VIP outside the nodes CIDR", shootWithExposure(DefaultType, `"vipAddress":"10.99.0.10"`), "vipAddress", true},
		{"the infrastructureConfig's workers CIDR wins over networking.nodes", withWorkersCIDR, "", false},
		{"an IPv6 VIP on an IPv4 shoot", shootWithExposure(DefaultType, `"vipAddress":"2001:db8::10"`), "IPv6", true},
		{"an unknown field", shootWithExposure(DefaultType, `"vipAdress":"10.250.0.10"`), "invalid", true},
		{"another exposure type", shootWithExposure("metallb", ""), `"metallb"`, false},
		{"no control-plane pool", &gardencorev1beta1.Shoot{}, "no control-plane worker pool", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateShoot(tc.shoot)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
			}
			if got := slices.Contains(v1beta1helper.ExtractErrorCodes(err), gardencorev1beta1.ErrorConfigurationProblem); got != tc.config {
				t.Errorf("configuration problem %v, want %v: %v", got, tc.config, err)
			}
		})
	}
}

func TestShootNodeCIDR(t *testing.T) {
	infra := func(raw string) *gardencorev1beta1.Shoot {
		s := shootWithExposure(DefaultType, "")
		s.Spec.Provider.InfrastructureConfig = &runtime.RawExtension{Raw: []byte(raw)}
		return s
	}
	for _, tc := range []struct {
		name  string
		shoot *gardencorev1beta1.Shoot
		want  string
	}{
		{"networks.workers", infra(`{"networks":{"workers":"10.1.0.0/16","worker":"10.2.0.0/16"}}`), "10.1.0.0/16"},
		{"the deprecated networks.worker", infra(`{"networks":{"worker":"10.2.0.0/16"}}`), "10.2.0.0/16"},
		{"an unreadable infrastructureConfig falls back to networking.nodes", infra(`not json`), "10.250.0.0/16"},
		{"networking.nodes", shootWithExposure(DefaultType, ""), "10.250.0.0/16"},
		{"nothing", &gardencorev1beta1.Shoot{}, ""},
	} {
		if got := shootNodeCIDR(tc.shoot); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
