// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// This file decides when the front door works: the exposure reports Succeeded, with its
// ingress, only once a ready agent holds the current Lease and the VIP answers on
// spec.port. It also keeps status.providerStatus.agent and the conditions current.

// FrontDoorProbe says how the controller checks the front door.
type FrontDoorProbe string

const (
	// FrontDoorTCP requires a ready agent holding the current Lease and a TCP connect from
	// the controller to every VIP's spec.port (one per IP family) and, unless the exposure is internal only or its
	// provider config sets probeFloatingIP: false, to the floating IP's spec.port. The
	// default: the controller of a self-hosted shoot runs on the shoot's nodes and reaches
	// the VIP, and the floating IP through the router's hairpin NAT.
	FrontDoorTCP FrontDoorProbe = "tcp"
	// FrontDoorLease requires a ready agent holding the current Lease only, for a
	// controller that cannot reach the node network (the VIP is then not probed).
	FrontDoorLease FrontDoorProbe = "lease"
	// FrontDoorOff reports Succeeded once OpenStack is right, without agents. Only for
	// tests of the controller alone, which run no agent.
	FrontDoorOff FrontDoorProbe = "off"
)

// DefaultFrontDoorWait bounds the wait for the front door within one reconciliation.
// gardenadm waits 5 min for the exposure; the error comes before that.
const DefaultFrontDoorWait = 4 * time.Minute

// DefaultAgentRefreshInterval is how often a Succeeded exposure re-reads the agents'
// Lease (Kubernetes reads only, no OpenStack call) to keep providerStatus.agent and the
// conditions current after a failover.
const DefaultAgentRefreshInterval = 30 * time.Second

// frontDoorPollInterval is the period of the checks while waiting.
const frontDoorPollInterval = time.Second

// Reasons of the AgentsReady and VIPHeld conditions.
const (
	reasonAllReady       = "AllReady"
	reasonNotAllReady    = "NotAllReady"
	reasonNoAgents       = "NoAgents"
	reasonHeld           = "Held"
	reasonHeldNotProbed  = "HeldNotProbed"
	reasonNoHolder       = "NoHolder"
	reasonHolderNotReady = "HolderNotReady"
	reasonNotAnswering   = "NotAnswering"
	// reasonFloatingIPNotAnswering: the VIP answers, the floating IP does not.
	reasonFloatingIPNotAnswering = "FloatingIPNotAnswering"
	reasonNotChecked             = "NotChecked"
)

// frontDoorNotChecked is the VIPHeld message with --front-door-probe=off.
const frontDoorNotChecked = "The front door is not checked: the controller runs with --front-door-probe=off, which is meant for tests without agents, so Succeeded does not mean that the front door works."

// frontDoorState is one look at the front door.
type frontDoorState struct {
	works  bool
	reason string
	// message says what is missing, as one sentence.
	message string
}

// checkFrontDoor reads the agents (DaemonSet, Lease, holder's pod), probes the VIP and
// records the agent status and the AgentsReady and VIPHeld conditions in status.
func (a *Actuator) checkFrontDoor(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus) (frontDoorState, error) {
	agent, err := a.opts.Agent.Status(ctx, exp.Namespace)
	if err != nil {
		return frontDoorState{}, fmt.Errorf("reading the kube-vip-agent status: %w", err)
	}
	previous := status.Agent
	status.Agent = agent
	if previous != nil && previous.LeaseHolder != agent.LeaseHolder && agent.LeaseHolder != "" {
		a.event(exp, corev1.EventTypeNormal, eventHolderChanged, "The VIP %s moved from node %q to node %q", status.VIPAddress, previous.LeaseHolder, agent.LeaseHolder)
	}

	switch {
	case agent.DesiredPods == 0:
		a.setCondition(exp, status, v1alpha1.ConditionAgentsReady, false, reasonNoAgents, "No kube-vip-agent pod is scheduled (no control-plane node, or the DaemonSet is new).")
	case agent.ReadyPods < agent.DesiredPods:
		a.setCondition(exp, status, v1alpha1.ConditionAgentsReady, false, reasonNotAllReady, fmt.Sprintf("%d of %d kube-vip-agent pods are ready.", agent.ReadyPods, agent.DesiredPods))
	default:
		a.setCondition(exp, status, v1alpha1.ConditionAgentsReady, true, reasonAllReady, fmt.Sprintf("All %d kube-vip-agent pods are ready.", agent.DesiredPods))
	}

	state := a.probeFrontDoor(ctx, exp, status, agent)
	a.setCondition(exp, status, v1alpha1.ConditionVIPHeld, state.works, state.reason, state.message)
	return state, nil
}

