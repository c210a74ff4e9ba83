// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestFollowersLeaveAStalledHolderItsRetry makes the holder's renewals fail without a
// verdict, as while etcd elects a leader, from its next renewal until shortly after the
// followers' expiry (S + L + 50 ms), while the followers' reads stay prompt: as when the
// etcd leader's node was cut and etcd has a leader again just before the holder's next
// retry. The holder holds its term through the stall and keeps its VIP on; a follower that
// read the expired Lease must leave it one retry (timing.StalledRetryWait) before it takes
// the Lease. The holder must keep the Lease and the VIP, which never moves and is never on
// two nodes (NICs read every millisecond). The renewals fail in two ways: answered 503 at
// once, or held until the window ends and then forwarded (a proposal that etcd commits once
// it has a leader), each unless the agent gave up first.
func TestFollowersLeaveAStalledHolderItsRetry(t *testing.T) {
	tm := timing.Defaults()
	if tm.AnsweredTakeoverDelay() == 0 {
		t.Skip("the default timings leave no room for the wait")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	h, traps, c := startTrappedCluster(ctx, t, "kver-")

	const past = 50 * time.Millisecond // the window ends this long after the followers' expiry
	for round, mode := range []stallMode{stallAnswered, stallHeld, stallAnswered, stallHeld} {
		// Off the etcd leader: a holder that leads etcd offers the Lease on (the etcd-leader
		// yield), a move by design that is not this test's.
		holder := offEtcdLeader(ctx, t, h, c)
		sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
		done := traps[holder.Name()].armStall(mode, tm.LeaseDuration+past)
		var st stallStats
		select {
		case st = <-done:
		case <-time.After(10 * time.Second):
			sampler.Stop()
			t.Fatalf("round %d: %s renewed nothing through the trap in 10s", round, holder)
		}
		time.Sleep(3 * time.Second) // every stalled write and takeover attempt is answered by then
		rep := sampler.Stop()
		assertNoOverlap(t, rep)
		lease, err := c.LeaseHolder(ctx, holder)
		t.Logf("round %d (%s): %s renewed at %s; %d renewals failed until %s after it; Lease holder %q (%v); holder changes %s",
			round, mode, holder, st.renewed.Format("15:04:05.000"), st.failed, st.until.Sub(st.renewed), lease, err, changes(rep))
		if st.failed == 0 {
			t.Errorf("round %d: no renewal of %s fell into the stall: the race was not put to the test", round, holder)
		}
		for _, ch := range rep.Changes {
			if len(ch.Holders) != 1 || ch.Holders[0] != holder.Name() {
				t.Errorf("round %d (%s): the VIP left its holder %s in a stalled hold: changes %s", round, mode, holder, changes(rep))
				break
			}
		}
		if err == nil && lease != holder.Name() {
			t.Errorf("round %d (%s): the Lease moved from %s in a stalled hold to %q", round, mode, holder, lease)
		}
	}
	for _, n := range h.Nodes() {
		if p := c.Agent(n); p != nil {
			logLines(t, n, p.LogPath(), "stall", "retry", "Became leader", "Stopped leading")
		}
	}
}

type stallMode int

const (
	// stallAnswered answers each Lease write 503 at once.
	stallAnswered stallMode = iota
	// stallHeld holds each Lease write until the window ends, then forwards it, unless the
	// agent gave up on it first.
	stallHeld
)

func (m stallMode) String() string { return [...]string{"answered 503", "held"}[m] }

type stallStats struct {
	renewed time.Time // the renewal that passed and started the window arrived
	until   time.Time // the window's end
	failed  int       // Lease writes that got no verdict in the window
}

// stallArm: the next Lease write passes and starts a window of length window, in which
// every Lease write gets no verdict (mode).
type stallArm struct {
	mode   stallMode
	window time.Duration
	stats  stallStats
	done   chan stallStats
}

func (p *renewalTrap) armStall(mode stallMode, window time.Duration) <-chan stallStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall = &stallArm{mode: mode, window: window, done: make(chan stallStats, 1)}
	return p.stall.done
}

// stalls handles a Lease write while a stall is armed, and reports whether it did.
func (p *renewalTrap) stalls(w http.ResponseWriter, r *http.Request) bool {
	p.mu.Lock()
	a := p.stall
	if a == nil {
		p.mu.Unlock()
		return false
	}
	now := time.Now()
	switch {
	case a.stats.renewed.IsZero():
		a.stats.renewed, a.stats.until = now, now.Add(a.window)
		time.AfterFunc(a.window, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.stall = nil
			a.done <- a.stats
		})
		p.mu.Unlock()
		return false // this renewal passes and starts the window
	}
	a.stats.failed++
	until := a.stats.until
	p.mu.Unlock()

	if a.mode == stallHeld {
		select {
		case <-time.After(time.Until(until)):
			return false // etcd has a leader again: the write goes through
		case <-r.Context().Done():
			return true // the agent gave up on it
		}
	}
	status := apierrors.NewServiceUnavailable("etcdserver: no leader").Status()
	status.Kind, status.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(status)
	return true
}

// logLines logs the lines of an agent's log that contain any of the words.
func logLines(t *testing.T, n *netns.Node, path string, words ...string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Logf("%s: %v", n, err)
		return
	}
	for _, line := range strings.Split(string(raw), "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				t.Logf("%s: %s", n, line)
				break
			}
		}
	}
}
