// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestLinkDownEarlyTakeover cuts the VIP holder's link. A follower that heard the VIP
// answer takes the Lease on its silence, before the holder's term could have expired; one
// that never heard it (the LAN drops every ARP claim of the VIP) waits for the expiry, and
// that VIP, dark on L2, raises KubeVIPDark's expression without moving. In both, the VIP is
// never on two NICs, also after the link comes back.
func TestLinkDownEarlyTakeover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kve-"}})
	lease := timing.Defaults().LeaseDuration

	t.Run("a holder heard before is taken over on its silence", func(t *testing.T) {
		takenEarly(ctx, t, h, c, 3)
	})

	t.Run("a holder never heard is taken over by expiry", func(t *testing.T) {
		first := prepareLeader(ctx, t, h, c)
		if fires, seen, err := darkFires(ctx, h); err != nil || fires {
			t.Errorf("KubeVIPDark's expression holds (%v) while the followers hear %s: %s", err, first, seen)
		}
		undo, err := h.DropVIPClaims(ctx, h.VIP())
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := undo(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		// A new holder while every claim of the VIP is dropped: no follower hears it.
		if err := c.Agent(first).Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if _, err := h.WaitSingleHolder(ctxFor(t, ctx, takeoverTimeout), func(n *netns.Node) bool { return n != first }); err != nil {
			t.Fatalf("no handover from %s: %v", first, err)
		}
		// Off the etcd leader, so that the etcd-leader yield moves nothing while it is dark.
		old := offEtcdLeader(ctx, t, h, c)
		waitDark(ctxFor(t, ctx, 30*time.Second), t, h, old)
		got := cutHoldersLink(ctx, t, h, old)
		t.Logf("%s took the Lease from %s %s after its last renewal (lease %s)",
			got.newHolder, old, got.acquired.Sub(got.lastRenew).Round(time.Millisecond), lease)
		if got.acquired.Before(got.lastRenew.Add(lease)) {
			t.Errorf("%s took the Lease %s after %s's last renewal, before its expiry (%s), although no follower ever heard the VIP answer",
				got.newHolder, got.acquired.Sub(got.lastRenew).Round(time.Millisecond), old, lease)
		}
	})
}

// TestLinkDownEarlyTakeoverIPv6 is the early takeover of an IPv6 VIP: the followers hear
// the holder by neighbour solicitation. Every node holds and is cut in turn, so that each
// one's answers must reach the others.
func TestLinkDownEarlyTakeoverIPv6(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kv6-",
		Subnet6: netip.MustParsePrefix("2001:2::/64"), VIP: netip.MustParseAddr("2001:2::100")}})
	takenEarly(ctx, t, h, c, 5)
}

// takenEarly cuts the holder's link right after a renewal, rounds times, and checks that the
// next holder took the Lease before the cut holder's term expired.
func takenEarly(ctx context.Context, t *testing.T, h *netns.Harness, c *agent.Cluster, rounds int) {
	t.Helper()
	lease := timing.Defaults().LeaseDuration
	for round := range rounds {
		old := offEtcdLeader(ctx, t, h, c)
		got := cutHoldersLink(ctx, t, h, old)
		t.Logf("round %d: %s took the Lease from %s %s after its last renewal (expiry at %s); VIP gone %s after the cut, back %s after it",
			round, got.newHolder, old, got.acquired.Sub(got.lastRenew).Round(time.Millisecond), lease,
			got.gone.Round(time.Millisecond), got.back.Round(time.Millisecond))
		if !got.acquired.Before(got.lastRenew.Add(lease)) {
			t.Errorf("round %d: %s took the Lease %s after %s's last renewal, not before its expiry (%s): no early takeover",
				round, got.newHolder, got.acquired.Sub(got.lastRenew).Round(time.Millisecond), old, lease)
		}
	}
}

