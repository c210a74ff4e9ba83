// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
)

var decoder runtime.Decoder

func init() {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	decoder = serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder()
}

// ConfigSource tells where the provider config came from; it prefixes field paths.
type ConfigSource string

// Sources of the provider config.
const (
	SourceExposure ConfigSource = "spec.providerConfig"
	SourceShoot    ConfigSource = "shoot.spec.provider.workers[].controlPlane.exposure.extension.providerConfig"
	SourceNone     ConfigSource = "providerConfig"
)

// DecodeConfig decodes an ExposureConfig strictly: unknown fields and other kinds are
// errors. A nil or empty raw gives an empty config.
func DecodeConfig(raw *runtime.RawExtension) (*v1alpha1.ExposureConfig, error) {
	cfg := &v1alpha1.ExposureConfig{}
	if raw == nil || len(raw.Raw) == 0 {
		return cfg, nil
	}
	obj, gvk, err := decoder.Decode(raw.Raw, nil, cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding the provider config: %w", err)
	}
	decoded, ok := obj.(*v1alpha1.ExposureConfig)
	if !ok {
		return nil, fmt.Errorf("the provider config has kind %s, want ExposureConfig", gvk.Kind)
	}
	return decoded, nil
}

// InfrastructureStatus is the part of provider-openstack's InfrastructureStatus that this
// extension reads (read as JSON, without depending on provider-openstack's module).
type InfrastructureStatus struct {
	Networks struct {
		ID           string `json:"id"`
		FloatingPool struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"floatingPool"`
		Router struct {
			ID string `json:"id"`
		} `json:"router"`
		Subnets []InfrastructureSubnet `json:"subnets"`
	} `json:"networks"`
	SecurityGroups []struct {
		Purpose string `json:"purpose"`
		ID      string `json:"id"`
		Name    string `json:"name"`
	} `json:"securityGroups"`
}

// InfrastructureSubnet is a subnet of the InfrastructureStatus.
type InfrastructureSubnet struct {
	Purpose string `json:"purpose"`
	ID      string `json:"id"`
	CIDR    string `json:"cidr"`
}

// PurposeNodes is the purpose of the node subnet in the InfrastructureStatus.
const PurposeNodes = "nodes"

// DecodeInfrastructureStatus reads the InfrastructureStatus from raw JSON; nil gives an
// empty status.
func DecodeInfrastructureStatus(raw *runtime.RawExtension) (*InfrastructureStatus, error) {
	status := &InfrastructureStatus{}
	if raw == nil || len(raw.Raw) == 0 {
		return status, nil
	}
	if err := json.Unmarshal(raw.Raw, status); err != nil {
		return nil, fmt.Errorf("decoding the Infrastructure's providerStatus: %w", err)
	}
	return status, nil
}

func (s *InfrastructureStatus) subnet(id string) *InfrastructureSubnet {
	for i := range s.Networks.Subnets {
		if s.Networks.Subnets[i].ID == id {
			return &s.Networks.Subnets[i]
		}
	}
	return nil
}

func (s *InfrastructureStatus) nodeSubnet() *InfrastructureSubnet {
	for i := range s.Networks.Subnets {
		if s.Networks.Subnets[i].Purpose == PurposeNodes {
			return &s.Networks.Subnets[i]
		}
	}
	return nil
}

// Config is the provider config with the defaults of the InfrastructureStatus applied.
type Config struct {
	// Spec places the front door; package networking works on it.
	networking.Spec
	// SubnetCIDR and SubnetNetworkID are known when the subnet is in the
	// InfrastructureStatus; otherwise the actuator reads the subnet from Neutron.
	SubnetCIDR      string
	SubnetNetworkID string
	// ProbeFloatingIP: Succeeded requires the floating IP to answer too (default true).
	ProbeFloatingIP bool
	Agent           *v1alpha1.AgentConfig
	// Families are the VIP's subnets per IP family of a shoot with IPv6 (empty: IPv4
	// only, on SubnetID).
	Families []FamilySubnet
}

// NeedsFloatingIP tells whether the exposure has a floating IP.
func (c *Config) NeedsFloatingIP() bool { return !c.InternalOnly }

// ValidateConfig checks the provider config as given (fldPath is its root).
func ValidateConfig(cfg *v1alpha1.ExposureConfig, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if cfg.FloatingPoolName != nil && cfg.FloatingNetworkID != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("floatingNetworkID"), "must not be set together with floatingPoolName"))
	}
	internalOnly := cfg.InternalOnly != nil && *cfg.InternalOnly
	if internalOnly {
		for _, f := range []namedField{{"floatingIP", cfg.FloatingIP}, {"floatingPoolName", cfg.FloatingPoolName}, {"floatingNetworkID", cfg.FloatingNetworkID}} {
			if f.value != nil {
				errs = append(errs, field.Forbidden(fldPath.Child(f.name), "must not be set with internalOnly"))
			}
		}
		if cfg.ProbeFloatingIP != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("probeFloatingIP"), "must not be set with internalOnly: there is no floating IP to probe"))
		}
	}
	if cfg.FloatingIP != nil {
		if _, err := netip.ParseAddr(*cfg.FloatingIP); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("floatingIP"), *cfg.FloatingIP, "must be an IP address"))
		}
	}
	if cfg.VIPAddress != nil {
		if _, err := netip.ParseAddr(*cfg.VIPAddress); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("vipAddress"), *cfg.VIPAddress, "must be an IP address"))
		}
	}
	for _, f := range []namedField{{"networkID", cfg.NetworkID}, {"subnetID", cfg.SubnetID}, {"floatingNetworkID", cfg.FloatingNetworkID}, {"floatingPoolName", cfg.FloatingPoolName}} {
		if f.value != nil && *f.value == "" {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), "", "must not be empty when set"))
		}
	}
	errs = append(errs, validateAgent(cfg.Agent, fldPath.Child("agent"))...)
	return errs
}

func validateAgent(agent *v1alpha1.AgentConfig, fldPath *field.Path) field.ErrorList {
	if agent == nil {
		return nil
	}
	var errs field.ErrorList
	positive := func(d *metav1.Duration, name string) {
		if d != nil && d.Duration <= 0 {
			errs = append(errs, field.Invalid(fldPath.Child(name), d.Duration.String(), "must be positive"))
		}
	}
	positive(agent.LeaseDuration, "leaseDuration")
	positive(agent.RenewDeadline, "renewDeadline")
	positive(agent.RetryPeriod, "retryPeriod")
	positive(agent.ARPInterval, "arpInterval")
	positive(agent.VIPLifetime, "vipLifetime")

	errs = append(errs, agentrollout.ValidateImplementation(agent, fldPath)...)
	// kube-vip-agent refuses timings that break its rules; refuse them here, before rollout.
	if v1alpha1.ImplementationOf(agent) == v1alpha1.AgentImplementationKubeVIPAgent {
		def := timing.Defaults()
		t := timing.Timings{
			LeaseDuration: durationOr(agent.LeaseDuration, def.LeaseDuration),
			RenewDeadline: durationOr(agent.RenewDeadline, def.RenewDeadline),
			RetryPeriod:   durationOr(agent.RetryPeriod, def.RetryPeriod),
			VIPLifetime:   durationOr(agent.VIPLifetime, def.VIPLifetime),
		}
		for _, p := range t.Problems() {
			errs = append(errs, field.Invalid(fldPath.Child(string(p.Field)), p.Value.String(), p.Message))
		}
	}
	if agent.Interface != nil && *agent.Interface == "" {
		errs = append(errs, field.Invalid(fldPath.Child("interface"), "", "must not be empty when set"))
	}
	if hc := agent.HealthCheck; hc != nil {
		hcPath := fldPath.Child("healthCheck")
		if hc.Period != nil && hc.Period.Duration <= 0 {
			errs = append(errs, field.Invalid(hcPath.Child("period"), hc.Period.Duration.String(), "must be positive"))
		}
		if hc.Timeout != nil && hc.Timeout.Duration <= 0 {
			errs = append(errs, field.Invalid(hcPath.Child("timeout"), hc.Timeout.Duration.String(), "must be positive"))
		}
		if hc.FailureThreshold != nil && *hc.FailureThreshold < 1 {
			errs = append(errs, field.Invalid(hcPath.Child("failureThreshold"), *hc.FailureThreshold, "must be at least 1"))
		}
	}
	return errs
}

// SubnetFacts are what is known about the VIP's subnet, from the InfrastructureStatus or
// from Neutron.
type SubnetFacts struct {
	NetworkID string
	CIDR      string
}

// ValidateResolved checks the resolved config against the subnet (fldPath is the root of
// the provider config).
func ValidateResolved(c *Config, subnet SubnetFacts, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.NetworkID == "" {
		errs = append(errs, field.Required(fldPath.Child("networkID"), "not set, and the Infrastructure status names no network"))
	}
	if c.SubnetID == "" {
		errs = append(errs, field.Required(fldPath.Child("subnetID"), "not set, and the Infrastructure status names no subnet with purpose \"nodes\""))
	}
	if !c.InternalOnly && c.FloatingNetworkID == "" && c.FloatingPoolName == "" {
		errs = append(errs, field.Required(fldPath.Child("floatingPoolName"), "not set, and the Infrastructure status names no floating pool; set it or internalOnly"))
	}
	if len(errs) > 0 {
		return errs
	}
	if subnet.NetworkID != "" && subnet.NetworkID != c.NetworkID {
		errs = append(errs, field.Invalid(fldPath.Child("subnetID"), c.SubnetID, fmt.Sprintf("the subnet is not in network %s", c.NetworkID)))
	}
	// an IPv4-only shoot's VIP port is IPv4: a port on an IPv6 subnet would get no floating IP
	if p, err := netip.ParsePrefix(subnet.CIDR); err == nil && !p.Addr().Unmap().Is4() && len(c.Families) == 0 {
		errs = append(errs, field.Invalid(fldPath.Child("subnetID"), c.SubnetID, fmt.Sprintf("the subnet %s is IPv6, but the shoot's ipFamilies are [IPv4]", subnet.CIDR)))
	}
	return append(errs, validateVIPRange(c.VIPAddress, subnet.CIDR, fldPath)...)
}

// validateVIPRange checks that the VIP (if given) lies in the subnet's CIDR (if known).
func validateVIPRange(vip, cidr string, fldPath *field.Path) field.ErrorList {
	if vip == "" || cidr == "" {
		return nil
	}
	prefix, err := netip.ParsePrefix(cidr)
	addr, addrErr := netip.ParseAddr(vip)
	if err == nil && addrErr == nil && !prefix.Contains(addr) {
		return field.ErrorList{field.Invalid(fldPath.Child("vipAddress"), vip, fmt.Sprintf("must be in the subnet's range %s", cidr))}
	}
	return nil
}

type namedField struct {
	name  string
	value *string
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}