// probeFrontDoor tells whether a ready agent holds the current Lease and, with
// FrontDoorTCP, whether every VIP's spec.port (each family's) and, on the path
// FrontDoorPathFloatingIP, the floating IP's spec.port accept a TCP connection.
func (a *Actuator) probeFrontDoor(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus, agent *v1alpha1.AgentStatus) frontDoorState {
	switch {
	case agent.LeaseHolder == "":
		return frontDoorState{reason: reasonNoHolder, message: "No kube-vip-agent holds the Lease."}
	case !agent.HolderReady:
		return frontDoorState{reason: reasonHolderNotReady, message: fmt.Sprintf("The Lease names node %q, but its Lease is not current or its kube-vip-agent pod is not ready.", agent.LeaseHolder)}
	case a.opts.FrontDoorProbe == FrontDoorLease:
		return frontDoorState{works: true, reason: reasonHeldNotProbed, message: fmt.Sprintf("Node %q holds the VIP (the VIP is not probed: the controller is configured not to reach the node network).", agent.LeaseHolder)}
	}
	port := strconv.Itoa(int(exp.Spec.Port))
	address := net.JoinHostPort(status.VIPAddress, port)
	// Every VIP is probed: the other family's VIP is a published door too (an IPv6 VIP is
	// its own front door), and Succeeded means that each door in status.ingress answers.
	for _, vip := range vipAddresses(status) {
		if err := a.probe(ctx, net.JoinHostPort(vip, port)); err != nil {
			return frontDoorState{reason: reasonNotAnswering, message: fmt.Sprintf("Node %q holds the Lease, but %s does not accept connections: %v.", agent.LeaseHolder, net.JoinHostPort(vip, port), err)}
		}
	}
	if len(status.OtherVIPs) > 0 {
		address = "each of " + strings.Join(hostPorts(vipAddresses(status), port), " and ")
	}
	if status.FrontDoorPath != v1alpha1.FrontDoorPathFloatingIP || status.FloatingIPAddress == "" {
		return frontDoorState{works: true, reason: reasonHeld, message: fmt.Sprintf("Node %q holds the VIP, and %s accepts connections (the VIP only: the floating IP is not probed).%s", agent.LeaseHolder, address, a.vipProof(status, port, agent.LeaseHolder, false))}
	}
	// During bootstrap the controller runs in the host network of the node that holds the
	// VIP, which answers the VIP locally: only the floating IP crosses the router, the
	// floating IP's NAT and the security group that DNS clients cross.
	published := net.JoinHostPort(status.FloatingIPAddress, port)
	if err := a.probe(ctx, published); err != nil {
		return frontDoorState{reason: reasonFloatingIPNotAnswering, message: fmt.Sprintf("Node %q holds the VIP and %s accepts connections, but the floating IP's %s does not: %v; check the router, the security group and the floating IP's association (on a cloud whose routers do not hairpin, set probeFloatingIP: false in the provider config).",
			agent.LeaseHolder, address, published, err)}
	}
	return frontDoorState{works: true, reason: reasonHeld, message: fmt.Sprintf("Node %q holds the VIP; %s and, through the floating IP, %s accept connections.%s", agent.LeaseHolder, address, published, a.vipProof(status, port, agent.LeaseHolder, true))}
}

// vipProof says how far the dial proved the published doors that no floating IP's hairpin
// took across the router: every IPv6 VIP, and the IPv4 VIP unless its floating IP was
// probed (an internal-only exposure, or probeFloatingIP: false). From another node while
// the controller's node does not hold the VIP, the dial crossed the node network and the
// holder's port security, as a client on that network does; otherwise it reached the
// holder itself, which answers its own address without the network. Neither proves the
// router for clients outside. "" when every door was proven through its floating IP.
func (a *Actuator) vipProof(status *v1alpha1.ExposureStatus, port, holder string, floatingIPProbed bool) string {
	var doors []string
	label := "IPv6 door"
	for _, vip := range vipAddresses(status) {
		if addr, err := netip.ParseAddr(vip); err == nil && addr.Unmap().Is4() {
			if floatingIPProbed {
				continue
			}
			label = "VIP door"
		}
		doors = append(doors, net.JoinHostPort(vip, port))
	}
	door := label + " " + strings.Join(doors, " and ")
	switch {
	case len(doors) == 0:
		return ""
	case a.opts.NodeName != "" && a.opts.NodeName != holder:
		return fmt.Sprintf(" The %s was reached from node %q, across the node network to the holder; the router is not proven for clients outside.", door, a.opts.NodeName)
	case a.opts.NodeName != "":
		return fmt.Sprintf(" The %s was reached on node %q, which holds it, so locally only: the node network, the router and the node security group are not proven for clients outside.", door, a.opts.NodeName)
	}
	return fmt.Sprintf(" The %s was reached from the controller's host only, which may be the node that holds it: the router and the node security group are not proven for clients outside.", door)
}

// vipAddresses are the exposure's VIPs: the first fixed IP's, then the other families'.
func vipAddresses(status *v1alpha1.ExposureStatus) []string {
	out := []string{status.VIPAddress}
	for _, v := range status.OtherVIPs {
		out = append(out, v.Address)
	}
	return out
}

// hostPorts joins every address with port.
func hostPorts(addrs []string, port string) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, net.JoinHostPort(a, port))
	}
	return out
}