// offEtcdLeader returns a settled holder whose etcd member does not lead, the state the
// etcd-leader yield keeps: where the cut node led etcd, no Lease write succeeds before etcd's
// own election, early or not (the bench's link-down-etcd-leader row).
func offEtcdLeader(ctx context.Context, t *testing.T, h *netns.Harness, c *agent.Cluster) *netns.Node {
	t.Helper()
	for range 5 {
		holder := prepareLeader(ctx, t, h, c)
		if leads, err := holder.EtcdLeads(ctx); err != nil || !leads {
			return holder
		}
		for _, n := range h.Nodes() {
			if n != holder {
				if err := holder.EtcdTransferLeadership(ctx, n); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
	}
	t.Fatal("the holder's etcd member still led after 5 handovers")
	return nil
}

// linkCut is what one cut of a holder's link showed.
type linkCut struct {
	newHolder string
	// lastRenew is the renewTime of the old holder's last record, acquired the acquireTime
	// of the next holder's (the nodes share the host's clock).
	lastRenew, acquired time.Time
	// gone and back: when the VIP left the old holder's NIC and reached the new one's,
	// after the cut.
	gone, back time.Duration
}

// cutHoldersLink takes old's link down, right after a renewal, until another node alone holds the VIP, brings it up
// again, and checks that both NICs, read every millisecond throughout and for 3 s after,
// never had the VIP at once.
func cutHoldersLink(ctx context.Context, t *testing.T, h *netns.Harness, old *netns.Node) linkCut {
	t.Helper()
	via := anotherNode(h, old)
	rec := recordLease(ctx, t, via, old.Name())
	sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
	// Right after a renewal, so that the term has most of a lease duration left to run.
	waitRenewal(ctx, t, h, via, old.Name())
	cut := time.Now()
	if err := old.LinkDown(ctx); err != nil {
		t.Fatal(err)
	}
	newHolder, err := h.WaitSingleHolder(ctxFor(t, ctx, takeoverTimeout), func(n *netns.Node) bool { return n != old })
	if err != nil {
		rep := sampler.Stop()
		t.Fatalf("no takeover from %s: %v; changes %s", old, err, changes(rep))
	}
	time.Sleep(settle)
	if err := old.LinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	rep := sampler.Stop()
	lastRenew, holder, acquired := rec.stop()
	assertNoOverlap(t, rep)
	if holders, err := h.Holders(); err != nil || len(holders) != 1 {
		t.Errorf("after link up: holders %v, %v; changes %s", netns.Names(holders), err, changes(rep))
	}
	if holder != newHolder.Name() || lastRenew.IsZero() {
		t.Fatalf("the Lease went from %s (last renewal %s) to %q, the VIP to %s", old, lastRenew, holder, newHolder)
	}
	got := linkCut{newHolder: holder, lastRenew: lastRenew, acquired: acquired}
	for _, ch := range rep.Changes {
		switch {
		case got.gone == 0 && len(ch.Holders) == 0:
			got.gone = ch.At.Sub(cut)
		case got.back == 0 && len(ch.Holders) == 1 && ch.Holders[0] == holder:
			got.back = ch.At.Sub(cut)
		}
	}
	return got
}

// leaseRecorder polls the Lease through one kube-apiserver while a holder is cut off.
type leaseRecorder struct {
	cancel func()
	done   chan struct{}

	mu        sync.Mutex
	lastRenew time.Time // the renewTime of old's last record before it released
	released  bool      // old released the Lease: a record of its own after that is a new tenure
	holder    string    // the first holder after old
	acquired  time.Time // its acquireTime
	writes    []leaseWrite
}

// leaseWrite is one record written to the Lease: who, the renewTime it wrote (when the
// write was sent) and when the recorder first read it (after it committed).
type leaseWrite struct {
	holder   string
	at, seen time.Time
}

// history lists the records written, as holder@renewTime.
func (r *leaseRecorder) history() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.writes))
	for _, w := range r.writes {
		out = append(out, w.holder+"@"+w.at.Format(time.StampMilli))
	}
	return strings.Join(out, " ")
}

// holdEndSlack is how much earlier than the end of its stalled hold, by the renewTime it
// wrote, the holder may have been seen dropping the VIP: the stamp is taken just before the
// write's term starts.
const holdEndSlack = 50 * time.Millisecond

// stalledPastHold finds a record of holder after which nothing committed until its stalled
// hold had ended, where the VIP left holder (at left) no earlier than that end: the holder
// dropped it by its own rule, whoever wrote next.
func (r *leaseRecorder) stalledPastHold(d timing.Timings, holder string, left time.Time) (prev, next leaseWrite, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 1; i < len(r.writes); i++ {
		prev, next = r.writes[i-1], r.writes[i]
		end := d.StalledTerm(d.TermFrom(prev.at)).End
		if prev.holder == holder && !next.seen.Before(end) && !left.Before(end.Add(-holdEndSlack)) {
			return prev, next, true
		}
	}
	return leaseWrite{}, leaseWrite{}, false
}

// recordLease reads the Lease through via every 10 ms until stop: old's last renewTime
// before a release, then the next holder and its acquireTime; and every record written.
func recordLease(ctx context.Context, t *testing.T, via *netns.Node, old string) *leaseRecorder {
	t.Helper()
	get := leaseVia(t, via)
	ctx, cancel := context.WithCancel(ctx)
	r := &leaseRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			lease, err := get(ctx)
			if err == nil && lease.Spec.HolderIdentity != nil {
				r.mu.Lock()
				if lease.Spec.RenewTime != nil {
					w := leaseWrite{holder: *lease.Spec.HolderIdentity, at: lease.Spec.RenewTime.Time, seen: time.Now()}
					if n := len(r.writes); n == 0 || r.writes[n-1].holder != w.holder || !r.writes[n-1].at.Equal(w.at) {
						r.writes = append(r.writes, w)
					}
				}
				switch holder := *lease.Spec.HolderIdentity; {
				case holder == "" && !r.lastRenew.IsZero():
					r.released = true
				case holder == old && r.holder == "" && !r.released && lease.Spec.RenewTime != nil:
					r.lastRenew = lease.Spec.RenewTime.Time
				case holder != old && holder != "" && r.holder == "" && !r.lastRenew.IsZero() && lease.Spec.AcquireTime != nil:
					r.holder, r.acquired = holder, lease.Spec.AcquireTime.Time
				}
				r.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return r
}

func (r *leaseRecorder) stop() (lastRenew time.Time, holder string, acquired time.Time) {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRenew, r.holder, r.acquired
}

// anotherNode is the first node other than n: one through which to watch n's Lease while n
// is cut off.
func anotherNode(h *netns.Harness, n *netns.Node) *netns.Node {
	for _, other := range h.Nodes() {
		if other != n {
			return other
		}
	}
	return nil
}
