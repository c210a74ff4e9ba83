// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
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
	updateErr error
	// createErr, when set, fails every create, as the controller's Role does.
	createErr  error
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
	if f.createErr != nil {
		return nil, f.createErr
	}
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
	terms    []timing.Term
	stopped  []string
	renewing []time.Time // the clock at each OnRenewing
	// acquiring holds, for each OnAcquiring, the holder the stored Lease named then;
	// acquireFailed counts OnAcquireFailed.
	acquiring     []string
	acquireFailed int
	acquired      []Acquisition // each OnAcquired
}

func (h *harness) candidate(t *testing.T, identity string, tm timing.Timings) (*Elector, *recorded) {
	t.Helper()
	return h.candidateWith(t, Config{Identity: identity, Timings: tm})
}

// candidateWith is candidate with the eligibility functions of cfg (its Identity, MAC and
// Timings too; the rest is the harness's).
func (h *harness) candidateWith(t *testing.T, cfg Config) (*Elector, *recorded) {
	t.Helper()
	rec := &recorded{}
	e, err := New(Config{
		Leases: h.leases, Name: "kube-vip-agent", Identity: cfg.Identity, Timings: cfg.Timings,
		Eligible: cfg.Eligible, MayKeep: cfg.MayKeep, Yield: cfg.Yield, HoldThroughStall: cfg.HoldThroughStall,
		VIPAnswered: cfg.VIPAnswered, VIPSilence: cfg.VIPSilence, MAC: cfg.MAC,
		Clock: h.clock, Log: logr.Discard(),
		Callbacks: Callbacks{
			OnLeading:        func(term timing.Term, _ bool) { rec.terms = append(rec.terms, term) },
			OnRenewing:       func(time.Time) { rec.renewing = append(rec.renewing, h.clock.Now()) },
			OnAcquiring:      func() { rec.acquiring = append(rec.acquiring, holderOf(h.leases.current())) },
			OnAcquireFailed:  func() { rec.acquireFailed++ },
			OnStoppedLeading: func(reason string) bool { rec.stopped = append(rec.stopped, reason); return true },
			OnAcquired:       func(_ *coordinationv1.Lease, a Acquisition) { rec.acquired = append(rec.acquired, a) },
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
