// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

var leases = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// fakeLeases is one Lease in memory with the API server's optimistic concurrency: an
// update must carry the current resourceVersion. rv is the store's revision; a test may
// set it back to play an etcd restore.
type fakeLeases struct {
	mu         sync.Mutex
	lease      *coordinationv1.Lease
	rv         uint64
	clock      *clocktesting.FakeClock
	writeDelay time.Duration // each write takes this long on the fake clock
	readDelay  time.Duration // each read takes this long on the fake clock
	// updateErr, when set, fails every update after writeDelay, as a stalled etcd does
	// (nothing is stored).
	updateErr  error
	calls      int
	noDeadline []string // calls made with a context without a deadline
}

func (f *fakeLeases) note(ctx context.Context, call string) {
	f.calls++
	if _, ok := ctx.Deadline(); !ok {
		f.noDeadline = append(f.noDeadline, call)
	}
}

func (f *fakeLeases) Get(ctx context.Context, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.note(ctx, "get")
	if f.readDelay > 0 {
		f.clock.Step(f.readDelay)
	}
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leases, name)
	}
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) Create(ctx context.Context, l *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.note(ctx, "create")
	if f.lease != nil {
		return nil, apierrors.NewAlreadyExists(leases, l.Name)
	}
	f.store(l)
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) Update(ctx context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.note(ctx, "update")
	if f.writeDelay > 0 {
		f.clock.Step(f.writeDelay)
	}
	if f.updateErr != nil {
		return nil, f.updateErr
	}
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leases, l.Name)
	}
	if l.ResourceVersion != f.lease.ResourceVersion {
		return nil, apierrors.NewConflict(leases, l.Name, nil)
	}
	f.store(l)
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// store keeps the Lease as the API server does: serialized, so that times lose what
// JSON does not carry (MicroTime keeps microseconds).
func (f *fakeLeases) store(l *coordinationv1.Lease) {
	f.rv++
	raw, err := json.Marshal(l)
	if err != nil {
		panic(err) // a Lease always serializes
	}
	f.lease = &coordinationv1.Lease{}
	if err := json.Unmarshal(raw, f.lease); err != nil {
		panic(err)
	}
	f.lease.ResourceVersion = strconv.FormatUint(f.rv, 10)
}

// current is the stored Lease, as a watch event would carry it.
func (f *fakeLeases) current() *coordinationv1.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease.DeepCopy()
}

// set replaces the stored Lease, as a hand edit or a restore would.
func (f *fakeLeases) set(l *coordinationv1.Lease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.store(l)
}

type harness struct {
	clock  *clocktesting.FakeClock
	leases *fakeLeases
}

func newHarness() *harness {
	// Not on a microsecond: a real clock never is, and the API server keeps microseconds.
	clk := clocktesting.NewFakeClock(time.Unix(1000, 123456789))
	return &harness{clock: clk, leases: &fakeLeases{clock: clk}}
}

// recorded is what one candidate's callbacks saw.
type recorded struct {
	terms   []timing.Term
	stopped []string
}

func (h *harness) candidate(t *testing.T, identity string, tm timing.Timings) (*Elector, *recorded) {
	t.Helper()
	return h.candidateWith(t, Config{Identity: identity, Timings: tm})
}

