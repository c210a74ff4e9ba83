// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
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

// darkHolds is KubeVIPDark's expression,
// min(kube_vip_agent_vip_last_heard_seconds) > 10 and on() max(kube_vip_agent_is_leader) == 1,
// on one scrape of every node's series (either side empty: no result, as in PromQL).
func darkHolds(heard, leading map[string]float64) bool {
	return len(heard) > 0 && len(leading) > 0 &&
		slices.Min(slices.Collect(maps.Values(heard))) > 10 && slices.Max(slices.Collect(maps.Values(leading))) == 1
}

// darkFires evaluates KubeVIPDark's expression on the agents' series now, and says what it read.
func darkFires(ctx context.Context, h *netns.Harness) (bool, string, error) {
	heard, err := series(ctx, h, "kube_vip_agent_vip_last_heard_seconds")
	if err != nil {
		return false, "", err
	}
	leading, err := series(ctx, h, "kube_vip_agent_is_leader")
	if err != nil {
		return false, "", err
	}
	return darkHolds(heard, leading), fmt.Sprintf("last heard %v, leading %v", heard, leading), nil
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

// alertWindow is how long after a failover's trigger watchAlerts keeps sampling: past
// KubeVIPTwoAnswerers' `for` and KubeVIPDark's threshold, both 10 s.
const alertWindow = 12 * time.Second

// alertWatch samples, every 250 ms, what KubeVIPDark and KubeVIPTwoAnswerers read from every
// node whose agent answers (a killed agent's does not, a cut node's does from its own
// namespace), as Prometheus would scrape them.
type alertWatch struct {
	stop func()
	seen chan alertsSeen
}

// alertsSeen is what an alertWatch saw.
type alertsSeen struct {
	// dark is what KubeVIPDark's expression read when it held; "" if it never did.
	dark string
	// samples are the samples taken, two those in which some node heard two or more hosts
	// answer for the VIP; longestTwo is the longest run of such samples on one node, twoOn
	// that node, and twoAtEnd the nodes whose last sample still heard two.
	samples, two int
	longestTwo   time.Duration
	twoOn        string
	twoAtEnd     []string
}

// watchAlerts starts an alertWatch; it ends with checkQuiet, or with the test.
func watchAlerts(ctx context.Context, t *testing.T, h *netns.Harness) *alertWatch {
	ctx, cancel := context.WithCancel(ctx)
	var once sync.Once
	w := &alertWatch{stop: func() { once.Do(cancel) }, seen: make(chan alertsSeen, 1)}
	t.Cleanup(w.stop)
	go func() {
		var s alertsSeen
		since := map[string]time.Time{}
		for {
			heard, leading := map[string]float64{}, map[string]float64{}
			now, two := time.Now(), false
			for _, n := range h.Nodes() {
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				text, err := metricsText(rctx, n)
				cancel()
				if err != nil {
					// Not scraped: no series of this node in this sample (unless the watch
					// is ending, which keeps the last full sample's runs).
					if ctx.Err() == nil {
						delete(since, n.Name())
					}
					continue
				}
				read := func(name string, into map[string]float64) float64 {
					v, ok, _ := seriesValue(text, name+`{node="`+n.Name()+`"}`)
					if ok && into != nil {
						into[n.Name()] = v
					}
					return v
				}
				read("kube_vip_agent_vip_last_heard_seconds", heard)
				read("kube_vip_agent_is_leader", leading)
				if read("kube_vip_agent_vip_answerers", nil) < 2 {
					delete(since, n.Name())
					continue
				}
				two = true
				if since[n.Name()].IsZero() {
					since[n.Name()] = now
				}
				if run := now.Sub(since[n.Name()]); run > s.longestTwo {
					s.longestTwo, s.twoOn = run, n.Name()
				}
			}
			s.samples++
			if two {
				s.two++
			}
			if s.dark == "" && darkHolds(heard, leading) {
				s.dark = fmt.Sprintf("last heard %v, leading %v", heard, leading)
			}
			select {
			case <-ctx.Done():
				s.twoAtEnd = slices.Sorted(maps.Keys(since))
				w.seen <- s
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return w
}

// checkQuiet samples on until end, then fails if KubeVIPDark's expression held, or a node
// heard two answerers for as long as KubeVIPTwoAnswerers' `for` or still did at the end:
// a normal failover must raise neither alert.
func (w *alertWatch) checkQuiet(t *testing.T, end time.Time) {
	t.Helper()
	time.Sleep(time.Until(end))
	w.stop()
	s := <-w.seen
	quiet := true
	if s.dark != "" {
		quiet = false
		t.Errorf("KubeVIPDark's expression held during the failover: %s", s.dark)
	}
	if s.longestTwo >= 10*time.Second || len(s.twoAtEnd) > 0 {
		quiet = false
		t.Errorf("two answerers for the VIP: %s on %s, and still on %v %s after the trigger", s.longestTwo, s.twoOn, s.twoAtEnd, alertWindow)
	}
	if quiet {
		t.Logf("alerts quiet: KubeVIPDark never held; two answerers in %d of %d samples, for at most %s", s.two, s.samples, s.longestTwo)
	}
}