// probe opens and closes a TCP connection to address, bounded by the poll interval.
func (a *Actuator) probe(ctx context.Context, address string) error {
	dialCtx, cancel := context.WithTimeout(ctx, frontDoorPollInterval)
	defer cancel()
	conn, err := a.opts.Dial(dialCtx, "tcp", address)
	if err != nil {
		return err
	}
	return conn.Close()
}

// frontDoorPath is the path the front-door check proves with cfg (see
// v1alpha1.ExposureStatus.FrontDoorPath).
func (a *Actuator) frontDoorPath(cfg *Config) string {
	switch {
	case a.opts.FrontDoorProbe != FrontDoorTCP:
		return ""
	case cfg.InternalOnly || !cfg.ProbeFloatingIP:
		return v1alpha1.FrontDoorPathVIP
	}
	return v1alpha1.FrontDoorPathFloatingIP
}

// awaitFrontDoor checks the front door every second until it works, at most
// FrontDoorWait, so that the exposure stays in Processing without an error meanwhile
// (gardenadm fails the step when lastError lasts 30 s). It then fails with a coded error.
func (a *Actuator) awaitFrontDoor(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus) error {
	if a.opts.FrontDoorProbe == FrontDoorOff {
		agent, err := a.opts.Agent.Status(ctx, exp.Namespace)
		if err != nil {
			return fmt.Errorf("reading the kube-vip-agent status: %w", err)
		}
		status.Agent = agent
		// Unknown, not True: Succeeded then says nothing about the front door, and the
		// status must not read as if it did.
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionVIPHeld, Status: metav1.ConditionUnknown,
			Reason: reasonNotChecked, Message: frontDoorNotChecked, ObservedGeneration: exp.Generation})
		return nil
	}
	var (
		state   frontDoorState
		waiting bool
	)
	err := wait.PollUntilContextTimeout(ctx, frontDoorPollInterval, a.opts.FrontDoorWait, true, func(ctx context.Context) (bool, error) {
		s, err := a.checkFrontDoor(ctx, exp, status)
		if errors.Is(err, agentrollout.ErrLeaseMissing) {
			// Nobody can hold the VIP before the deploy step creates the Lease again.
			return false, err
		}
		if err != nil {
			// A failed read is one more check that did not succeed; the wait is bounded.
			log.V(1).Info("Could not check the front door", "error", err.Error())
			if state.reason == "" {
				state = frontDoorState{reason: reasonNoAgents, message: fmt.Sprintf("The kube-vip-agent status could not be read: %v.", err)}
			}
			return false, nil
		}
		if state = s; state.works {
			return true, nil
		}
		if !waiting {
			waiting = true
			log.Info("Waiting for the front door", "reason", state.reason, "message", state.message)
			a.event(exp, corev1.EventTypeNormal, eventWaiting, "Waiting for the front door: %s", state.message)
		}
		// Show the agent and the conditions while waiting (a patch only when they changed).
		if err := a.patchStatus(ctx, exp, status); err != nil {
			log.Error(err, "Could not record the conditions while waiting")
		}
		return false, nil
	})
	switch {
	case err == nil:
		if waiting || !conditionTrue(exp, v1alpha1.ConditionVIPHeld) {
			a.event(exp, corev1.EventTypeNormal, eventReady, "The front door works: %s", state.message)
		}
		return nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		return v1beta1helper.NewErrorWithCodes(fmt.Errorf("the front door does not work after %s: %s (reason %s); check the kube-vip-agent pods on the control-plane nodes",
			a.opts.FrontDoorWait, state.message, state.reason), gardencorev1beta1.ErrorRetryableInfraDependencies)
	}
	return err
}

// RefreshAgent re-reads the agents and the front door of a Succeeded exposure and records
// providerStatus.agent and the conditions (Kubernetes reads and at most one status patch,
// no OpenStack call). A front door that stops working is reported in the conditions and
// an Event; the last operation stays as it is until the next reconciliation.
func (a *Actuator) RefreshAgent(ctx context.Context, log logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure) error {
	unlock := a.locks.lock(exp.UID)
	defer unlock()
	status, err := DecodeStatus(exp)
	if err != nil || status.VIPAddress == "" || a.opts.FrontDoorProbe == FrontDoorOff {
		return err
	}
	wasHeld := meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionVIPHeld)
	state, err := a.checkFrontDoor(ctx, exp, status)
	if err != nil {
		return err
	}
	switch {
	case wasHeld && !state.works:
		log.Info("The front door stopped working", "reason", state.reason, "message", state.message)
		a.event(exp, corev1.EventTypeWarning, eventLost, "The front door stopped working: %s", state.message)
	case !wasHeld && state.works:
		a.event(exp, corev1.EventTypeNormal, eventReady, "The front door works: %s", state.message)
	}
	return a.patchStatus(ctx, exp, status)
}

// conditionTrue reads a condition from the providerStatus the exposure had.
func conditionTrue(exp *extensionsv1alpha1.SelfHostedShootExposure, typ string) bool {
	s, err := DecodeStatus(exp)
	return err == nil && meta.IsStatusConditionTrue(s.Conditions, typ)
}