// candidateWith is candidate with the eligibility functions of cfg (its Identity and
// Timings too; the rest is the harness's).
func (h *harness) candidateWith(t *testing.T, cfg Config) (*Elector, *recorded) {
	t.Helper()
	rec := &recorded{}
	e, err := New(Config{
		Leases: h.leases, Name: "kube-vip-agent", Identity: cfg.Identity, Timings: cfg.Timings,
		Eligible: cfg.Eligible, MayKeep: cfg.MayKeep, Yield: cfg.Yield, HoldThroughStall: cfg.HoldThroughStall,
		Clock: h.clock, Log: logr.Discard(),
		Callbacks: Callbacks{
			OnLeading:        func(term timing.Term, _ bool) { rec.terms = append(rec.terms, term) },
			OnStoppedLeading: func(reason string) bool { rec.stopped = append(rec.stopped, reason); return true },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e, rec
}

func heldBy(holder string, at time.Time) *coordinationv1.Lease {
	now := metav1.NewMicroTime(at)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-vip-agent"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](2),
			AcquireTime: &now, RenewTime: &now},
	}
}

// waitUntilAcquirable steps the clock in 10 ms steps until the candidate may take the
// Lease and reports how long that took.
func (h *harness) waitUntilAcquirable(e *Elector, limit time.Duration) time.Duration {
	start := h.clock.Now()
	for !e.canAcquire(h.clock.Now()) && h.clock.Since(start) < limit {
		h.clock.Step(10 * time.Millisecond)
	}
	return h.clock.Since(start)
}

func TestTermIsMeasuredFromTheStartOfTheWrite(t *testing.T) {
	h := newHarness()
	h.leases.writeDelay = 120 * time.Millisecond
	a, rec := h.candidate(t, "node-a", timing.Defaults())
	start := h.clock.Now()
	a.tryAcquireOrRenew(context.Background())
	if !a.leading || len(rec.terms) != 1 {
		t.Fatalf("leading=%v terms=%d; want a first term", a.leading, len(rec.terms))
	}
	if want := timing.Defaults().TermFrom(start); rec.terms[0] != want {
		t.Fatalf("term %+v, want %+v (from the start of the write, not its end)", rec.terms[0], want)
	}
}

func TestReleaseIsTakenAtOnceAndExpiryAfterTheLeaseDuration(t *testing.T) {
	h := newHarness()
	a, _ := h.candidate(t, "node-a", timing.Defaults())
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	b.observe(h.leases.current(), false)
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("a follower may take a Lease that was just renewed")
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != timing.Defaults().LeaseDuration {
		t.Fatalf("a follower may take an unrenewed Lease after %s, want the lease duration", took)
	}

	// A graceful stop: the release is taken at once.
	a.stopLeading("shutting down", true)
	b.observe(h.leases.current(), false)
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("a released Lease is not taken at once")
	}
	b.tryAcquireOrRenew(context.Background())
	if !b.leading || holderOf(h.leases.current()) != "node-b" {
		t.Fatal("the follower did not take the released Lease")
	}
}

// M1: a follower with shorter timings must wait for the leader's longer lease duration.
func TestFollowerWaitsTheLeadersLongerLeaseDuration(t *testing.T) {
	h := newHarness()
	loose := timing.Timings{LeaseDuration: 2400 * time.Millisecond, RenewDeadline: 2200 * time.Millisecond,
		RetryPeriod: 1600 * time.Millisecond, VIPLifetime: 2 * time.Second}
	a, rec := h.candidate(t, "node-a", loose)
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	b.observe(h.leases.current(), false)
	took := h.waitUntilAcquirable(b, 5*time.Second)
	if latest := loose.LatestHold(rec.terms[0]); h.clock.Now().Before(latest) {
		t.Fatalf("the follower (lease duration 1.5s) may take over %s after the renewal, while the leader may hold the VIP until %s",
			took, latest.Sub(rec.terms[0].Start))
	}
	if took != loose.LeaseDuration {
		t.Fatalf("the follower waits %s, want the leader's exact lease duration %s", took, loose.LeaseDuration)
	}

	// A Lease written without the exact figure: the whole seconds count.
	h2 := newHarness()
	c, _ := h2.candidate(t, "node-c", timing.Defaults())
	l := heldBy("node-x", h2.clock.Now())
	l.Spec.LeaseDurationSeconds = ptr.To[int32](3)
	h2.leases.set(l)
	c.observe(h2.leases.current(), false)
	if took := h2.waitUntilAcquirable(c, 5*time.Second); took != 3*time.Second {
		t.Fatalf("the follower waits %s for a Lease with leaseDurationSeconds 3, want 3s", took)
	}
}

