// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

func TestSumCounter(t *testing.T) {
	text := []byte(`# HELP apiserver_request_total x
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="leases",verb="PUT"} 7
apiserver_request_total{code="200",resource="leases",verb="GET"} 3
apiserver_request_total{code="200",resource="pods",verb="GET"} 100
`)
	got, err := sumCounter(text, "apiserver_request_total", "resource", "leases")
	if err != nil || got != 10 {
		t.Fatalf("sumCounter = %v, %v; want 10", got, err)
	}
	if got, err := sumCounter(text, "apiserver_request_total", "", ""); err != nil || got != 110 {
		t.Fatalf("sumCounter over every series = %v, %v; want 110", got, err)
	}
	if _, err := sumCounter(text, "nope", "resource", "leases"); err == nil {
		t.Fatal("missing family accepted")
	}
}

func TestOutage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pr := netns.ProbeResult{End: at(9000), Outages: []netns.Outage{
		{Start: at(-2000), End: at(-1900)}, // long before the fault: ignored
		{Start: at(-50), End: at(400)},     // straddles the fault: counted from the fault
		{Start: at(1000), End: at(1200)},   // second outage before the revert
		{Start: at(6000), End: at(6100)},   // after the revert: shown, not counted
	}}
	ws, sum, after := outage(pr, t0, at(5000))
	if sum != 600*time.Millisecond || after != 100*time.Millisecond {
		t.Fatalf("sum = %v, after = %v, want 600ms, 100ms", sum, after)
	}
	if len(ws) != 3 || ws[0].Start != -50*time.Millisecond {
		t.Fatalf("windows = %+v", ws)
	}
}

func TestTwoHolderTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sr := netns.SamplerReport{End: at(5000), Changes: []netns.HolderChange{
		{At: at(-500), Holders: []string{"node1"}},
		{At: at(1000), Holders: []string{"node1", "node2"}}, // confirmed below
		{At: at(2500), Holders: []string{"node2"}},
		{At: at(3000), Holders: []string{"node2", "node3"}}, // never confirmed
		{At: at(3010), Holders: []string{"node3"}},
	}, Overlaps: []netns.Overlap{{At: at(1500), Holders: []string{"node1", "node2"}}}}
	if got := twoHolderTime(sr, t0); got != 1500*time.Millisecond {
		t.Fatalf("twoHolderTime = %v, want 1.5s", got)
	}
}

func TestGroupRSS(t *testing.T) {
	rss, err := groupRSS(syscall.Getpgrp())
	if err != nil {
		t.Fatal(err)
	}
	self, err := vmRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < self || self < 1<<20 {
		t.Fatalf("group RSS %d, own RSS %d", rss, self)
	}
}

func TestMoves(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sr := netns.SamplerReport{Changes: []netns.HolderChange{
		{At: at(-100), Holders: []string{"node1"}},
		{At: at(50), Holders: nil},                         // the handover's gap
		{At: at(150), Holders: []string{"node2"}},          // move 1
		{At: at(900), Holders: []string{"node2", "node3"}}, // an overlap is no move
		{At: at(950), Holders: []string{"node2"}},
		{At: at(2000), Holders: nil},
		{At: at(2100), Holders: []string{"node2"}}, // back on the same node: no move
		{At: at(3000), Holders: []string{"node1"}}, // move 2
	}}
	if got := moves(sr, t0, "node1"); got != 2 {
		t.Fatalf("moves = %d, want 2", got)
	}
	if got := moves(netns.SamplerReport{Changes: sr.Changes[:1]}, t0, "node1"); got != 0 {
		t.Fatalf("moves without a change = %d, want 0", got)
	}
}
