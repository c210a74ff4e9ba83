// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"net"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
)

// DefaultVerifyInterval is how long the OpenStack resources of an unchanged exposure are
// trusted: a healthy exposure is requeued after it and then reads them back (port,
// floating IP, node ports: three GETs, no write when nothing drifted). Changes of the
// provider config, the Infrastructure or the control-plane Nodes reconcile at once, and
// gardener.cloud/operation=reconcile verifies at once.
const DefaultVerifyInterval = 5 * time.Minute

// DefaultInfrastructureWait is the default of ActuatorOptions.InfrastructureWait.
const DefaultInfrastructureWait = 5 * time.Minute

// ActuatorOptions configure NewActuator.
type ActuatorOptions struct {
	// ClientFactory gives the Neutron clients. Required.
	ClientFactory openstack.ClientFactory
	// Agent rolls out the node agent. Default: agentrollout.New(mgr.GetClient()) reading
	// through the API reader, so that no cluster-wide informers for Pods are started.
	Agent AgentDeployer
	// AgentImage is the kube-vip-agent image.
	AgentImage string
	// KubeVIPImage is the default image of upstream kube-vip (agent.implementation
	// kube-vip); an exposure may override it with agent.image. Empty: such an exposure
	// must name its image.
	KubeVIPImage string
	// VerifyInterval, see DefaultVerifyInterval.
	VerifyInterval time.Duration
	// Clock is the clock for VerifyInterval and verifiedAt. Default: the real clock.
	Clock clock.PassiveClock
	// InfrastructureWait is how long a reconciliation waits, in Processing and without an
	// error, for the Infrastructure's status when the provider config alone is incomplete
	// (bootstrap: gardenadm reconciles both at once). Default: DefaultInfrastructureWait.
	InfrastructureWait time.Duration
	// MinBackoff and MaxBackoff bound the requeue delay after transient failures.
	// Defaults: 2s and 2m.
	MinBackoff, MaxBackoff time.Duration
	// FrontDoorProbe says how the front door is checked before Succeeded. Default:
	// FrontDoorTCP.
	FrontDoorProbe FrontDoorProbe
	// FrontDoorWait bounds the wait for the front door in one reconciliation. Default:
	// DefaultFrontDoorWait.
	FrontDoorWait time.Duration
	// AgentRefreshInterval, see DefaultAgentRefreshInterval.
	AgentRefreshInterval time.Duration
	// NodeName is the node the controller runs on (the downward API's spec.nodeName). A
	// door published without a floating IP whose hairpin crosses the router (an IPv6 VIP,
	// an internal-only VIP) is proven by the dial to the VIP alone; while another node
	// holds the VIP, that dial crosses the node network and the holder's port, and the
	// VIPHeld message says so. Empty: unknown, and the message says that the door was
	// reached from the controller's host only.
	NodeName string
	// Dial opens the TCP connection of FrontDoorTCP. Default: a net.Dialer in the
	// controller's network namespace.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Events records Events on the exposures. Default: the manager's recorder.
	Events events.EventRecorder
}

// withDefaults fills the options left empty, see each field.
func (opts ActuatorOptions) withDefaults(mgr manager.Manager) ActuatorOptions {
	if opts.Agent == nil {
		opts.Agent = agentrollout.New(mgr.GetClient()).WithReader(mgr.GetAPIReader())
	}
	if opts.VerifyInterval == 0 {
		opts.VerifyInterval = DefaultVerifyInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.InfrastructureWait == 0 {
		opts.InfrastructureWait = DefaultInfrastructureWait
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 2 * time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 2 * time.Minute
	}
	if opts.FrontDoorProbe == "" {
		opts.FrontDoorProbe = FrontDoorTCP
	}
	if opts.FrontDoorWait == 0 {
		opts.FrontDoorWait = DefaultFrontDoorWait
	}
	if opts.AgentRefreshInterval == 0 {
		opts.AgentRefreshInterval = DefaultAgentRefreshInterval
	}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{}).DialContext
	}
	if opts.Events == nil {
		opts.Events = mgr.GetEventRecorder("gardener-extension-kube-vip")
	}
	return opts
}