// H2: after an etcd restore the revision goes backwards; a read or write result must still
// be adopted, or the leader conflicts forever.
func TestRevisionThatWentBackwardsIsAdoptedFromReads(t *testing.T) {
	h := newHarness()
	a, rec := h.candidate(t, "node-a", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	h.leases.rv = 1000 // many writes happen...
	h.clock.Step(900 * time.Millisecond)
	a.tryAcquireOrRenew(context.Background())
	restored := h.leases.current()
	h.leases.rv = 3 // ...and etcd is restored from a backup taken before them
	h.leases.set(restored)

	for i := 0; i < 3; i++ {
		h.clock.Step(200 * time.Millisecond)
		a.tryAcquireOrRenew(context.Background())
	}
	if len(rec.terms) < 3 {
		t.Fatalf("after the restore the leader renewed %d times in 3 attempts; it ignores the restored Lease (resourceVersion %s, it last saw %s)",
			len(rec.terms)-2, h.leases.current().ResourceVersion, a.observed.ResourceVersion)
	}
	// A watch event that trails a newer version is still ignored.
	old := h.leases.current()
	old.ResourceVersion = "1"
	old.Spec.HolderIdentity = ptr.To("node-z")
	a.observe(old, false)
	if holderOf(a.observed) != "node-a" {
		t.Fatal("an older watch event replaced a newer version")
	}
}

// M2: a holder cleared by hand is not a release.
func TestHandClearedHolderIsNotARelease(t *testing.T) {
	h := newHarness()
	a, _ := h.candidate(t, "node-a", timing.Defaults())
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	edited := h.leases.current()
	edited.Spec.HolderIdentity = ptr.To("") // kubectl edit, acquireTime kept
	h.leases.set(edited)
	b.observe(h.leases.current(), false)
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("a follower takes a hand-cleared Lease at once, while the leader may still hold the VIP")
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != timing.Defaults().LeaseDuration {
		t.Fatalf("took %s, want the lease duration", took)
	}
}

// M2: a Lease that names this node but that this process did not write is waited for.
func TestLeaseNamingThisNodeIsOwnOnlyIfThisProcessWroteIt(t *testing.T) {
	h := newHarness()
	h.leases.set(heldBy("node-b", h.clock.Now())) // from a backup, or edited by hand
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("a Lease that names this node but was written elsewhere is taken at once")
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != 2*time.Second {
		t.Fatalf("took %s, want the Lease's 2s", took)
	}
	b.tryAcquireOrRenew(context.Background())
	b.stopLeading("renewal deadline passed", false) // the Lease still names node-b, written by this process
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("this process may not take back its own record")
	}
}

// L3: every API call of the state machine has a deadline.
func TestEveryCallHasADeadline(t *testing.T) {
	h := newHarness()
	a, _ := h.candidate(t, "node-a", timing.Defaults()) // creates the Lease
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	a.tryAcquireOrRenew(context.Background())
	h.clock.Step(2 * time.Second)
	b.tryAcquireOrRenew(context.Background()) // takes the expired Lease
	a.tryAcquireOrRenew(context.Background()) // conflicts and reads again
	h.leases.lease = nil
	a.observe(&coordinationv1.Lease{}, true)
	a.leading = true
	a.tryAcquireOrRenew(context.Background()) // re-creates the deleted Lease
	a.stopLeading("shutting down", true)
	if h.leases.calls < 6 || len(h.leases.noDeadline) != 0 {
		t.Fatalf("%d calls, these without a deadline: %v", h.leases.calls, h.leases.noDeadline)
	}
}

// L4(a): repeated notices of a deletion already known do not restart the wait.
func TestRepeatedDeletionNoticeDoesNotRestartTheWait(t *testing.T) {
	h := newHarness()
	b, _ := h.candidate(t, "node-b", timing.Defaults())
	b.observe(&coordinationv1.Lease{}, false)
	for range 4 {
		h.clock.Step(500 * time.Millisecond)
		b.observe(&coordinationv1.Lease{}, true) // the watch's re-read keeps finding nothing
	}
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("a Lease deleted 2s ago is never re-created while the deletion keeps being reported")
	}
}

// M3: a write that completes after the term's RefreshBy gives a term in which the VIP
// cannot be refreshed. The leader must renew again at once rather than a retry period
// later, or the VIP lapses (and a takeover adds no VIP) for most of a retry period.
func TestSlowWriteIsRenewedAtOnce(t *testing.T) {
	for _, acquiring := range []bool{true, false} {
		h := newHarness()
		tm := timing.Defaults()
		a, rec := h.candidate(t, "node-a", tm)
		if !acquiring {
			a.tryAcquireOrRenew(context.Background())
			h.clock.Step(tm.RetryPeriod)
		}
		// Past the refresh window (lease − lifetime), well inside the renew deadline.
		h.leases.writeDelay = tm.LeaseDuration - tm.VIPLifetime + 50*time.Millisecond
		if acquiring {
			a.tryAcquireOrRenew(context.Background())
		} else {
			a.step(context.Background())
		}
		if n := len(rec.terms); n == 0 || h.clock.Now().Before(rec.terms[n-1].RefreshBy) {
			t.Fatalf("acquiring=%v: the write was not slow enough for the test: terms %+v", acquiring, rec.terms)
		}
		h.leases.writeDelay = 10 * time.Millisecond
		if wait := a.nextWakeup(); wait != 0 {
			t.Fatalf("acquiring=%v: after a write that outlived the refresh window the next renewal is %s away, want at once", acquiring, wait)
		}
		before := len(rec.terms)
		a.step(context.Background())
		if len(rec.terms) != before+1 {
			t.Fatalf("acquiring=%v: no renewal at once after a slow write", acquiring)
		}
		if last := rec.terms[len(rec.terms)-1]; h.clock.Now().After(last.RefreshBy) {
			t.Fatalf("acquiring=%v: the fresh term allows no refresh either", acquiring)
		}
		// Back to the regular pace after a timely write.
		if wait := a.nextWakeup(); wait < tm.RetryPeriod-20*time.Millisecond {
			t.Fatalf("acquiring=%v: next renewal in %s after a timely one, want about the retry period", acquiring, wait)
		}
	}
}

