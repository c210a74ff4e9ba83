// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

const header = `"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig"`

func decode(t *testing.T, body string) (*v1alpha1.ExposureConfig, error) {
	t.Helper()
	return DecodeConfig(&runtime.RawExtension{Raw: []byte("{" + header + body + "}")})
}

func TestDecodeConfigStrict(t *testing.T) {
	if _, err := decode(t, `,"vipAdress":"1.2.3.4"`); err == nil || !strings.Contains(err.Error(), "vipAdress") {
		t.Errorf("unknown field accepted: %v", err)
	}
	cfg, err := decode(t, `,"vipAddress":"198.18.0.7","agent":{"leaseDuration":"2s"}`)
	if err != nil || *cfg.VIPAddress != "198.18.0.7" || cfg.Agent.LeaseDuration.Duration != 2*time.Second {
		t.Errorf("decode: %v %+v", err, cfg)
	}
	if cfg, err := DecodeConfig(nil); err != nil || cfg == nil {
		t.Errorf("nil config: %v", err)
	}
}

func TestSelectConfig(t *testing.T) {
	raw := &runtime.RawExtension{Raw: []byte(`{}`)}
	shoot := &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{Provider: gardencorev1beta1.Provider{Workers: []gardencorev1beta1.Worker{
		{Name: "worker"},
		{Name: "cp", ControlPlane: &gardencorev1beta1.WorkerControlPlane{Exposure: &gardencorev1beta1.Exposure{Extension: &gardencorev1beta1.ExtensionExposure{ProviderConfig: raw}}}},
	}}}}
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if got, source := selectConfig(exp, shoot); got != raw || source != SourceShoot {
		t.Errorf("shoot config not used: %v", source)
	}
	own := &runtime.RawExtension{Raw: []byte(`{"a":1}`)}
	exp.Spec.ProviderConfig = own
	if got, source := selectConfig(exp, shoot); got != own || source != SourceExposure {
		t.Errorf("exposure config does not win: %v", source)
	}
}

func infra() *InfrastructureStatus {
	s := &InfrastructureStatus{}
	s.Networks.ID = "net"
	s.Networks.FloatingPool.ID, s.Networks.FloatingPool.Name = "ext", "public"
	s.Networks.Subnets = []InfrastructureSubnet{{Purpose: "public", ID: "other", CIDR: "10.0.0.0/24"}, {Purpose: PurposeNodes, ID: "nodes", CIDR: "198.18.0.0/24"}}
	return s
}

func TestResolveConfig(t *testing.T) {
	c := ResolveConfig(&v1alpha1.ExposureConfig{}, infra())
	if c.NetworkID != "net" || c.SubnetID != "nodes" || c.SubnetCIDR != "198.18.0.0/24" || c.FloatingNetworkID != "ext" || c.FloatingPoolName != "public" {
		t.Errorf("defaults: %+v", c)
	}
	c = ResolveConfig(&v1alpha1.ExposureConfig{FloatingPoolName: new("other-pool")}, infra())
	if c.FloatingNetworkID != "" || c.FloatingPoolName != "other-pool" {
		t.Errorf("another pool must be looked up by name: %+v", c)
	}
	c = ResolveConfig(&v1alpha1.ExposureConfig{SubnetID: new("elsewhere")}, infra())
	if c.SubnetCIDR != "" {
		t.Errorf("unknown subnet must be read from Neutron: %+v", c)
	}
	c = ResolveConfig(&v1alpha1.ExposureConfig{InternalOnly: new(true)}, infra())
	if c.FloatingNetworkID != "" || !c.InternalOnly {
		t.Errorf("internal only: %+v", c)
	}
}

