// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ExposureConfig configures how the kube-apiserver of a self-hosted shoot is exposed
// through a virtual IP on OpenStack. Every field is optional; the defaults come from the
// OpenStack InfrastructureStatus of the shoot and from the agent's built-in timings.
type ExposureConfig struct {
	metav1.TypeMeta `json:",inline"`

	// NetworkID is the Neutron network of the control-plane nodes.
	// Default: status.providerStatus.networks.id of the Infrastructure.
	// +optional
	NetworkID *string `json:"networkID,omitempty"`
	// SubnetID is the subnet in which the virtual IP is reserved. It must belong to NetworkID.
	// Default: the subnet with purpose "nodes" of the Infrastructure.
	// +optional
	SubnetID *string `json:"subnetID,omitempty"`
	// SubnetIDs are the subnets of the virtual IPs, at most one per IP family: the VIP port
	// gets one fixed IP in each. Mutually exclusive with SubnetID. A family of the shoot's
	// spec.networking.ipFamilies that no subnet here serves takes the Infrastructure's
	// subnet of that family (purpose "nodes" or "nodes-ipv6").
	// +optional
	SubnetIDs []string `json:"subnetIDs,omitempty"`
	// FloatingPoolName is the name of the external network that floating IPs come from.
	// Mutually exclusive with FloatingNetworkID.
	// Default: status.providerStatus.networks.floatingPool of the Infrastructure.
	// +optional
	FloatingPoolName *string `json:"floatingPoolName,omitempty"`
	// FloatingNetworkID is the ID of the external network that floating IPs come from.
	// Mutually exclusive with FloatingPoolName.
	// +optional
	FloatingNetworkID *string `json:"floatingNetworkID,omitempty"`
	// FloatingIP is an existing, pre-allocated floating IP address to adopt instead of
	// allocating one. On deletion it is only disassociated and stays with the project.
	// Must not be set together with InternalOnly.
	// +optional
	FloatingIP *string `json:"floatingIP,omitempty"`
	// VIPAddress is a fixed IP address in the subnet to use as the virtual IP.
	// Default: Neutron picks a free address from the subnet's allocation pools.
	// +optional
	VIPAddress *string `json:"vipAddress,omitempty"`
	// InternalOnly exposes the kube-apiserver on the virtual IP only: no floating IP is
	// allocated and status.ingress carries the virtual IP. Default: false.
	// +optional
	InternalOnly *bool `json:"internalOnly,omitempty"`
	// ProbeFloatingIP makes Succeeded require that the floating IP accepts connections on
	// spec.port from the controller (hairpin through the Neutron router), besides the VIP:
	// only then is the path that DNS points at (router, floating IP, security group)
	// proven. Set it to false on clouds whose routers do not hairpin; the status then says
	// that only the VIP was proven (frontDoorPath: VIP). Default: true. Must not be set
	// with InternalOnly.
	// +optional
	ProbeFloatingIP *bool `json:"probeFloatingIP,omitempty"`
	// Agent tunes the kube-vip-agent DaemonSet on the control-plane nodes.
	// +optional
	Agent *AgentConfig `json:"agent,omitempty"`
}

