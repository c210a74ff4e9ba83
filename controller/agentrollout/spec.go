// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package agentrollout deploys the node agent onto the control-plane nodes of a self-hosted
// shoot, either kube-vip-agent or upstream kube-vip (agent.implementation): its
// ServiceAccount, the Role and RoleBinding that allow it exactly its Lease, and the
// DaemonSet. Objects are written with server-side apply; deletion, and a switch between the
// implementations, wait until no pod of the old agent is left, so that no node still holds
// the virtual IP when the caller goes on (releasing the Neutron port, starting the other
// agent).
package agentrollout

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener/gardener-extension-kube-vip/agent/peers"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

const (
	// Name is the name of the ServiceAccount, Role, RoleBinding, DaemonSet and container.
	Name = "kube-vip-agent"
	// LeaseName is the Lease the agents elect their leader with (in the deploy namespace).
	LeaseName = "kube-vip-agent"
	// FieldOwner is the field manager of every server-side apply of this package.
	FieldOwner = "gardener-extension-kube-vip"

	// LabelAppName and LabelManagedBy are set on every object (and the agent pods).
	LabelAppName   = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "gardener-extension-kube-vip"

	// PairLabel is the Node label the controller sets once the node's Neutron port carries
	// the VIP as an allowed address pair (or has port security disabled and needs none),
	// and removes after it released the pair. Both agent DaemonSets require it with the
	// value PairLabelValue(VIP), besides the control-plane label, so that no agent pod
	// starts on a node, and can win the Lease there, before port security lets the VIP
	// through.
	PairLabel = "kube-vip.extensions.gardener.cloud/vip-pair"

	// MetricsPort is the port of the agent's /metrics, /healthz and /readyz on the node's
	// address, and of the Service of the same name as the agent.
	MetricsPort = 9482

	// PeerNamespace holds the kube-apiservers' EndpointSlice that the agent reads to find
	// the other control-plane nodes' kube-apiservers, and the Role and RoleBinding that
	// allow it that one object.
	PeerNamespace = peers.Namespace
)

// Spec describes the agent to deploy.
type Spec struct {
	// Namespace receives all objects; for a self-hosted shoot it is kube-system. The agents'
	// Lease lives there, too.
	Namespace string
	// Implementation chooses the agent; empty means kube-vip-agent.
	Implementation v1alpha1.AgentImplementation
	// Image is the image of the chosen implementation.
	Image string
	// VIP is the virtual IP address (of the shoot's first IP family); the node label and the
	// DaemonSet's selector name it.
	VIP string
	// OtherVIPs are the VIPs of the exposure's other IP families (dual-stack): the agent
	// holds them together with VIP, at most one per family.
	OtherVIPs []string
	// Interface is the NIC for the VIP. Empty takes Agent.Interface, and when that is
	// unset too the agent picks the NIC itself.
	Interface string
	// APIServerPort is the port of the kube-apiserver on each control-plane node; the agent
	// probes https://127.0.0.1:<port>. Zero leaves the agent's default (6443).
	APIServerPort int32
	// Agent carries the optional timings from the provider config.
	Agent *v1alpha1.AgentConfig
}

// Validate reports what is missing or malformed in the spec.
func (s Spec) Validate() error {
	var errs []error
	if s.Namespace == "" {
		errs = append(errs, errors.New("namespace is required"))
	}
	if s.Image == "" {
		errs = append(errs, errors.New("image is required"))
	}
	if impl := s.implementation(); !slices.Contains(v1alpha1.AgentImplementations(), impl) {
		errs = append(errs, fmt.Errorf("implementation %q is not supported", impl))
	}
	seen := map[bool]string{} // is IPv4 -> the VIP of that family
	for _, v := range s.VIPs() {
		a, err := netip.ParseAddr(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("vip %q is not an IP address: %w", v, err))
			continue
		}
		if other, dup := seen[a.Unmap().Is4()]; dup {
			errs = append(errs, fmt.Errorf("vips %s and %s are of one IP family: at most one VIP per family", other, v))
		}
		seen[a.Unmap().Is4()] = v
	}
	if s.APIServerPort < 0 || s.APIServerPort > 65535 {
		errs = append(errs, fmt.Errorf("apiserver port %d is out of range", s.APIServerPort))
	}
	return errors.Join(errs...)
}

// implementation returns the chosen implementation, with the default.
func (s Spec) implementation() v1alpha1.AgentImplementation {
	if s.Implementation == "" {
		return v1alpha1.AgentImplementationKubeVIPAgent
	}
	return s.Implementation
}

// names returns the object names of the chosen implementation.
func (s Spec) names() objectNames { return namesOf(s.implementation()) }

// apiServerPort is the port of the node-local kube-apiserver.
func (s Spec) apiServerPort() int32 {
	if s.APIServerPort > 0 {
		return s.APIServerPort
	}
	return DefaultAPIServerPort
}

// interfaceName is the NIC the agent is told to use, or "" for its own choice.
func (s Spec) interfaceName() string {
	if s.Interface != "" {
		return s.Interface
	}
	if s.Agent != nil && s.Agent.Interface != nil {
		return *s.Agent.Interface
	}
	return ""
}

// VIPs are all the VIPs of the exposure, VIP first.
func (s Spec) VIPs() []string { return append([]string{s.VIP}, s.OtherVIPs...) }

// args renders the agent's command line. Timings are passed only when the provider config
// sets them: the agent owns the defaults (docs/design.md, "Agent CLI"). The node name comes
// from the environment (KUBE_VIP_NODE_NAME, downward API).
func (s Spec) args() []string {
	args := []string{
		"--vip=" + strings.Join(s.VIPs(), ","),
		"--lease-name=" + LeaseName,
		"--lease-namespace=" + s.Namespace,
		"--metrics-address=" + metricsAddress(),
	}
	if nic := s.interfaceName(); nic != "" {
		args = append(args, "--interface="+nic)
	}
	if s.APIServerPort > 0 {
		args = append(args, "--apiserver-url=https://127.0.0.1:"+strconv.Itoa(int(s.APIServerPort)))
	}
	a := s.Agent
	if a == nil {
		return args
	}
	duration := func(flag string, d *metav1.Duration) {
		if d != nil {
			args = append(args, "--"+flag+"="+d.Duration.String())
		}
	}
	duration("lease-duration", a.LeaseDuration)
	duration("renew-deadline", a.RenewDeadline)
	duration("retry-period", a.RetryPeriod)
	duration("vip-lifetime", a.VIPLifetime)
	duration("arp-interval", a.ARPInterval)
	if h := a.HealthCheck; h != nil {
		duration("health-period", h.Period)
		duration("health-timeout", h.Timeout)
		if h.FailureThreshold != nil {
			args = append(args, "--health-failure-threshold="+strconv.Itoa(int(*h.FailureThreshold)))
		}
	}
	return args
}

// PairLabelValue is the value of PairLabel for a VIP: the IPv4 address as it is, an IPv6
// address as 32 hex digits (a label value cannot hold ':'). It ties the label to the VIP,
// which never changes during the exposure's life.
func PairLabelValue(vip string) string {
	addr, err := netip.ParseAddr(vip)
	if err != nil || addr.Is4() {
		return vip
	}
	return hex.EncodeToString(addr.AsSlice())
}
