// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
)

// EventReportingController is the reporting controller of the agent's Events.
const EventReportingController = "kube-vip-agent.gardener.cloud/agent"

// EventReasonAcquired is the reason of the Event each move of the VIP emits on the Lease;
// its note says why (election.Acquisition).
const EventReasonAcquired = "Acquired"

// moveEvents emits one Event per acquisition on the Lease, through client-go's events
// broadcaster: one create per move. Each Event regards the Lease at the resourceVersion
// the acquisition wrote, so no two are isomorphic and the broadcaster never patches a
// series (the agent's Role grants create only).
type moveEvents struct {
	broadcaster events.EventBroadcaster
	recorder    events.EventRecorder
}

func newMoveEvents(ctx context.Context, restConfig *rest.Config) (*moveEvents, error) {
	client, err := eventsv1client.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("building the Events client: %w", err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("starting the Events broadcaster: %w", err)
	}
	recorder := broadcaster.NewRecorder(scheme.Scheme, EventReportingController)
	return &moveEvents{broadcaster: broadcaster, recorder: recorder}, nil
}

// acquired emits the Event of one acquisition.
func (m *moveEvents) acquired(lease *coordinationv1.Lease, a election.Acquisition) {
	m.recorder.Eventf(lease, nil, corev1.EventTypeNormal, EventReasonAcquired, "Acquire", "%s", a.String())
}

func (m *moveEvents) shutdown() { m.broadcaster.Shutdown() }