// AgentConfig tunes the node agent that holds the virtual IP. Zero values take the
// defaults given per field.
type AgentConfig struct {
	// Implementation chooses the node agent: kube-vip-agent (this extension's own agent,
	// with a health gate on the local kube-apiserver and a kernel lifetime on the VIP) or
	// kube-vip (upstream kube-vip in ARP control-plane mode). Default: kube-vip-agent.
	// Changing it on a live exposure removes the old agent's pods before the new agent
	// starts. See docs/kube-vip.md.
	// +optional
	Implementation *AgentImplementation `json:"implementation,omitempty"`
	// Image overrides the kube-vip image of this exposure (implementation kube-vip only).
	// Default: the image the extension is deployed with.
	// +optional
	Image *string `json:"image,omitempty"`
	// Interface is the network interface that carries the virtual IP.
	// Default: the interface with an address in the virtual IP's subnet, else the
	// interface of the default route.
	// +optional
	Interface *string `json:"interface,omitempty"`
	// LeaseDuration is how long followers wait, after the last renewal they observed,
	// before they take over the Lease. Default: 1.47s.
	// +optional
	LeaseDuration *metav1.Duration `json:"leaseDuration,omitempty"`
	// RenewDeadline is how long the leader keeps the virtual IP after the start of its
	// last successful renewal; it must be shorter than LeaseDuration. Default: 1.36s.
	// +optional
	RenewDeadline *metav1.Duration `json:"renewDeadline,omitempty"`
	// RetryPeriod is the interval between the leader's renewals. Default: 1.06s.
	// +optional
	RetryPeriod *metav1.Duration `json:"retryPeriod,omitempty"`
	// VIPLifetime is the kernel lifetime (valid_lft) of the virtual IP on the leader's NIC,
	// in whole seconds; the leader refreshes it while it holds the Lease, so that the
	// address expires on its own when the agent stops; longer than the lease duration, so
	// that a dead agent's node serves until the next leader takes over. Default: 2s.
	// +optional
	VIPLifetime *metav1.Duration `json:"vipLifetime,omitempty"`
	// ARPInterval is the interval of the gratuitous ARP refresh while leader (after the
	// burst at takeover). Default: 5s.
	// +optional
	ARPInterval *metav1.Duration `json:"arpInterval,omitempty"`
	// HealthCheck configures the probe of the node's local kube-apiserver.
	// +optional
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`
}

// HealthCheck configures the agent's probe of the local kube-apiserver's /readyz.
type HealthCheck struct {
	// Period is the interval between probes. Default: 250ms.
	// +optional
	Period *metav1.Duration `json:"period,omitempty"`
	// Timeout bounds a single probe. Default: 500ms.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// FailureThreshold is the number of consecutive failed probes after which the node
	// gives up the virtual IP. Default: 3.
	// +optional
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ExposureStatus is written to status.providerStatus of the SelfHostedShootExposure. It
// records the OpenStack resources that this extension owns, so that they are found again
// and deleted exactly.
type ExposureStatus struct {
	metav1.TypeMeta `json:",inline"`

	// Identity names the cluster on the OpenStack resources (port name, tags, floating IP
	// description). It is derived once, at the first creation, and reused from here after,
	// so that a later change of the inputs it is derived from never orphans the resources.
	// +optional
	Identity string `json:"identity,omitempty"`
	// Owner is the UID the exposure had when it first created OpenStack resources, or the
	// owner of the lost exposure of the same Shoot whose VIP port it took over; the VIP port
	// carries it as a tag and the floating IP in its description. It is recorded once and
	// wins over the exposure's current UID. Empty for exposures created before owners were
	// recorded: their resources carry no owner.
	// +optional
	Owner string `json:"owner,omitempty"`
	// Ingress is the front-door address first reported in status.ingress (the floating IP,
	// or the VIP of an internal-only exposure). Gardener copies it into DNS once, so it
	// never changes for the life of the exposure: changes that would move it are refused.
	// +optional
	Ingress string `json:"ingress,omitempty"`
	// FrontDoorPath is the path the front-door check proves before Succeeded:
	// FrontDoorPathFloatingIP (the VIP and, through the router, the floating IP accept
	// connections on spec.port), FrontDoorPathVIP (the VIP only: internal-only, or
	// probeFloatingIP: false) or empty (not probed, controller option).
	// +optional
	FrontDoorPath string `json:"frontDoorPath,omitempty"`
	// NetworkID is the network of the virtual IP port.
	NetworkID string `json:"networkID,omitempty"`
	// SubnetID is the subnet of the virtual IP.
	SubnetID string `json:"subnetID,omitempty"`
	// PortID is the ID of the unbound Neutron port that reserves the virtual IP.
	PortID string `json:"portID,omitempty"`
	// VIPAddress is the virtual IP address.
	VIPAddress string `json:"vipAddress,omitempty"`
	// OtherVIPs are the VIPs of the exposure's other IP families (the IPv6 VIP of a
	// dual-stack exposure): more fixed IPs of the same VIP port. VIPAddress stays the VIP
	// of the first subnet (IPv4 whenever the exposure has IPv4), and like it these never
	// change.
	// +optional
	OtherVIPs []FamilyVIP `json:"otherVIPs,omitempty"`
	// FloatingIPID is the ID of the floating IP associated with the virtual IP port.
	// +optional
	FloatingIPID string `json:"floatingIPID,omitempty"`
	// FloatingIPAddress is the floating IP address.
	// +optional
	FloatingIPAddress string `json:"floatingIPAddress,omitempty"`
	// FloatingNetworkID is the external network (floating pool) of the floating IP; the
	// pool cannot change while the floating IP exists.
	// +optional
	FloatingNetworkID string `json:"floatingNetworkID,omitempty"`
	// FloatingIPAdopted is true when the floating IP was pre-allocated by the user; it is
	// then disassociated, not released, on deletion.
	// +optional
	FloatingIPAdopted bool `json:"floatingIPAdopted,omitempty"`
	// NodePorts lists the control-plane node ports that carry the virtual IP as an allowed
	// address pair.
	// +optional
	NodePorts []NodePort `json:"nodePorts,omitempty"`
	// VIPHeldBy is the port that holds the recorded VIP after the VIP port was lost. While
	// it is set, no node port carries the VIP pair and no node has the pair label (so no
	// agent runs): the nodes must not answer for an address another port owns.
	// +optional
	VIPHeldBy string `json:"vipHeldBy,omitempty"`
	// InputsHash fingerprints every input of the OpenStack part of the last successful
	// reconciliation except spec.endpoints; while it is unchanged, an update of the
	// endpoints alone makes no OpenStack call.
	// +optional
	InputsHash string `json:"inputsHash,omitempty"`
	// VerifiedAt is when the OpenStack resources were last read back and found right.
	// +optional
	VerifiedAt *metav1.Time `json:"verifiedAt,omitempty"`
	// Agent reports the node agents, read again from the agents' Lease on every
	// reconciliation and agent refresh.
	// +optional
	Agent *AgentStatus `json:"agent,omitempty"`
	// Conditions tell what works: ConditionOpenStackVerified, ConditionAgentsReady and
	// ConditionVIPHeld. The exposure reports Succeeded only while all three are True,
	// unless the controller runs with --front-door-probe=off (tests without agents):
	// ConditionVIPHeld is then Unknown.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// The condition types of ExposureStatus.Conditions.
const (
	// ConditionOpenStackVerified is True when the VIP port, its floating IP and the node
	// pairs were last read back from Neutron and found right.
	ConditionOpenStackVerified = "OpenStackVerified"
	// ConditionAgentsReady is True when every agent pod the DaemonSet wants is ready.
	ConditionAgentsReady = "AgentsReady"
	// ConditionVIPHeld is True when a ready agent holds the current Lease and the VIP
	// answers on spec.port.
	ConditionVIPHeld = "VIPHeld"
)

// FamilyVIP is a VIP of one more IP family: a fixed IP of the VIP port in its subnet.
type FamilyVIP struct {
	// SubnetID is the subnet of the VIP.
	SubnetID string `json:"subnetID"`
	// Address is the VIP.
	Address string `json:"address"`
}

// NodePort is a control-plane node's Neutron port that carries the virtual IP.
type NodePort struct {
	// NodeName is the name of the Node.
	NodeName string `json:"nodeName"`
	// PortID is the ID of the node's Neutron port.
	PortID string `json:"portID"`
	// PortSecurityDisabled is true when the port has port security disabled: it passes the
	// virtual IP without an allowed address pair, so none is added.
	// +optional
	PortSecurityDisabled bool `json:"portSecurityDisabled,omitempty"`
}

// AgentStatus reports the kube-vip-agent DaemonSet and the current holder of the VIP.
type AgentStatus struct {
	// DesiredPods is the number of agent pods the DaemonSet wants.
	DesiredPods int32 `json:"desiredPods"`
	// ReadyPods is the number of agent pods that are ready.
	ReadyPods int32 `json:"readyPods"`
	// LeaseHolder is the node that currently holds the Lease, and with it the virtual IP.
	// +optional
	LeaseHolder string `json:"leaseHolder,omitempty"`
	// HolderSince is when the LeaseHolder acquired the Lease (its acquireTime).
	// +optional
	HolderSince *metav1.Time `json:"holderSince,omitempty"`
	// HolderReady is true when the Lease is current (renewed within its duration) and the
	// agent pod on the LeaseHolder's node is Ready.
	// +optional
	HolderReady bool `json:"holderReady,omitempty"`
}

// The paths of ExposureStatus.FrontDoorPath.
const (
	FrontDoorPathFloatingIP = "FloatingIP"
	FrontDoorPathVIP        = "VIP"
)
