// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

func TestAgentImage(t *testing.T) {
	kubeVIP := ptr.To(v1alpha1.AgentImplementationKubeVIP)
	for _, tc := range []struct {
		name        string
		kubeVIPFlag string
		agent       *v1alpha1.AgentConfig
		want        string
		configError bool
	}{
		{"default implementation", "kube-vip:flag", nil, "agent:flag", false},
		{"kube-vip-agent named", "kube-vip:flag", &v1alpha1.AgentConfig{Implementation: ptr.To(v1alpha1.AgentImplementationKubeVIPAgent)}, "agent:flag", false},
		{"kube-vip from the flag", "kube-vip:flag", &v1alpha1.AgentConfig{Implementation: kubeVIP}, "kube-vip:flag", false},
		{"kube-vip overridden", "kube-vip:flag", &v1alpha1.AgentConfig{Implementation: kubeVIP, Image: ptr.To("kube-vip:own")}, "kube-vip:own", false},
		{"kube-vip without any image", "", &v1alpha1.AgentConfig{Implementation: kubeVIP}, "", true},
	} {
		a := &Actuator{opts: ActuatorOptions{AgentImage: "agent:flag", KubeVIPImage: tc.kubeVIPFlag}}
		got, err := a.agentImage(tc.agent)
		if got != tc.want || (err != nil) != tc.configError {
			t.Errorf("%s: %q, %v; want %q, error %v", tc.name, got, err, tc.want, tc.configError)
		}
		if tc.configError && !slices.Contains(v1beta1helper.ExtractErrorCodes(err), gardencorev1beta1.ErrorConfigurationProblem) {
			t.Errorf("%s: %v is not a configuration problem", tc.name, err)
		}
	}
}

// TestValidateConfigImplementation: kube-vip-agent's timing rules apply only to it, and
// settings of the other implementation are refused with their field paths.
func TestValidateConfigImplementation(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	root := field.NewPath("spec.providerConfig")
	// 3s/2s/1s breaks none of kube-vip's rules; with a 1s VIP lifetime kube-vip-agent accepts it too.
	kubeVIP := &v1alpha1.ExposureConfig{Agent: &v1alpha1.AgentConfig{
		Implementation: ptr.To(v1alpha1.AgentImplementationKubeVIP),
		LeaseDuration:  d(3 * time.Second), RenewDeadline: d(2 * time.Second), RetryPeriod: d(time.Second),
	}}
	if errs := ValidateConfig(kubeVIP, root); len(errs) != 0 {
		t.Errorf("kube-vip with whole-second timings: %v", errs)
	}
	kubeVIP.Agent.VIPLifetime = d(time.Second)
	errs := ValidateConfig(kubeVIP, root)
	if len(errs) != 1 || errs[0].Field != "spec.providerConfig.agent.vipLifetime" || errs[0].Type != field.ErrorTypeForbidden {
		t.Errorf("kube-vip with vipLifetime: %v", errs)
	}
	ours := &v1alpha1.ExposureConfig{Agent: &v1alpha1.AgentConfig{Image: ptr.To("x")}}
	errs = ValidateConfig(ours, root)
	if len(errs) != 1 || errs[0].Field != "spec.providerConfig.agent.image" {
		t.Errorf("kube-vip-agent with image: %v", errs)
	}
}
