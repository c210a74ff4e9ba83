// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// expectedMove is a VIP move a scenario is about to force: why it should happen, when the
// fault came, and each agent's acquisitions counter for that reason before it.
type expectedMove struct {
	reason   string
	since    time.Time
	acquired map[string]float64
}

// expectMove reads every agent's counter for reason, right before the scenario's fault.
func expectMove(t *testing.T, ctx context.Context, reason string) expectedMove {
	t.Helper()
	m := expectedMove{reason: reason, acquired: map[string]float64{}}
	for _, n := range cluster.Net().Nodes() {
		v, err := acquisitions(ctx, n.Name(), reason)
		if err != nil {
			t.Fatal(err)
		}
		m.acquired[n.Name()] = v
	}
	m.since = time.Now()
	return m
}

// explainedThroughTheAPI follows docs/guides/troubleshooting.md with the kube-apiserver
// alone, while the old holder's kube-apiserver may be down: an Event on the Lease since
// the fault names the move from old with the reason; the Lease's acquisition annotation,
// the taker's log (read as kubectl logs reads it) and its acquisitions counter (through the
// pod proxy) say the same. Where old's agent still runs, its metrics show oldMetric, the
// cause. Its checks report with t.Errorf, so that the caller still restores what its fault
// broke.
func explainedThroughTheAPI(t *testing.T, ctx context.Context, m expectedMove, old, oldMetric string) {
	t.Helper()
	from := fmt.Sprintf(" took the Lease from %q (%s)", old, m.reason)
	taker, note := "", ""
	// The agent creates the Event after the move, in the background.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := cluster.Client().EventsV1().Events(framework.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			// An early takeover's note goes on with the silence and the MAC last heard.
			name, rest, found := strings.Cut(e.Note, from)
			if e.Regarding.Kind == "Lease" && e.Regarding.Name == agentrollout.LeaseName && e.EventTime.After(m.since) && found && (rest == "" || strings.HasPrefix(rest, ": ")) {
				taker, _ = strconv.Unquote(name)
				note = e.Note
			}
		}
		return taker != "", nil
	}); err != nil {
		t.Errorf("no Event on the Lease since %s says %q: %v", m.since.Format(time.StampMilli), from, err)
		return
	}
	t.Logf("Event on lease/%s: %s", agentrollout.LeaseName, note)
	if lease, err := cluster.Client().CoordinationV1().Leases(framework.Namespace).Get(ctx, agentrollout.LeaseName, metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if a, ok := election.AcquisitionOf(lease); !ok || a.Reason != m.reason || a.Holder != taker || a.PreviousHolder != old {
		t.Errorf("the Lease's acquisition annotation %q, want %s taking it from %s (%s)", lease.Annotations[election.AcquiredAnnotation], taker, old, m.reason)
	} else {
		t.Logf("annotation %s: %s", election.AcquiredAnnotation, lease.Annotations[election.AcquiredAnnotation])
	}
	if log, err := cluster.ContainerLog(ctx, leaderPod(t, ctx, taker), agentrollout.Name, 256<<10); err != nil {
		t.Error(err)
	} else if want := fmt.Sprintf(`"msg":"Became leader","node":%q`, taker); !strings.Contains(log, want) || !strings.Contains(log, fmt.Sprintf(`"reason":%q,"previousHolder":%q`, m.reason, old)) {
		t.Errorf("the log of %s's agent (through the kube-apiserver) has no line %s with reason %s from %s", taker, want, m.reason, old)
	}
	if v, err := acquisitions(ctx, taker, m.reason); err != nil {
		t.Error(err)
	} else if v != m.acquired[taker]+1 {
		t.Errorf("%s's acquisitions counter for %s went from %v to %v, want one more", taker, m.reason, m.acquired[taker], v)
	}
	if oldMetric == "" {
		return
	}
	if metrics, err := agentMetrics(ctx, old); err != nil {
		t.Error(err)
	} else if !strings.Contains(string(metrics), oldMetric) {
		t.Errorf("the metrics of %s's agent have no %s", old, oldMetric)
	}
}

// acquisitions reads the node's kube_vip_agent_acquisitions_total for reason.
func acquisitions(ctx context.Context, node, reason string) (float64, error) {
	text, err := agentMetrics(ctx, node)
	if err != nil {
		return 0, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return 0, fmt.Errorf("parsing the metrics of %s's agent: %w", node, err)
	}
	for _, s := range fams["kube_vip_agent_acquisitions_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == reason {
				return s.GetCounter().GetValue(), nil
			}
		}
	}
	return 0, fmt.Errorf("the metrics of %s's agent have no acquisitions counter for %s", node, reason)
}

// agentMetrics reads the metrics of the node's agent through the kube-apiserver's pod
// proxy, as kubectl get --raw does.
func agentMetrics(ctx context.Context, node string) ([]byte, error) {
	pod, err := ext.AgentPod(ctx, node)
	if err != nil {
		return nil, err
	}
	b, err := cluster.Client().CoreV1().Pods(framework.Namespace).ProxyGet("http", pod.Name, "9482", "metrics", nil).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("the metrics of %s's agent through the pod proxy: %w", node, err)
	}
	return b, nil
}
