// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
)

type signalCounts struct{ served, probeNow atomic.Int32 }

func (s *signalCounts) Served()   { s.served.Add(1) }
func (s *signalCounts) ProbeNow() { s.probeNow.Add(1) }

type stubLeases struct {
	election.LeaseClient
	err     error
	watcher *watch.FakeWatcher
}

func (s *stubLeases) Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return &coordinationv1.Lease{}, s.err
}

func (s *stubLeases) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return s.watcher, nil
}

func TestLeaseRequestsSignalTheHealthMonitor(t *testing.T) {
	stub := &stubLeases{watcher: watch.NewFake()}
	var sig signalCounts
	r := &reportingLeases{LeaseClient: stub, signals: &sig}
	ctx := context.Background()

	_, _ = r.Update(ctx, &coordinationv1.Lease{}, metav1.UpdateOptions{})
	stub.err = apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "x", nil)
	_, _ = r.Update(ctx, &coordinationv1.Lease{}, metav1.UpdateOptions{})
	if sig.served.Load() != 2 || sig.probeNow.Load() != 0 {
		t.Fatalf("served=%d probeNow=%d after a success and a conflict; want 2 served", sig.served.Load(), sig.probeNow.Load())
	}
	stub.err = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	_, _ = r.Update(ctx, &coordinationv1.Lease{}, metav1.UpdateOptions{})
	if sig.probeNow.Load() != 1 {
		t.Fatal("a request without an answer did not ask for a probe")
	}

	w, err := r.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go stub.watcher.Modify(&coordinationv1.Lease{})
	if ev := <-w.ResultChan(); ev.Type != watch.Modified {
		t.Fatalf("event %v not forwarded", ev.Type)
	}
	if sig.served.Load() != 3 {
		t.Fatalf("served=%d: a watch event (on a follower, the leader's renewal) must stand in for a probe", sig.served.Load())
	}
	stub.watcher.Stop() // the API server closed the connection
	deadline := time.Now().Add(2 * time.Second)
	for sig.probeNow.Load() != 2 {
		if time.Now().After(deadline) {
			t.Fatal("a watch that the API server ended did not ask for a probe")
		}
		time.Sleep(time.Millisecond)
	}
}