func TestValidate(t *testing.T) {
	root := field.NewPath("spec.providerConfig")
	d := func(s string) *metav1.Duration { v, _ := time.ParseDuration(s); return &metav1.Duration{Duration: v} }
	for _, tc := range []struct {
		name string
		cfg  v1alpha1.ExposureConfig
		want []string
	}{
		{"valid", v1alpha1.ExposureConfig{VIPAddress: new("198.18.0.7"), Agent: &v1alpha1.AgentConfig{LeaseDuration: d("3s"), RenewDeadline: d("2.5s"), RetryPeriod: d("1s"), VIPLifetime: d("2s")}}, nil},
		{"malformed ip", v1alpha1.ExposureConfig{VIPAddress: new("198.18.0.300"), FloatingIP: new("x")}, []string{"spec.providerConfig.floatingIP", "spec.providerConfig.vipAddress"}},
		{"pool twice", v1alpha1.ExposureConfig{FloatingPoolName: new("a"), FloatingNetworkID: new("b")}, []string{"spec.providerConfig.floatingNetworkID"}},
		{"a floating-IP probe without a floating IP", v1alpha1.ExposureConfig{InternalOnly: new(true), ProbeFloatingIP: new(false)}, []string{"spec.providerConfig.probeFloatingIP"}},
		{"floating ip with internal only", v1alpha1.ExposureConfig{FloatingIP: new("198.19.0.5"), InternalOnly: new(true)}, []string{"spec.providerConfig.floatingIP"}},
		{"retry not below renew", v1alpha1.ExposureConfig{Agent: &v1alpha1.AgentConfig{RetryPeriod: d("1.5s")}}, []string{"spec.providerConfig.agent.renewDeadline"}},
		{"renew not below lease", v1alpha1.ExposureConfig{Agent: &v1alpha1.AgentConfig{RenewDeadline: d("1.4s"), LeaseDuration: d("1.4s")}}, []string{"spec.providerConfig.agent.leaseDuration"}},
		{"lifetime lapses before a renewal", v1alpha1.ExposureConfig{Agent: &v1alpha1.AgentConfig{VIPLifetime: d("1s"), RetryPeriod: d("1.3s")}}, []string{"spec.providerConfig.agent.retryPeriod"}},
		{"lifetime fraction", v1alpha1.ExposureConfig{Agent: &v1alpha1.AgentConfig{VIPLifetime: d("1500ms")}}, []string{"spec.providerConfig.agent.vipLifetime"}},
		{"negative", v1alpha1.ExposureConfig{Agent: &v1alpha1.AgentConfig{ARPInterval: d("-1s"), HealthCheck: &v1alpha1.HealthCheck{FailureThreshold: new(int32(0))}}}, []string{"spec.providerConfig.agent.arpInterval", "spec.providerConfig.agent.healthCheck.failureThreshold"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateConfig(&tc.cfg, root)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("fields %v, want %v (%v)", got, tc.want, errs)
			}
		})
	}
}

func TestValidateResolved(t *testing.T) {
	root := field.NewPath("spec.providerConfig")
	c := ResolveConfig(&v1alpha1.ExposureConfig{VIPAddress: new("198.19.0.7")}, infra())
	errs := ValidateResolved(c, SubnetFacts{NetworkID: c.SubnetNetworkID, CIDR: c.SubnetCIDR}, root)
	if len(errs) != 1 || errs[0].Field != "spec.providerConfig.vipAddress" {
		t.Errorf("VIP outside the subnet: %v", errs)
	}
	c = ResolveConfig(&v1alpha1.ExposureConfig{SubnetID: new("foreign")}, infra())
	errs = ValidateResolved(c, SubnetFacts{NetworkID: "another-net", CIDR: "10.1.0.0/24"}, root)
	if len(errs) != 1 || errs[0].Field != "spec.providerConfig.subnetID" {
		t.Errorf("subnet not in network: %v", errs)
	}
	c = ResolveConfig(&v1alpha1.ExposureConfig{SubnetID: new("v6")}, infra())
	errs = ValidateResolved(c, SubnetFacts{NetworkID: c.NetworkID, CIDR: "2001:2:0:10::/64"}, root)
	if len(errs) != 1 || errs[0].Field != "spec.providerConfig.subnetID" || !strings.Contains(errs[0].Detail, "the shoot's ipFamilies are [IPv4]") {
		t.Errorf("IPv6 subnet: %v", errs)
	}
	errs = ValidateResolved(ResolveConfig(&v1alpha1.ExposureConfig{}, &InfrastructureStatus{}), SubnetFacts{}, root)
	if len(errs) != 3 {
		t.Errorf("without Infrastructure everything is required: %v", errs)
	}
}