// A failed renewal after a slow one must not turn into a tight loop of writes.
func TestFailedRenewalAfterSlowWriteKeepsThePace(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, _ := h.candidate(t, "node-a", tm)
	h.leases.writeDelay = 450 * time.Millisecond
	a.tryAcquireOrRenew(context.Background())
	h.leases.set(h.leases.current()) // a foreign write: the next renewal conflicts
	h.leases.writeDelay = 0
	a.observed.ResourceVersion = "1"
	a.step(context.Background())
	if wait := a.nextWakeup(); wait == 0 {
		t.Fatal("a failed renewal is retried at once, in a tight loop")
	}
}

// M5: a leader that may keep the lead (the hold after its API server turned unready) goes
// on renewing although it could not take the lead now; once it may not keep it, it ends
// the term and releases the Lease.
func TestLeaderMayKeepWhatItCouldNotTake(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	eligible, mayKeep := true, true
	a, rec := h.candidateWith(t, Config{Identity: "node-a", Timings: tm,
		Eligible: func() bool { return eligible }, MayKeep: func() bool { return mayKeep }})
	a.tryAcquireOrRenew(context.Background())
	eligible = false
	h.clock.Step(tm.RetryPeriod)
	a.step(context.Background())
	if !a.leading || len(rec.terms) != 2 || len(rec.stopped) != 0 {
		t.Fatalf("leading=%v terms=%d stopped=%v: a leader in its hold must renew", a.leading, len(rec.terms), rec.stopped)
	}
	mayKeep = false
	a.step(context.Background())
	if a.leading || len(rec.stopped) != 1 || !isRelease(h.leases.current()) {
		t.Fatalf("leading=%v stopped=%v: a leader whose hold ended must stop and release", a.leading, rec.stopped)
	}
}

// M5 (flapping): a leader that resigned because it was not eligible any more does not win
// its own release back the moment it is eligible again; the others take it at once, and it
// takes the Lease only once nobody renewed it for a lease duration.
func TestResignedLeaderIsHeldDown(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	eligible := true
	a, _ := h.candidateWith(t, Config{Identity: "node-a", Timings: tm, Eligible: func() bool { return eligible }})
	b, _ := h.candidate(t, "node-b", tm)
	a.tryAcquireOrRenew(context.Background())
	eligible = false
	a.step(context.Background())
	if a.leading || !isRelease(h.leases.current()) {
		t.Fatal("the ineligible leader did not resign and release")
	}
	eligible = true // healthy again one probe later
	b.observe(h.leases.current(), false)
	if a.canAcquire(h.clock.Now()) {
		t.Fatal("the node that just resigned may win its own release back: a flapping node moves the VIP again and again")
	}
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("the other candidates may not take the release at once")
	}
	if took := h.waitUntilAcquirable(a, 5*time.Second); took != tm.LeaseDuration {
		t.Fatalf("with nobody else taking it, the resigned node may take the Lease after %s, want the lease duration", took)
	}
}

// downLeases is the Lease API through a kube-apiserver that can die: while down, every call
// fails as a refused connection does.
type downLeases struct {
	*fakeLeases
	down bool
}

var errRefused = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")

func (d *downLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if d.down {
		return nil, errRefused
	}
	return d.fakeLeases.Get(ctx, name, o)
}

func (d *downLeases) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if d.down {
		return nil, errRefused
	}
	return d.fakeLeases.Update(ctx, l, o)
}

