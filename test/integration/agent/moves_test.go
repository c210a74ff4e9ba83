// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	kubevipagent "github.com/gardener/gardener-extension-kube-vip/agent"
	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestEveryMoveExplained forces a graceful release, an expiry after a crash and an early
// takeover after a link cut, and reads why the VIP moved from the cluster alone: the
// Lease's annotation, the one Event of the move, the new holder's counter and its log line
// must agree with each other and with what the test did; KubeVIPDark and KubeVIPTwoAnswerers
// stay quiet through the release and the expiry. TestHolderLeadingEtcdYields checks the
// fourth reason, an offer, the same way.
func TestEveryMoveExplained(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// The etcd-leader yield moves the Lease on its own (an offer right after an early taker
	// that leads etcd): off here, so that every move is the one the test forces.
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kvm-"}, ExtraArgs: []string{"--etcd-metrics-url="}})

	t.Run("graceful release on SIGTERM", func(t *testing.T) {
		old := prepareLeader(ctx, t, h, c)
		before := moveRecords(ctx, t, h, old)
		watch, triggered := watchAlerts(ctx, t, h), time.Now()
		if err := c.Agent(old).Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		newHolder, err := h.WaitSingleHolder(ctxFor(t, ctx, takeoverTimeout), func(n *netns.Node) bool { return n != old })
		if err != nil {
			t.Fatalf("no handover from %s: %v", old, err)
		}
		explained(ctx, t, c, before, newHolder, old, election.ReasonRelease)
		watch.checkQuiet(t, triggered.Add(alertWindow))
	})

	t.Run("expiry after a crash", func(t *testing.T) {
		old := prepareLeader(ctx, t, h, c)
		before := moveRecords(ctx, t, h, old)
		watch, triggered := watchAlerts(ctx, t, h), time.Now()
		c.Agent(old).Kill()
		newHolder, err := h.WaitSingleHolder(ctxFor(t, ctx, takeoverTimeout), func(n *netns.Node) bool { return n != old })
		if err != nil {
			t.Fatalf("no takeover from %s: %v", old, err)
		}
		explained(ctx, t, c, before, newHolder, old, election.ReasonExpiry)
		watch.checkQuiet(t, triggered.Add(alertWindow))
	})

	t.Run("early takeover after a link cut", func(t *testing.T) {
		restoreNodes(ctx, t, h, c)
		old := offEtcdLeader(ctx, t, h, c)
		before := moveRecords(ctx, t, h, old)
		got := cutHoldersLink(ctx, t, h, old)
		var newHolder *netns.Node
		for _, n := range h.Nodes() {
			if n.Name() == got.newHolder {
				newHolder = n
			}
		}
		a := explained(ctx, t, c, before, newHolder, old, election.ReasonEarly)
		if a.LastHeardMAC != old.MAC().String() {
			t.Errorf("last heard from %q, want the cut holder's MAC %s", a.LastHeardMAC, old.MAC())
		}
		// The silence reached the threshold (less the tick slack), then outlasted the
		// confirmation burst.
		least := timing.EarlyTakeoverSilence - timing.SilenceTickSlack + timing.ConfirmSilence
		if silence := time.Duration(a.SilenceMillis) * time.Millisecond; silence < least || silence >= timing.Defaults().LeaseDuration {
			t.Errorf("silence %s, want at least %s and less than a lease duration", silence, least)
		}
	})
}

// moveState is what the cluster showed of the moves before a trigger: the agents' Events
// and each node's acquisitions counter by reason.
type moveState struct {
	events   int
	counters map[string]map[string]float64
}

// moveRecords reads the Events and the counters through any node but except.
func moveRecords(ctx context.Context, t *testing.T, h *netns.Harness, except *netns.Node) moveState {
	t.Helper()
	s := moveState{counters: map[string]map[string]float64{}}
	for _, n := range h.Nodes() {
		if n == except {
			continue
		}
		s.counters[n.Name()] = map[string]float64{}
		for _, r := range election.Reasons {
			v, err := acquisitions(ctx, n, r)
			if err != nil {
				t.Fatal(err)
			}
			s.counters[n.Name()][r] = v
		}
		if s.events == 0 {
			s.events = len(moveEvents(ctx, t, n))
		}
	}
	return s
}

