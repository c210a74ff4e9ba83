// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeGuard plays the LAN: another host answers for the VIP until freeAt.
type fakeGuard struct {
	clock  *clocktesting.FakeClock
	freeAt time.Time
	err    error
	probes int
	closed int
}

func (g *fakeGuard) Free(context.Context, time.Time, time.Time) (bool, string, error) {
	g.probes++
	if g.err != nil {
		return false, "", g.err
	}
	if g.clock.Now().Before(g.freeAt) {
		return false, "02:00:00:00:00:09", nil
	}
	return true, "", nil
}

func (g *fakeGuard) Close() error { g.closed++; return nil }

// The takeover guard: while a crashed or frozen former holder's kernel still answers for the
// VIP, the new leader does not add it; it adds it on the first tick after that stops, also
// late in its term (after RefreshBy), and says why it waited.
func TestTakeoverWaitsWhileAnotherHostAnswers(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	term := termAt(clk.Now())
	g := &fakeGuard{clock: clk, freeAt: term.RefreshBy.Add(150 * time.Millisecond)}
	k.guard = g
	k.Leading(term, true)
	for clk.Now().Before(g.freeAt) {
		if addr.present {
			t.Fatalf("at %v the VIP was added while another host still answers for it", clk.Now().Sub(term.Start))
		}
		if got := testutil.ToFloat64(k.metrics.vipHeldElsewhere); got != 1 {
			t.Fatalf("vip_held_elsewhere = %v while waiting, want 1", got)
		}
		clk.Step(k.tick)
		k.reconcile(context.Background())
	}
	if !addr.present {
		t.Fatalf("the VIP was not added on the first tick after the other host stopped answering (%v into the term)", clk.Now().Sub(term.Start))
	}
	if got := testutil.ToFloat64(k.metrics.vipHeldElsewhere); got != 0 {
		t.Fatalf("vip_held_elsewhere = %v after the takeover, want 0", got)
	}
	if got := testutil.ToFloat64(k.metrics.takeoverWaits); got < 2 {
		t.Fatalf("takeover_waits_total = %v, want one per probe that found the VIP held", got)
	}
	// Once on, refreshes do not probe.
	probes := g.probes
	k.Leading(termAt(clk.Now()), false)
	advance(k, clk, 500*time.Millisecond)
	if g.probes != probes {
		t.Fatalf("%d probes while holding the VIP, want none", g.probes-probes)
	}
}

// A guard that cannot tell (its socket failed) keeps the VIP off: adding could put it on two
// nodes.
func TestTakeoverStaysOffWhenTheGuardFails(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	k.guard = &fakeGuard{clock: clk, err: errors.New("socket: operation not permitted")}
	k.Leading(termAt(clk.Now()), true)
	advance(k, clk, 300*time.Millisecond)
	if addr.present {
		t.Fatal("the VIP was added although the guard could not probe")
	}
}

// blockingGuard probes until released.
type blockingGuard struct{ entered, release chan struct{} }

func (g *blockingGuard) Free(context.Context, time.Time, time.Time) (bool, string, error) {
	close(g.entered)
	<-g.release
	return true, "", nil
}

func (g *blockingGuard) Close() error { return nil }

// The guard probes for up to a tick; the keeper's lock is not held meanwhile, so that the
// election's and the health gate's calls (Holding, SetHealthy, Following) never wait for
// it. A term that ended while the guard probed does not get the VIP.
func TestProbingDoesNotBlockTheKeeper(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	g := &blockingGuard{entered: make(chan struct{}), release: make(chan struct{})}
	k.guard = g
	var wg sync.WaitGroup
	wg.Go(func() { k.Leading(termAt(clk.Now()), true) })
	<-g.entered
	answered := make(chan struct{})
	go func() {
		k.Holding()
		k.Following("lost the Lease")
		close(answered)
	}()
	select {
	case <-answered:
	case <-time.After(time.Second):
		t.Error("Holding and Following waited for the guard's probe")
	}
	close(g.release)
	wg.Wait()
	<-answered
	if addr.present {
		t.Fatal("the VIP was added for a term that ended while the guard probed")
	}
}

// A guard that cannot probe, or an address that cannot be written, leaves the VIP off.
// After failureGrace of that the keeper is no longer fit to lead, and tells the election
// (which then gives the Lease up for a peer to serve); a new term starts fit again.
func TestAKeeperThatCannotAddTheVIPGivesTheLeadUp(t *testing.T) {
	for name, broken := range map[string]func(*keeper, *fakeAddress){
		"guard": func(k *keeper, _ *fakeAddress) {
			k.guard = &fakeGuard{err: errors.New("socket: operation not permitted")}
		},
		"address": func(_ *keeper, a *fakeAddress) { a.failAlways = errors.New("netlink: operation not permitted") },
	} {
		t.Run(name, func(t *testing.T) {
			k, addr, _, clk := newTestKeeper(t)
			broken(k, addr)
			told := 0
			k.onUnfit = func() { told++ }
			k.Leading(termAt(clk.Now()), true)
			// The election renews meanwhile: only the keeper knows that the VIP is off.
			for end := clk.Now().Add(failureGrace + k.tick); clk.Now().Before(end); {
				advance(k, clk, k.tick)
				k.Leading(termAt(clk.Now()), false)
			}
			if addr.present {
				t.Fatal("the VIP is on although the keeper could not add it")
			}
			if k.fit() || told != 1 {
				t.Fatalf("after %s of failures the keeper is fit=%v (told the election %d times): the node would hold the Lease with the VIP off", failureGrace, k.fit(), told)
			}
			k.Following("not eligible any more")
			if !k.fit() {
				t.Fatal("the keeper is still unfit after the term ended")
			}
		})
	}
}

