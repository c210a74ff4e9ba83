// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// ValidateImplementation checks the choice of the agent and refuses the settings that do
// not apply to the chosen implementation (fldPath is the agent config). Upstream kube-vip
// has no kernel lifetime on the VIP, no periodic gratuitous ARP interval of ours and no
// health gate; kube-vip-agent's image is the extension's own and cannot be overridden.
// For kube-vip it also requires leaseDuration > renewDeadline > retryPeriod as given
// (kube-vip-agent's own rules are checked elsewhere).
func ValidateImplementation(agent *v1alpha1.AgentConfig, fldPath *field.Path) field.ErrorList {
	if agent == nil {
		return nil
	}
	var errs field.ErrorList
	impl := v1alpha1.ImplementationOf(agent)
	if !slices.Contains(v1alpha1.AgentImplementations(), impl) {
		supported := make([]string, 0, 2)
		for _, i := range v1alpha1.AgentImplementations() {
			supported = append(supported, string(i))
		}
		return field.ErrorList{field.NotSupported(fldPath.Child("implementation"), impl, supported)}
	}
	notFor := func(name string, set bool) {
		if set {
			errs = append(errs, field.Forbidden(fldPath.Child(name), fmt.Sprintf("does not apply to implementation %s", impl)))
		}
	}
	switch impl {
	case v1alpha1.AgentImplementationKubeVIP:
		notFor("vipLifetime", agent.VIPLifetime != nil)
		notFor("arpInterval", agent.ARPInterval != nil)
		notFor("healthCheck", agent.HealthCheck != nil)
		if agent.Image != nil && *agent.Image == "" {
			errs = append(errs, field.Invalid(fldPath.Child("image"), "", "must not be empty when set"))
		}
		lease, renew, retry := agent.LeaseDuration, agent.RenewDeadline, agent.RetryPeriod
		if lease != nil && renew != nil && lease.Duration <= renew.Duration {
			errs = append(errs, field.Invalid(fldPath.Child("leaseDuration"), lease.Duration.String(), "must be longer than renewDeadline"))
		}
		if renew != nil && retry != nil && renew.Duration <= retry.Duration {
			errs = append(errs, field.Invalid(fldPath.Child("renewDeadline"), renew.Duration.String(), "must be longer than retryPeriod"))
		}
	default:
		notFor("image", agent.Image != nil)
	}
	return errs
}
