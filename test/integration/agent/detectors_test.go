// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// The alerts KubeVIPDark and KubeVIPTwoAnswerers (manifests/monitoring/prometheusrule.yaml)
// are tested with promtool on synthetic series (test/monitoring); the helpers here evaluate
// the same expressions on what the real agents export, as Prometheus scrapes every node, so
// that the series the rules assume (which nodes export them, what they count) are the
// series there are.

// series reads the gauge name{node="…"} from every node's agent; a node that does not
// export it (a leader has no follower view) is missing from the map.
func series(ctx context.Context, h *netns.Harness, name string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, n := range h.Nodes() {
		text, err := metricsText(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if v, ok, err := seriesValue(text, name+`{node="`+n.Name()+`"}`); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		} else if ok {
			out[n.Name()] = v
		}
	}
	return out, nil
}

// darkFires evaluates KubeVIPDark's expression,
// min(kube_vip_agent_vip_last_heard_seconds) > 10 and on() max(kube_vip_agent_is_leader) == 1,
// and says what it read.
func darkFires(ctx context.Context, h *netns.Harness) (bool, string, error) {
	heard, err := series(ctx, h, "kube_vip_agent_vip_last_heard_seconds")
	if err != nil {
		return false, "", err
	}
	leading, err := series(ctx, h, "kube_vip_agent_is_leader")
	if err != nil {
		return false, "", err
	}
	seen := fmt.Sprintf("last heard %v, leading %v", heard, leading)
	if len(heard) == 0 || len(leading) == 0 {
		return false, seen, nil
	}
	return slices.Min(slices.Collect(maps.Values(heard))) > 10 && slices.Max(slices.Collect(maps.Values(leading))) == 1, seen, nil
}

// waitAnswerers polls node n's kube_vip_agent_vip_answerers (KubeVIPTwoAnswerers reads it
// per node) until it is want, and returns how long that took.
func waitAnswerers(ctx context.Context, t *testing.T, n *netns.Node, want float64) time.Duration {
	t.Helper()
	start := time.Now()
	var got float64
	var err error
	for ctx.Err() == nil {
		if got, err = metric(ctx, n, "kube_vip_agent_vip_answerers"); err == nil && got == want {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: kube_vip_agent_vip_answerers %v (%v), want %v", n, got, err, want)
	return 0
}

// waitDark polls KubeVIPDark's expression until it holds, while old alone holds the VIP:
// a VIP that no follower hears must raise the alert, and must not move.
func waitDark(ctx context.Context, t *testing.T, h *netns.Harness, old *netns.Node) {
	t.Helper()
	start := time.Now()
	for {
		fires, seen, err := darkFires(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if fires {
			t.Logf("KubeVIPDark's expression holds %s after %s took the VIP unheard: %s", time.Since(start).Round(time.Millisecond), old, seen)
			return
		}
		if holders, err := h.Holders(); err != nil || len(holders) != 1 || holders[0] != old {
			t.Fatalf("the unheard VIP moved: holders %v (%v), want %s alone", netns.Names(holders), err, old)
		}
		if ctx.Err() != nil {
			t.Fatalf("KubeVIPDark's expression never held: %s", seen)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