// At start the agent keeps a VIP it finds on its NIC when the Lease names this node: the
// keeper does not sweep it while the election's first step can still renew the Lease, and
// the takeover that follows keeps it on (no removal). Without a renewal the sweep removes
// it once the Lease could have expired.
func TestAVIPKeptAtStartStaysUntilTheElectionDecides(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	addr.present, addr.expiresAt = true, clk.Now().Add(time.Second)
	k.keepFound(timingDefaults.LeaseDuration)
	advance(k, clk, 200*time.Millisecond)
	if !addr.present {
		t.Fatal("the VIP that the agent keeps was removed 200 ms after start")
	}
	k.Leading(termAt(clk.Now()), true)
	if !addr.present || addr.removes != 0 {
		t.Fatalf("the renewal's takeover did not keep the VIP (present %v, %d removals)", addr.present, addr.removes)
	}

	k2, addr2, _, clk2 := newTestKeeper(t)
	addr2.present, addr2.expiresAt = true, clk2.Now().Add(time.Hour)
	k2.keepFound(timingDefaults.LeaseDuration)
	advance(k2, clk2, timingDefaults.LeaseDuration+followerSweep)
	if addr2.present {
		t.Fatal("a VIP kept at start survived a lease duration without a renewal")
	}
}

// sessionGuard reports the takeover each probe belongs to (its since) and probes until
// released or until its caller gives up.
type sessionGuard struct {
	calls   chan time.Time
	release chan struct{}
	mu      sync.Mutex
	closed  int
}

func newSessionGuard() *sessionGuard {
	return &sessionGuard{calls: make(chan time.Time, 64), release: make(chan struct{})}
}

func (g *sessionGuard) Free(ctx context.Context, since, _ time.Time) (bool, string, error) {
	g.calls <- since
	select {
	case <-g.release:
		return true, "", nil
	case <-ctx.Done():
		return false, "", nil
	}
}

func (g *sessionGuard) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed++
	return nil
}

func (g *sessionGuard) closes() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// nextProbe waits for the guard's next Free call; the bound only keeps a broken keeper from
// hanging the test.
func (g *sessionGuard) nextProbe(t *testing.T, what string) time.Time {
	t.Helper()
	select {
	case since := <-g.calls:
		return since
	case <-time.After(10 * time.Second):
		t.Fatalf("the guard did not probe %s", what)
		return time.Time{}
	}
}

// waitHolding waits until the keeper holds the VIP; the bound only keeps a broken keeper from
// hanging the test.
func waitHolding(t *testing.T, k *keeper) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !k.Holding(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the VIP was not added after the guard found it free")
		}
	}
}

// The takeover guard starts when the acquisition write goes out (the election's
// OnAcquiring), so that its silence overlaps the write; the term that the write gives
// continues that probing (the same takeover) and adds the VIP on its verdict.
func TestTheGuardProbesWhileTheAcquisitionIsOnTheWire(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	g := newSessionGuard()
	k.guard = g
	start := clk.Now()
	k.Acquiring()
	if since := g.nextProbe(t, "before the acquisition write returned"); !since.Equal(start) {
		t.Fatalf("the probing ahead of the write counts from %v, want the write's start %v", since, start)
	}
	if addr.present {
		t.Fatal("the VIP was added before the acquisition write returned")
	}
	clk.Step(20 * time.Millisecond) // the write on the wire
	var wg sync.WaitGroup
	wg.Go(func() { k.Leading(termAt(start), true) })
	close(g.release)
	wg.Wait()
	waitHolding(t, k)
	for len(g.calls) > 0 {
		if since := <-g.calls; !since.Equal(start) {
			t.Fatalf("the term's takeover probed from %v, starting over instead of going on from %v", since, start)
		}
	}
}

// A failed acquisition write discards the probing ahead of it: the guard stops and closes,
// and the next acquisition probes afresh.
func TestAFailedAcquisitionDiscardsTheProbing(t *testing.T) {
	k, _, _, clk := newTestKeeper(t)
	g := newSessionGuard()
	k.guard = g
	k.Acquiring()
	first := g.nextProbe(t, "before the acquisition write returned")
	k.AcquireFailed()
	for end := time.Now().Add(10 * time.Second); g.closes() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the guard's probing went on after the acquisition write failed")
		}
	}
	clk.Step(300 * time.Millisecond) // the follower's retry
	retry := clk.Now()
	k.Acquiring()
	if since := g.nextProbe(t, "ahead of the retried acquisition"); !since.Equal(retry) || since.Equal(first) {
		t.Fatalf("the retried acquisition probes from %v, want its own start %v", since, retry)
	}
	var wg sync.WaitGroup
	wg.Go(func() { k.Leading(termAt(retry), true) })
	close(g.release)
	wg.Wait()
	waitHolding(t, k)
}

// A renewal on the wire at SIGTERM may return after the keeper removed the VIP for the
// shutdown; the election then reports the term again, but the VIP stays off: adding it
// back would delay the release by a guard's probing and point the clients at a node that
// is going away.
func TestAShutDownKeeperDoesNotAddTheVIPAgain(t *testing.T) {
	k, addr, _, clk := newTestKeeper(t)
	k.Leading(termAt(clk.Now()), true)
	if !addr.present {
		t.Fatal("the VIP is not on the NIC after the takeover")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	k.Run(ctx)
	if addr.present {
		t.Fatal("the VIP is still on the NIC after the keeper shut down")
	}
	k.Leading(termAt(clk.Now()), false) // the renewal that was on the wire returns
	advance(k, clk, 300*time.Millisecond)
	if addr.present {
		t.Fatalf("the VIP was added again after the shutdown removed it (%d ensures)", addr.ensures)
	}
}
