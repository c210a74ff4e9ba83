// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingManager is a manager that is never started: it keeps the runnables added to it
// and hands out a fake client, so that the registered controller can be driven directly.
type recordingManager struct {
	manager.Manager
	client client.Client
	added  []manager.Runnable
}

func (m *recordingManager) GetClient() client.Client { return m.client }

func (m *recordingManager) Add(r manager.Runnable) error {
	m.added = append(m.added, r)
	return nil
}

func newRecordingManager(t *testing.T, objects ...client.Object) *recordingManager {
	t.Helper()
	scheme := newScheme(t)
	// Nothing listens at this address; the manager is never started, so nothing dials it.
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &recordingManager{Manager: mgr, client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()}
}

// TestAddToManagerSyncsExposuresOfTheDefaultType: without a type the controller serves
// DefaultType, with the manager's client and the given syncer.
func TestAddToManagerSyncsExposuresOfTheDefaultType(t *testing.T) {
	ours, theirs := exposure("shoot--a", DefaultType), exposure("shoot--b", "metallb")
	mgr := newRecordingManager(t, ours, theirs)
	syncer := &recordingSyncer{}
	// Controller names are unique per process; the test must not claim the real one.
	opts := AddOptions{Syncer: syncer, Controller: controller.Options{SkipNameValidation: ptr.To(true)}}
	if err := AddToManager(t.Context(), mgr, opts); err != nil {
		t.Fatal(err)
	}
	if len(mgr.added) != 1 {
		t.Fatalf("%d runnables added, want the one controller", len(mgr.added))
	}
	ctrl, ok := mgr.added[0].(reconcile.Reconciler)
	if !ok {
		t.Fatalf("added %T, want a controller", mgr.added[0])
	}
	for _, exp := range []client.Object{ours, theirs} {
		if _, err := ctrl.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(exp)}); err != nil {
			t.Fatalf("reconcile %s: %v", client.ObjectKeyFromObject(exp), err)
		}
	}
	if want := []client.ObjectKey{client.ObjectKeyFromObject(ours)}; !slices.Equal(syncer.synced, want) {
		t.Errorf("synced %v, want only the exposure of type %s: %v", syncer.synced, DefaultType, want)
	}
}

func TestAddToManagerRequiresASyncer(t *testing.T) {
	mgr := newRecordingManager(t)
	if err := AddToManager(t.Context(), mgr, AddOptions{}); err == nil {
		t.Fatal("added a controller without a syncer")
	}
	if len(mgr.added) != 0 {
		t.Errorf("%d runnables added without a syncer", len(mgr.added))
	}
}

// TestDefaultRateLimiterIsCappedAtTwoMinutes: a node port that appears after its Node is
// found by a retry within 200ms at first and at the latest two minutes later, however long
// it takes.
func TestDefaultRateLimiterIsCappedAtTwoMinutes(t *testing.T) {
	rl := DefaultRateLimiter()
	req := reconcile.Request{}
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	for i, w := range want {
		if got := rl.When(req); got != w {
			t.Fatalf("retry %d after %s, want %s", i+1, got, w)
		}
	}
	var last time.Duration
	for range 20 {
		last = rl.When(req)
	}
	if last != 2*time.Minute {
		t.Errorf("retry after 23 failures waits %s, want the cap of 2m", last)
	}
	rl.Forget(req)
	if got := rl.When(req); got != want[0] {
		t.Errorf("after a success the next retry waits %s, want %s again", got, want[0])
	}
}
