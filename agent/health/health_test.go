// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
)

// readyz is an API server stand-in whose /readyz answer can be switched.
type readyz struct{ code atomic.Int32 }

func (r *readyz) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/readyz" {
		http.NotFound(w, req)
		return
	}
	w.WriteHeader(int(r.code.Load()))
}

type changes struct {
	mu  sync.Mutex
	got []bool
}

func (c *changes) record(s Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s.Healthy)
}

func (c *changes) list() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.got...)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMonitorFollowsReadyzWithThreshold(t *testing.T) {
	api, srv := readyAPI(t)

	var ch changes
	var probes atomic.Int32
	m := newMonitor(t, srv, Config{
		Period: 10 * time.Millisecond, Timeout: 200 * time.Millisecond, FailureThreshold: 3,
		OnChange: ch.record, Observe: func(time.Duration, bool) { probes.Add(1) },
	})
	if m.Healthy() {
		t.Fatal("healthy before the first probe")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	eventually(t, "healthy", m.Healthy)

	api.code.Store(http.StatusInternalServerError)
	failedFrom := probes.Load()
	eventually(t, "unhealthy", func() bool { return !m.Healthy() })
	if n := probes.Load() - failedFrom; n < 3 {
		t.Fatalf("unhealthy after %d probes, want at least the threshold of 3", n)
	}

	api.code.Store(http.StatusOK)
	eventually(t, "healthy again", m.Healthy)
	if got := ch.list(); len(got) != 3 || !got[0] || got[1] || !got[2] {
		t.Fatalf("changes %v, want [true false true]", got)
	}
}

func TestLinkDownIsUnhealthyAtOnce(t *testing.T) {
	_, srv := readyAPI(t)
	m := startHealthy(t, srv, Config{Period: 10 * time.Millisecond, Timeout: 200 * time.Millisecond, FailureThreshold: 2})
	m.SetLink(false)
	if m.Healthy() {
		t.Fatal("healthy with the interface down")
	}
	m.SetLink(true)
	if !m.Healthy() {
		t.Fatal("not healthy after the interface came back")
	}
}

func TestUnreachableAPIServerIsUnhealthy(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	url := srv.URL + "/readyz"
	client := srv.Client()
	srv.Close() // nothing listens any more
	m, err := New(Config{Client: client, URL: url, Period: 10 * time.Millisecond, Timeout: 100 * time.Millisecond,
		FailureThreshold: 1, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	m.probeOnce(context.Background())
	if m.Healthy() {
		t.Fatal("healthy although nothing answers")
	}
}

// newProbed returns a ready API server stand-in and a Monitor on it (threshold 3, probes
// only when the test calls probeOnce).
func newProbed(t *testing.T) (*readyz, *httptest.Server, *Monitor) {
	t.Helper()
	api, srv := readyAPI(t)
	m := newMonitor(t, srv, Config{Period: time.Hour, Timeout: 200 * time.Millisecond, FailureThreshold: 3})
	m.probeOnce(context.Background())
	if !m.Healthy() {
		t.Fatal("not healthy after a good probe")
	}
	return api, srv, m
}

// A refused connection to the API server's port is definitive: nothing listens there, so
// one probe closes the gate, whatever the threshold.
func TestRefusedConnectionIsDefinitive(t *testing.T) {
	_, srv, m := newProbed(t)
	srv.Close()
	m.probeOnce(context.Background())
	if m.Healthy() {
		t.Fatal("still healthy after a refused connection; the threshold of 3 applies only to failures that may be transient")
	}
}

// A failure that may be transient (an API server alive but not ready) still needs the
// threshold.
func TestNotReadyNeedsTheThreshold(t *testing.T) {
	api, _, m := newProbed(t)
	api.code.Store(http.StatusServiceUnavailable)
	for i := 0; i < 2; i++ {
		m.probeOnce(context.Background())
	}
	if !m.Healthy() {
		t.Fatal("unhealthy after two not-ready answers; the threshold is 3")
	}
	m.probeOnce(context.Background())
	if m.Healthy() {
		t.Fatal("healthy after three not-ready answers")
	}
}

// ProbeNow probes at once (a broken API connection), without waiting for the period, and
// requests the API server served replace the periodic probes.
func TestProbeNowAndServedRequests(t *testing.T) {
	api, srv := readyAPI(t)
	var probes atomic.Int32
	m := newMonitor(t, srv, Config{Period: 20 * time.Millisecond, Timeout: 200 * time.Millisecond, FailureThreshold: 1,
		Observe: func(time.Duration, bool) { probes.Add(1) }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Served()
	go m.Run(ctx)
	eventually(t, "healthy", m.Healthy)
	// The leader's renewals: a request served every 5 ms for 300 ms.
	before := probes.Load()
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		m.Served()
	}
	if n := probes.Load() - before; n > 2 {
		t.Fatalf("%d probes in 300 ms while the API server served requests every 5 ms; want them replaced", n)
	}

	m2 := newMonitor(t, srv, Config{Period: time.Hour, Timeout: 200 * time.Millisecond, FailureThreshold: 1})
	go m2.Run(ctx)
	eventually(t, "healthy", m2.Healthy)
	api.code.Store(http.StatusServiceUnavailable)
	m2.ProbeNow()
	eventually(t, "unhealthy at once on ProbeNow, not after the 1 h period", func() bool { return !m2.Healthy() })
}

// M5: every API server answers "not ready" at once (an etcd leader election, a
// defragmentation): the holder keeps the VIP for the unready hold instead of giving it up
// after the threshold, so the VIP does not vanish cluster-wide; it may not take it, and
// after the hold it gives it up. A refused connection gets no hold.
func TestUnreadyHolderKeepsTheVIPForTheHold(t *testing.T) {
	api, srv := readyAPI(t)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var got []Status
	const hold = 5 * time.Second
	m := newMonitor(t, srv, Config{Period: time.Second, Timeout: time.Second,
		FailureThreshold: 3, UnreadyHold: hold, Clock: clk,
		OnChange: func(s Status) { got = append(got, s) }})
	ctx := context.Background()
	m.probeOnce(ctx)
	api.code.Store(http.StatusInternalServerError)
	for range 3 {
		clk.Step(time.Second)
		m.probeOnce(ctx)
	}
	if m.Healthy() {
		t.Fatal("healthy after three not-ready answers: a follower would take over from an unready node")
	}
	if !m.Holdable() {
		t.Fatal("the holder gives the VIP up after three not-ready answers; with every API server unready the VIP would vanish cluster-wide")
	}
	clk.Step(hold - time.Second)
	m.probeOnce(ctx)
	if !m.Holdable() {
		t.Fatal("the hold ended early")
	}
	clk.Step(time.Second)
	m.probeOnce(ctx)
	if m.Holdable() {
		t.Fatal("the hold outlasted UnreadyHold: a broken API server would keep the VIP for ever")
	}
	if n := len(got); n != 3 || !got[0].Holdable || got[1].Healthy || !got[1].Holdable || got[2].Holdable {
		t.Fatalf("changes %+v, want healthy, then unhealthy but holdable, then not holdable", got)
	}

	// Ready again: holdable and healthy at once; then nothing listens: no hold at all.
	api.code.Store(http.StatusOK)
	m.probeOnce(ctx)
	if !m.Healthy() || !m.Holdable() {
		t.Fatal("not healthy after a ready answer")
	}
	srv.Close()
	m.probeOnce(ctx)
	if m.Holdable() {
		t.Fatal("a refused connection left the VIP held: nothing listens on the API server's port")
	}
	m.SetLink(false)
	if m.Holdable() {
		t.Fatal("holdable with the interface down")
	}
}

// A served request stands in for a probe for ServedCovers, which may be longer than the
// period: a leader whose renewals (or a follower whose watch events) come a little less
// often than the probe period sends no probe at all.
func TestServedRequestsCoverLongerThanAPeriod(t *testing.T) {
	_, srv := readyAPI(t)
	count := func(covers time.Duration) int32 {
		var probes atomic.Int32
		m := startHealthy(t, srv, Config{Period: 20 * time.Millisecond, ServedCovers: covers,
			Timeout: 200 * time.Millisecond, FailureThreshold: 1, Observe: func(time.Duration, bool) { probes.Add(1) }})
		before := probes.Load()
		// Served every 30 ms for 600 ms: less often than the 20 ms period.
		for end := time.Now().Add(600 * time.Millisecond); time.Now().Before(end); time.Sleep(30 * time.Millisecond) {
			m.Served()
		}
		return probes.Load() - before
	}
	if n := count(0); n < 5 {
		t.Fatalf("%d probes with ServedCovers = Period; the comparison needs some", n)
	}
	if n := count(80 * time.Millisecond); n > 1 {
		t.Fatalf("%d probes in 600 ms while requests were served every 30 ms and cover 80 ms; want none", n)
	}
}

// startHealthy runs a Monitor of cfg against srv's /readyz until the test ends and waits
// until it is healthy.
func startHealthy(t *testing.T, srv *httptest.Server, cfg Config) *Monitor {
	t.Helper()
	m := newMonitor(t, srv, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go m.Run(ctx)
	eventually(t, "healthy", m.Healthy)
	return m
}

// readyAPI returns an API server stand-in that answers ready until the test switches it,
// closed when the test ends.
func readyAPI(t *testing.T) (*readyz, *httptest.Server) {
	t.Helper()
	api := &readyz{}
	api.code.Store(http.StatusOK)
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	return api, srv
}

// newMonitor returns a Monitor of cfg that probes srv's /readyz.
func newMonitor(t *testing.T, srv *httptest.Server, cfg Config) *Monitor {
	t.Helper()
	cfg.Client, cfg.URL, cfg.Log = srv.Client(), srv.URL+"/readyz", logr.Discard()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
