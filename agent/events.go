// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/agent/health"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// node ties the agent's parts together: each on… method is an event one part reports, and
// its body says which other parts act on it; the others are the questions the election asks.
// Run fills the fields as it builds the parts, before any of them runs.
type node struct {
	log     logr.Logger
	metrics *metrics
	keeper  *keeper
	monitor *health.Monitor
	etcd    *health.EtcdLeader // nil without --etcd-metrics-url
	elector *election.Elector
	moves   *moveEvents
	// leading mirrors the election's state for the etcd leadership reader, which reads
	// more often while this node leads.
	leading atomic.Bool
}

// onHealthChanged: the local kube-apiserver or the link changed state. The keeper acts at
// once, even if the election is blocked in a renewal; the election then ends the term and
// releases the Lease.
func (n *node) onHealthChanged(s health.Status) {
	n.log.Info("Health changed", "healthy", s.Healthy, "holdable", s.Holdable, "reason", s.Reason)
	n.metrics.apiserverHealthy.Set(gaugeValue(s.Healthy))
	n.keeper.SetHealthy(s.Holdable)
	n.elector.Poke()
}

// onUnfit: the keeper could not put the VIP on for failureGrace; the election asks fit on
// its next step, so that a peer serves.
func (n *node) onUnfit() { n.elector.Poke() }

// onLeading: a term started or was renewed.
func (n *node) onLeading(term timing.Term, newTerm bool) {
	n.leading.Store(true)
	n.keeper.Leading(term, newTerm)
}

// onRenewing: a renewal that started at start is about to be written; the VIP's lifetime
// starts again with it.
func (n *node) onRenewing(start time.Time) { n.keeper.Renewing(start) }

// onVIPMissing: the keeper found the VIP missing while held; it goes back on only after a
// renewal, so the election renews at once instead of at its next regular renewal.
func (n *node) onVIPMissing() { n.elector.RenewNow() }

// onAcquiring: an acquisition write is about to go out; the takeover guard probes while it
// is on the wire.
func (n *node) onAcquiring() { n.keeper.Acquiring() }

// onAcquireFailed: the acquisition write failed; the guard's probing for it is discarded.
func (n *node) onAcquireFailed() { n.keeper.AcquireFailed() }

// onStoppedLeading: the term ended; the Lease is released only if the VIP is gone.
func (n *node) onStoppedLeading(reason string) (released bool) {
	n.leading.Store(false)
	return n.keeper.Following(reason)
}

// onNewLeader: the Lease names another holder. At info: a follower's log then tells when
// the VIP moved even where the old and the new holder's logs are out of reach.
func (n *node) onNewLeader(holder string) {
	n.log.Info("Lease holder changed", "holder", holder)
}

// onAcquired: this node took the Lease; the metric counts why and an Event on the Lease
// says so (election.Acquisition).
func (n *node) onAcquired(lease *coordinationv1.Lease, a election.Acquisition) {
	n.metrics.acquisitions.WithLabelValues(a.Reason).Inc()
	n.moves.acquired(lease, a)
}

// eligible: this node may take the lead. A keeper that could not put the VIP on for
// failureGrace makes the node give the lead up, so that a peer serves.
func (n *node) eligible() bool { return n.monitor.Healthy() && n.keeper.fit() }

// mayKeep: this node may go on leading (the health gate's looser, held state).
func (n *node) mayKeep() bool { return n.monitor.Holdable() && n.keeper.fit() }

// holdThroughStall: this node may hold its term through stalled renewals. That is safe
// because every takeover, IPv4 and IPv6, probes for this node first
// (docs/agent-reference.md, "Holding through an etcd election").
func (n *node) holdThroughStall() bool { return n.monitor.Holdable() && n.keeper.fit() }

// yield: this node should leave the lead to another one, because its etcd member leads. A
// leader offers the lead only once the VIP is on its NIC: the taker's guard then finds it
// answering and waits until it is gone. An offer made during the leader's own takeover
// guard would let both guards pass at once. Deferring as a follower is always safe.
func (n *node) yield(leading bool) bool {
	return n.etcd != nil && n.etcd.Yield(leading) && (!leading || n.keeper.Holding())
}
