// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

func TestArgsMinimal(t *testing.T) {
	spec := Spec{Namespace: "kube-system", Image: "agent:v1", VIP: "198.18.0.50"}
	want := []string{
		"--vip=198.18.0.50",
		"--lease-name=kube-vip-agent",
		"--lease-namespace=kube-system",
		"--metrics-address=[$(KUBE_VIP_HOST_IP)]:9482",
	}
	if got := spec.args(); !slices.Equal(got, want) {
		t.Fatalf("args = %q, want %q", got, want)
	}
}

func TestArgsFull(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	spec := Spec{
		Namespace:     "kube-system",
		Image:         "agent:v1",
		VIP:           "198.18.0.50",
		APIServerPort: 443,
		Agent: &v1alpha1.AgentConfig{
			Interface:     ptr.To("eth1"),
			LeaseDuration: d(3 * time.Second),
			RenewDeadline: d(2500 * time.Millisecond),
			VIPLifetime:   d(2 * time.Second),
			RetryPeriod:   d(time.Second),
			ARPInterval:   d(10 * time.Second),
			HealthCheck: &v1alpha1.HealthCheck{
				Period:           d(100 * time.Millisecond),
				Timeout:          d(300 * time.Millisecond),
				FailureThreshold: ptr.To[int32](3),
			},
		},
	}
	want := []string{
		"--vip=198.18.0.50",
		"--lease-name=kube-vip-agent",
		"--lease-namespace=kube-system",
		"--metrics-address=[$(KUBE_VIP_HOST_IP)]:9482",
		"--interface=eth1",
		"--apiserver-url=https://127.0.0.1:443",
		"--lease-duration=3s",
		"--renew-deadline=2.5s",
		"--retry-period=1s",
		"--vip-lifetime=2s",
		"--arp-interval=10s",
		"--health-period=100ms",
		"--health-timeout=300ms",
		"--health-failure-threshold=3",
	}
	if got := spec.args(); !slices.Equal(got, want) {
		t.Fatalf("args =\n%q\nwant\n%q", got, want)
	}

	// Spec.Interface wins over the provider config's.
	spec.Interface = "ens3"
	if got := spec.args(); !slices.Contains(got, "--interface=ens3") || slices.Contains(got, "--interface=eth1") {
		t.Fatalf("Spec.Interface not preferred: %q", got)
	}
}

func TestValidate(t *testing.T) {
	good := Spec{Namespace: "kube-system", Image: "agent:v1", VIP: "2001:db8::5", APIServerPort: 6443}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
	for name, spec := range map[string]Spec{
		"no namespace": {Image: "i", VIP: "198.18.0.50"},
		"no image":     {Namespace: "n", VIP: "198.18.0.50"},
		"bad vip":      {Namespace: "n", Image: "i", VIP: "198.18.0.500"},
		"no vip":       {Namespace: "n", Image: "i"},
		"bad port":     {Namespace: "n", Image: "i", VIP: "198.18.0.50", APIServerPort: 70000},
		"two IPv4":     {Namespace: "n", Image: "i", VIP: "198.18.0.50", OtherVIPs: []string{"198.18.0.51"}},
		"bad other":    {Namespace: "n", Image: "i", VIP: "198.18.0.50", OtherVIPs: []string{"2001:2::x"}},
	} {
		if err := spec.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// M6: the agent's timing margins need CPU when it wakes: a CPU request well above 10m (the
// cgroup's cpu.weight follows it), no CPU limit (CFS throttling), and a Go memory limit
// below the container's.
func TestAgentResourcesKeepTheMargins(t *testing.T) {
	c := container(Spec{Image: "agent:test", VIP: "198.18.0.10"})
	req, lim := c.Resources.Requests, c.Resources.Limits
	if cpu := req.Cpu(); cpu.MilliValue() < 100 {
		t.Errorf("CPU request %s, want at least 100m", cpu)
	}
	if _, ok := (*lim)[corev1.ResourceCPU]; ok {
		t.Error("a CPU limit is set: CFS throttling can stall the agent past its margins")
	}
	var goMem string
	for _, e := range c.Env {
		if *e.Name == "GOMEMLIMIT" {
			goMem = *e.Value
		}
	}
	if goMem == "" {
		t.Fatal("no GOMEMLIMIT: the agent would be OOM-killed at the limit instead of collecting harder")
	}
	if limit, err := resource.ParseQuantity(strings.TrimSuffix(goMem, "B")); err != nil || limit.Cmp(*lim.Memory()) >= 0 {
		t.Errorf("GOMEMLIMIT %q (%v), want one below the memory limit %s", goMem, err, lim.Memory())
	}
}

// TestPairLabelValue: the value is a valid label value for IPv4 and IPv6 VIPs, and two
// VIPs never share one.
func TestPairLabelValue(t *testing.T) {
	for vip, want := range map[string]string{
		"198.18.0.50":    "198.18.0.50",
		"fd00::1":        "fd000000000000000000000000000001",
		"::ffff:1.2.3.4": "00000000000000000000ffff01020304",
	} {
		got := PairLabelValue(vip)
		if got != want {
			t.Errorf("PairLabelValue(%s) = %q, want %q", vip, got, want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("PairLabelValue(%s) = %q is no label value: %v", vip, got, errs)
		}
	}
}

// A dual-stack exposure's agent holds one VIP per family: both in one --vip, the shoot's
// first family first.
func TestArgsDualStack(t *testing.T) {
	spec := Spec{Namespace: "kube-system", Image: "agent:v1", VIP: "2001:2:0:10::c8", OtherVIPs: []string{"198.18.0.200"}}
	if err := spec.Validate(); err != nil {
		t.Fatalf("dual-stack spec rejected: %v", err)
	}
	if got := spec.args(); !slices.Contains(got, "--vip=2001:2:0:10::c8,198.18.0.200") {
		t.Errorf("args %v, want --vip with both VIPs", got)
	}
}
