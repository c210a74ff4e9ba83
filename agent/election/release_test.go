// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

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