// explained checks that the Lease, the Event, the counter and the log line of the move to
// newHolder name reason and old, and returns the Lease's record.
func explained(ctx context.Context, t *testing.T, c *agent.Cluster, before moveState, newHolder, old *netns.Node, reason string) election.Acquisition {
	t.Helper()
	lease, err := leaseVia(t, newHolder)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := election.AcquisitionOf(lease)
	t.Logf("%s: %s = %s", newHolder, election.AcquiredAnnotation, lease.Annotations[election.AcquiredAnnotation])
	if !ok || a.Reason != reason || a.Holder != newHolder.Name() || a.PreviousHolder != old.Name() {
		t.Fatalf("the Lease records %+v (ok=%v), want %s taking it from %s by %s", a, ok, newHolder, old, reason)
	}
	// Followers count only answers from this MAC toward an early takeover.
	if a.HolderMAC != newHolder.MAC().String() {
		t.Errorf("the Lease records the holder's MAC as %q, want %s's NIC %s", a.HolderMAC, newHolder, newHolder.MAC())
	}

	// One Event for the move, naming the same story.
	var events []eventsv1.Event
	deadline := time.Now().Add(10 * time.Second)
	for {
		events = moveEvents(ctx, t, newHolder)
		if len(events) > before.events || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // a second Event for the same move would show by now
	events = moveEvents(ctx, t, newHolder)
	if len(events) != before.events+1 {
		t.Fatalf("%d Events of moves, want %d (one more)", len(events), before.events+1)
	}
	if last := latest(events); last.Note != a.String() || last.Regarding.Name != agent.LeaseName || last.Type != "Normal" {
		t.Errorf("the move's Event regards %s with note %q (%s), want the Lease and %q", last.Regarding.Name, last.Note, last.Type, a.String())
	} else {
		t.Logf("Event %s: %s", last.Reason, last.Note)
	}

	for _, r := range election.Reasons {
		want := before.counters[newHolder.Name()][r]
		if r == reason {
			want++
		}
		if got, err := acquisitions(ctx, newHolder, r); err != nil || got != want {
			t.Errorf("%s: kube_vip_agent_acquisitions_total{reason=%q} %v (%v), want %v", newHolder, r, got, err, want)
		}
	}

	var became *logEntry
	for _, entry := range agentLog(t, c, newHolder) {
		if entry.Msg == "Became leader" {
			became = &entry
		}
	}
	if became == nil || became.Reason != reason || became.PreviousHolder != old.Name() {
		t.Errorf("%s's last \"Became leader\" line %+v does not name %s and %s", newHolder, became, reason, old)
	}
	return a
}

// moveEvents lists the Events the agents emitted on their Lease.
func moveEvents(ctx context.Context, t *testing.T, via *netns.Node) []eventsv1.Event {
	t.Helper()
	cs, err := kubernetes.NewForConfig(via.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.EventsV1().Events(agent.LeaseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Events via %s: %v", via, err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.ReportingController == kubevipagent.EventReportingController && e.Reason == kubevipagent.EventReasonAcquired {
			out = append(out, e)
		}
	}
	return out
}

func latest(events []eventsv1.Event) eventsv1.Event {
	last := events[0]
	for _, e := range events[1:] {
		if e.EventTime.After(last.EventTime.Time) {
			last = e
		}
	}
	return last
}

// acquisitions reads kube_vip_agent_acquisitions_total for one reason from n's agent.
func acquisitions(ctx context.Context, n *netns.Node, reason string) (float64, error) {
	return sample(ctx, n, fmt.Sprintf(`kube_vip_agent_acquisitions_total{node=%q,reason=%q}`, n.Name(), reason))
}
