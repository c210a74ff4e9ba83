// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

const (
	// KubeVIPName is the name of the ServiceAccount, Role, RoleBinding and DaemonSet of
	// upstream kube-vip: not `kube-vip`, the name of a user's own kube-vip from its Helm
	// chart.
	KubeVIPName = "gardener-kube-vip"
	// KubeVIPContainerName is the name of kube-vip's container in its pods.
	KubeVIPContainerName = "kube-vip"
	// KubeVIPLeaseName is the Lease the kube-vip pods elect their leader with: their own,
	// not kube-vip-agent's, and none a user's kube-vip uses (plndr-cp-lock, plndr-svcs-lock).
	KubeVIPLeaseName = "gardener-kube-vip"
	// LegacyKubeVIPName and LegacyKubeVIPLeaseName are the names earlier releases gave
	// upstream kube-vip's objects and Lease; see legacyKubeVIPNames.
	LegacyKubeVIPName      = "kube-vip"
	LegacyKubeVIPLeaseName = "kube-vip-cp"
	// KubeVIPMetricsAddress is where kube-vip serves its Prometheus metrics: host network,
	// so bound to the loopback address only, and off kube-vip's default port 2112, which a
	// user's own kube-vip from its Helm chart binds on every address of the node (whichever
	// of the two started second could not serve its metrics).
	KubeVIPMetricsAddress = "127.0.0.1:9483"
	// DefaultAPIServerPort is the kube-apiserver port when the spec gives none.
	DefaultAPIServerPort = 6443
	// KubeVIPARPRate is kube-vip's vip_arpRate in milliseconds: the tick on which the leader
	// (re)adds the VIP to the NIC and sends a gratuitous ARP. kube-vip's default, 3000, can
	// delay the VIP by 3 s after a takeover; 1000 bounds that by 1 s at one ARP packet per
	// second (kube-vip refuses less than 500).
	KubeVIPARPRate = 1000
)

// KubeVIPTimings are kube-vip's leader-election timings in whole seconds.
type KubeVIPTimings struct {
	LeaseDuration, RenewDeadline, RetryPeriod int
}

// kubeVIPTimings maps the agent timings of the provider config to kube-vip's whole
// seconds; a timing the provider config leaves unset is 3 s / 2 s / 1 s (the closest to
// kube-vip-agent's sub-second defaults that client-go accepts). Each is rounded up, so
// that no timing becomes shorter than asked (and none zero). Then, as client-go's leader
// election requires, RenewDeadline is raised above 1.2 x RetryPeriod and LeaseDuration
// above RenewDeadline.
func kubeVIPTimings(spec Spec) KubeVIPTimings {
	lease, renew, retry := 3*time.Second, 2*time.Second, time.Second
	if a := spec.Agent; a != nil {
		lease = durationOr(a.LeaseDuration, lease)
		renew = durationOr(a.RenewDeadline, renew)
		retry = durationOr(a.RetryPeriod, retry)
	}
	t := KubeVIPTimings{
		LeaseDuration: ceilSeconds(lease),
		RenewDeadline: ceilSeconds(renew),
		RetryPeriod:   ceilSeconds(retry),
	}
	// client-go: renewDeadline > JitterFactor (1.2) x retryPeriod.
	if minRenew := int(math.Floor(1.2*float64(t.RetryPeriod))) + 1; t.RenewDeadline < minRenew {
		t.RenewDeadline = minRenew
	}
	if t.LeaseDuration <= t.RenewDeadline {
		t.LeaseDuration = t.RenewDeadline + 1
	}
	return t
}

func ceilSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

func envVar(name, value string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValue(value)
}

// kubeVIPEnv configures kube-vip through its environment: a control-plane VIP in ARP mode
// with leader election on its own Lease, services off. kube-vip takes the in-cluster
// config when neither /etc/kubernetes/admin.conf nor $HOME/.kube/config exists (neither
// does in its image); KUBERNETES_SERVICE_HOST/PORT point it at the node's own
// kube-apiserver, so it needs neither kube-proxy nor the kubernetes Service's ClusterIP,
// and it reaches the API even while the VIP is down (kube-vip issue #721).
func (s Spec) kubeVIPEnv() []*corev1ac.EnvVarApplyConfiguration {
	port := strconv.Itoa(int(s.apiServerPort()))
	t := kubeVIPTimings(s)
	env := []*corev1ac.EnvVarApplyConfiguration{
		envVar("vip_arp", "true"),
		envVar("vip_arpRate", strconv.Itoa(KubeVIPARPRate)),
		envVar("cp_enable", "true"),
		envVar("cp_namespace", s.Namespace),
		envVar("svc_enable", "false"),
		envVar("vip_leaderelection", "true"),
		envVar("vip_leasename", KubeVIPLeaseName),
		envVar("vip_leaseduration", strconv.Itoa(t.LeaseDuration)),
		envVar("vip_renewdeadline", strconv.Itoa(t.RenewDeadline)),
		envVar("vip_retryperiod", strconv.Itoa(t.RetryPeriod)),
		envVar("address", strings.Join(s.VIPs(), ",")), // kube-vip v1.0.0 splits it on commas: one VIP per family
		envVar("port", port),
		envVar("prometheus_server", KubeVIPMetricsAddress),
		envVar("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
		envVar("KUBERNETES_SERVICE_PORT", port),
		corev1ac.EnvVar().
			WithName("vip_nodename").
			WithValueFrom(corev1ac.EnvVarSource().
				WithFieldRef(corev1ac.ObjectFieldSelector().
					WithAPIVersion("v1").
					WithFieldPath("spec.nodeName"))),
	}
	if nic := s.interfaceName(); nic != "" {
		env = append(env, envVar("vip_interface", nic))
	}
	return env
}

// kubeVIPContainer runs `kube-vip manager` (the image's entrypoint is the binary) as root
// with only NET_ADMIN (the VIP on the NIC) and NET_RAW (gratuitous ARP). kube-vip has no
// health endpoint in this mode, so there are no probes.
func kubeVIPContainer(spec Spec) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(KubeVIPContainerName).
		WithImage(spec.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithArgs("manager").
		WithEnv(spec.kubeVIPEnv()...).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("32Mi"),
			}).
			WithLimits(corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("128Mi"),
			})).
		WithSecurityContext(netAdminSecurityContext())
}

// RenderDaemonSet returns the DaemonSet that Deploy applies for spec, as a typed object
// (tests start the real binaries from it).
func RenderDaemonSet(spec Spec) (*appsv1.DaemonSet, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("invalid agent spec: %w", err)
	}
	raw, err := json.Marshal(spec.daemonSet())
	if err != nil {
		return nil, fmt.Errorf("encoding the DaemonSet: %w", err)
	}
	ds := &appsv1.DaemonSet{}
	if err := json.Unmarshal(raw, ds); err != nil {
		return nil, fmt.Errorf("decoding the DaemonSet: %w", err)
	}
	return ds, nil
}