// Issue 14, local kube-apiserver dead: the leader whose own kube-apiserver refuses
// connections steps down and releases the Lease through another node's kube-apiserver, so
// that a follower takes over at once instead of after the lease duration. Without a
// fallback the release fails and the Lease can only expire.
func TestReleaseGoesThroughAnotherAPIServerWhenTheLocalOneIsDead(t *testing.T) {
	for _, withFallback := range []bool{true, false} {
		h := newHarness()
		tm := timing.Defaults()
		local := &downLeases{fakeLeases: h.leases}
		healthy := true
		cfg := Config{
			Leases: local, Name: "kube-vip-agent", Identity: "node-a", Timings: tm,
			Eligible: func() bool { return healthy }, Clock: h.clock, Log: logr.Discard(),
			Callbacks: Callbacks{OnStoppedLeading: func(string) bool { return true }},
		}
		if withFallback {
			cfg.Fallbacks = func() []LeaseClient { return []LeaseClient{&downLeases{fakeLeases: h.leases, down: true}, h.leases} }
		}
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		b, _ := h.candidate(t, "node-b", tm)
		a.tryAcquireOrRenew(context.Background())
		if !a.leading {
			t.Fatal("node-a did not acquire")
		}
		local.down, healthy = true, false
		a.step(context.Background())
		if a.leading {
			t.Fatal("the leader whose kube-apiserver died did not step down")
		}
		released := isRelease(h.leases.current())
		b.observe(h.leases.current(), false)
		switch {
		case withFallback && (!released || h.leases.current().Annotations[ReleasedByAnnotation] != "node-a"):
			t.Fatalf("with a second kube-apiserver the Lease was not released by node-a: %+v", h.leases.current())
		case withFallback && !b.canAcquire(h.clock.Now()):
			t.Fatal("the follower may not take the release at once")
		case !withFallback && released:
			t.Fatal("without a fallback the release cannot have been written (the test does not test what it should)")
		}
	}
}

// hangingLeases is the Lease API through a kube-apiserver that accepts connections and
// never answers (its etcd is gone): every write waits for its deadline.
type hangingLeases struct{ *fakeLeases }

