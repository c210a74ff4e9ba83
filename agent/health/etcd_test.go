// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package health

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	testingclock "k8s.io/utils/clock/testing"
)

func TestParseIsLeader(t *testing.T) {
	for name, tc := range map[string]struct {
		text    string
		want    bool
		wantErr string
	}{
		"leader":          {text: "# HELP etcd_server_is_leader x\n# TYPE etcd_server_is_leader gauge\netcd_server_is_leader 1\n", want: true},
		"follower":        {text: "etcd_server_is_leader_changes 3\netcd_server_is_leader 0\n", want: false},
		"labelled":        {text: "etcd_server_is_leader{member=\"a\"} 1\n", want: true},
		"similar name":    {text: "etcd_server_is_leader_x 1\n", wantErr: "no etcd_server_is_leader"},
		"missing":         {text: "etcd_server_has_leader 1\n", wantErr: "no etcd_server_is_leader"},
		"malformed value": {text: "etcd_server_is_leader one\n", wantErr: "malformed sample"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseIsLeader(bufio.NewScanner(strings.NewReader(tc.text)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestEtcdLeadershipIsConfirmedBeforeItCounts: one read that finds the member leading asks
// for a confirming read soon; only the second read makes Leads true, a read in between
// that finds it following resets, and an unreadable endpoint counts as following.
func TestEtcdLeadershipIsConfirmedBeforeItCounts(t *testing.T) {
	var leads, broken atomic.Bool
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reads.Add(1)
		if broken.Load() {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		v := 0
		if leads.Load() {
			v = 1
		}
		fmt.Fprintf(w, "etcd_server_has_leader 1\netcd_server_is_leader %d\n", v)
	}))
	defer srv.Close()
	e, err := NewEtcdLeader(EtcdLeaderConfig{Client: srv.Client(), URL: srv.URL, Period: time.Second, FollowerPeriod: time.Second,
		Confirm: time.Second, Timeout: time.Second, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	step := func(wantConfirmNext, wantLeads bool) {
		t.Helper()
		if got := e.readOnce(ctx); got != wantConfirmNext {
			t.Fatalf("confirming read due: %v, want %v", got, wantConfirmNext)
		}
		if got := e.Leads(); got != wantLeads {
			t.Fatalf("Leads() = %v, want %v", got, wantLeads)
		}
		if got := e.Yield(true); got != wantLeads {
			t.Fatalf("Yield(leading) = %v, want the confirmed %v", got, wantLeads)
		}
		if got := e.Yield(false); got != (leads.Load() && !broken.Load()) {
			t.Fatalf("Yield(following) = %v, want the last read", got)
		}
	}
	step(false, false) // follower
	leads.Store(true)
	step(true, false) // first sight: not yet
	step(false, true) // confirmed
	step(false, true)
	leads.Store(false)
	step(false, false) // one read as follower ends it at once
	leads.Store(true)
	step(true, false)
	leads.Store(false)
	step(false, false) // a brief leadership never counts
	leads.Store(true)
	step(true, false)
	broken.Store(true)
	step(false, false) // unknown counts as following
	if reads.Load() != 9 {
		t.Fatalf("%d reads, want 9", reads.Load())
	}
}

// TestEtcdReadsFollowTheLeadingState: a node that stops leading must read its member again
// within FollowerPeriod, not a leader's Period after its last read as leader: as a follower it
// decides on that read whether to defer a takeover, and a failover often moves etcd's
// leadership to it meanwhile.
func TestEtcdReadsFollowTheLeadingState(t *testing.T) {
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reads.Add(1)
		_, _ = w.Write([]byte("etcd_server_is_leader 0\n"))
	}))
	defer srv.Close()
	var leading atomic.Bool
	leading.Store(true)
	clk := testingclock.NewFakeClock(time.Now())
	e, err := NewEtcdLeader(EtcdLeaderConfig{Client: srv.Client(), URL: srv.URL, Period: 20 * time.Second,
		FollowerPeriod: 2 * time.Second, Confirm: 5 * time.Second, Timeout: time.Second,
		Leading: leading.Load, Clock: clk, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	// advance steps the clock by d in small steps, each once the loop waits on it.
	advance := func(d time.Duration) {
		for end := clk.Now().Add(d); clk.Now().Before(end); {
			waitWaiter(t, clk)
			clk.Step(50 * time.Millisecond)
		}
		waitWaiter(t, clk)
	}
	advance(0)
	if got := reads.Load(); got != 1 {
		t.Fatalf("%d reads at start, want 1", got)
	}
	advance(3 * time.Second)
	if got := reads.Load(); got != 1 {
		t.Fatalf("%d reads in 3s while leading (Period 20s), want 1", got)
	}
	leading.Store(false)
	advance(2500 * time.Millisecond)
	if got := reads.Load(); got < 2 {
		t.Fatalf("%d reads 2.5s after the node stopped leading (FollowerPeriod 2s), want a second one", got)
	}
	// One that starts leading reads once more at FollowerPeriod (its last read as a follower may
	// predate the etcd election a failover brings), then at Period.
	before := reads.Load()
	leading.Store(true)
	advance(2500 * time.Millisecond)
	if got := reads.Load(); got != before+1 {
		t.Fatalf("%d reads 2.5s after the node started leading (FollowerPeriod 2s), want %d", got, before+1)
	}
	advance(3 * time.Second)
	if got := reads.Load(); got != before+1 {
		t.Fatalf("%d reads 3s after that read while leading (Period 20s), want %d", got, before+1)
	}
}

func waitWaiter(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reader does not wait on the clock")
		}
	}
}