func (h *hangingLeases) Update(ctx context.Context, _ *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// The local kube-apiserver that hangs, rather than refuses, must leave the release time to
// go through another one.
func TestReleaseGoesThroughAnotherAPIServerWhenTheLocalOneHangs(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	local := &downLeases{fakeLeases: h.leases}
	a, err := New(Config{
		Leases: local, Fallbacks: func() []LeaseClient { return []LeaseClient{h.leases} }, Name: "kube-vip-agent", Identity: "node-a", Timings: tm,
		Clock: h.clock, Log: logr.Discard(), Callbacks: Callbacks{OnStoppedLeading: func(string) bool { return true }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.tryAcquireOrRenew(context.Background())
	a.cfg.Leases = &hangingLeases{fakeLeases: h.leases}
	a.log = testr.New(t)
	start := time.Now()
	a.stopLeading("not eligible any more", true)
	if took := time.Since(start); !isRelease(h.leases.current()) {
		t.Fatalf("the release did not go through the other kube-apiserver while the local one hung (%s spent)", took.Round(time.Millisecond))
	}
}

// A candidate whose etcd member leads (Yield) takes a release or an expired Lease
// YieldDelay after the others may, so that they win the race, and still takes it when
// nobody does.
func TestCandidateThatShouldYieldTakesOverLast(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	a, _ := h.candidate(t, "node-a", tm)
	b, _ := h.candidateWith(t, Config{Identity: "node-b", Timings: tm, Yield: func(bool) bool { return true }})
	c, _ := h.candidate(t, "node-c", tm)
	a.tryAcquireOrRenew(context.Background())
	b.observe(h.leases.current(), false)
	c.observe(h.leases.current(), false)
	if took := h.waitUntilAcquirable(c, 5*time.Second); took != tm.LeaseDuration {
		t.Fatalf("the other candidate may take an expired Lease after %s, want %s", took, tm.LeaseDuration)
	}
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("the candidate that should yield may take an expired Lease as early as the others")
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != YieldDelay {
		t.Fatalf("the candidate that should yield may take the expired Lease %s after the others, want %s", took, YieldDelay)
	}

	a.tryAcquireOrRenew(context.Background())
	a.stopLeading("test", true)
	b.observe(h.leases.current(), false)
	c.observe(h.leases.current(), false)
	if !c.canAcquire(h.clock.Now()) {
		t.Fatal("the other candidate may not take the release at once")
	}
	if d := b.nextWakeup(); d != YieldDelay {
		t.Fatalf("the yielding candidate sleeps %s after a release, want %s", d, YieldDelay)
	}
	if took := h.waitUntilAcquirable(b, 5*time.Second); took != YieldDelay {
		t.Fatalf("the yielding candidate may take a release after %s, want %s", took, YieldDelay)
	}
}

// A leader whose etcd member leads offers the lead in its renewals and keeps leading: an
// eligible follower that need not defer takes it at once, a deferring one does not, and
// the old leader stops (without a release) when it sees the new holder. The offer ends
// with the leadership of its etcd member.
func TestLeaderThatShouldYieldOffersTheLead(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	yield := false
	a, rec := h.candidateWith(t, Config{Identity: "node-a", Timings: tm, Yield: func(bool) bool { return yield }})
	b, _ := h.candidate(t, "node-b", tm)
	c, _ := h.candidateWith(t, Config{Identity: "node-c", Timings: tm, Yield: func(bool) bool { return true }})
	ctx := context.Background()
	a.tryAcquireOrRenew(ctx)
	b.observe(h.leases.current(), false)
	if b.canAcquire(h.clock.Now()) {
		t.Fatal("a follower may take a Lease whose holder offers nothing")
	}
	yield = true
	h.clock.Step(tm.RetryPeriod)
	a.step(ctx)
	if !a.leading || len(rec.stopped) != 0 {
		t.Fatalf("leading=%v stopped=%v: the leader must keep leading while it offers the lead", a.leading, rec.stopped)
	}
	if got := h.leases.current().Annotations[YieldAnnotation]; got != "node-a" {
		t.Fatalf("renewal carries yield mark %q, want node-a", got)
	}
	b.observe(h.leases.current(), false)
	c.observe(h.leases.current(), false)
	if c.canAcquire(h.clock.Now()) {
		t.Fatal("a follower that should defer itself takes the offer")
	}
	if !b.canAcquire(h.clock.Now()) {
		t.Fatal("an eligible follower may not take the offered lead at once")
	}
	b.step(ctx)
	if !b.leading {
		t.Fatal("the follower did not take the offered lead")
	}
	if got := h.leases.current().Annotations[YieldAnnotation]; got != "" {
		t.Fatalf("the new holder's record carries yield mark %q", got)
	}
	a.observe(h.leases.current(), false)
	a.step(ctx)
	if a.leading || len(rec.stopped) != 1 || holderOf(h.leases.current()) != "node-b" {
		t.Fatalf("leading=%v stopped=%v holder=%s: the old leader must stop, without a release", a.leading, rec.stopped, holderOf(h.leases.current()))
	}

	// The offer ends with the etcd leadership.
	h2 := newHarness()
	d, _ := h2.candidateWith(t, Config{Identity: "node-d", Timings: tm, Yield: func(bool) bool { return yield }})
	d.tryAcquireOrRenew(ctx)
	yield = false
	h2.clock.Step(tm.RetryPeriod)
	d.step(ctx)
	if _, ok := h2.leases.current().Annotations[YieldAnnotation]; ok {
		t.Fatal("the yield mark outlives the etcd leadership")
	}
}

// A node whose kube-apiserver crash-loops must not take the holder's offer in each of its
// healthy moments (and give the VIP back at its next crash): it takes offers only after it
// stayed eligible for OfferHoldDown.
func TestCrashLoopingNodeTakesNoOffer(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	ctx := context.Background()
	a, _ := h.candidateWith(t, Config{Identity: "node-a", Timings: tm, Yield: func(bool) bool { return true }})
	eligible := true
	b, _ := h.candidateWith(t, Config{Identity: "node-b", Timings: tm, Eligible: func() bool { return eligible }})
	b.step(ctx) // b has been eligible
	a.tryAcquireOrRenew(ctx)
	h.clock.Step(tm.RetryPeriod)
	a.step(ctx) // renews with the offer

	eligible = false // b's kube-apiserver crashed...
	b.step(ctx)
	h.clock.Step(30 * time.Second)
	eligible = true // ...and answers again after its back-off
	b.observe(h.leases.current(), false)
	b.step(ctx)
	if b.leading {
		t.Fatal("a node that was not eligible 30s ago took the offered lead: a crash-looping node moves the VIP twice per crash")
	}
	h.clock.Step(OfferHoldDown)
	a.step(ctx) // a renews, still offering
	b.observe(h.leases.current(), false)
	b.step(ctx)
	if !b.leading {
		t.Fatal("a node that stayed eligible for the hold-down does not take the offered lead")
	}
}
