// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package nodes_test runs the node tracking controller against a real kube-apiserver with
// Gardener's SelfHostedShootExposure CRD, in a controller-runtime manager; only the
// PairSyncer is replaced by a recorder.
package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/nodes"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// recorder is a PairSyncer that records every call and fails the first failures calls.
type recorder struct {
	mu       sync.Mutex
	calls    []string
	failures int
	changed  chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) SyncNodePairs(_ context.Context, _ logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure) error {
	r.mu.Lock()
	r.calls = append(r.calls, exp.Namespace+"/"+exp.Name)
	fail := r.failures > 0
	if fail {
		r.failures--
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	if fail {
		return errors.New("node port not found yet")
	}
	return nil
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) failNext(n int) {
	r.mu.Lock()
	r.failures = n
	r.mu.Unlock()
}

// waitForCalls waits until at least n calls were recorded in total.
func (r *recorder) waitForCalls(t *testing.T, n int, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if calls := r.snapshot(); len(calls) >= n {
			return calls
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("waited %s for %d syncs, got %q", timeout, n, r.snapshot())
		}
	}
}

// settle waits for at least n calls and then until no call came for quiet; it returns
// all calls. A Node created and then given its addresses makes two events, which may or
// may not collapse into one sync.
func (r *recorder) settle(t *testing.T, n int, timeout, quiet time.Duration) []string {
	t.Helper()
	calls := r.waitForCalls(t, n, timeout)
	for {
		select {
		case <-r.changed:
			calls = r.snapshot()
		case <-time.After(quiet):
			return calls
		}
	}
}

// expectNoNewCalls fails if a call is recorded beyond the first n within quiet.
func (r *recorder) expectNoNewCalls(t *testing.T, n int, quiet time.Duration) {
	t.Helper()
	time.Sleep(quiet)
	if calls := r.snapshot(); len(calls) != n {
		t.Fatalf("unexpected syncs: %q (had %d)", calls[n:], n)
	}
}

type env struct {
	ctx context.Context
	c   client.Client
	rec *recorder
}

func startController(t *testing.T, cp *framework.ControlPlane) *env {
	t.Helper()
	mgr, err := manager.New(cp.Config, manager.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	rec := newRecorder()
	err = nodes.AddToManager(t.Context(), mgr, nodes.AddOptions{
		Controller: controller.Options{
			SkipNameValidation: ptr.To(true),
			RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](20*time.Millisecond, time.Second),
		},
		Type:   "kube-vip",
		Syncer: rec,
	})
	if err != nil {
		t.Fatalf("AddToManager: %v", err)
	}
	ctx := framework.StartManager(t, mgr)
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("manager cache did not sync")
	}
	return &env{ctx: ctx, c: cp.Client, rec: rec}
}

func (e *env) createExposure(t *testing.T, name, typ string) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: typ},
			Port:        443,
			Endpoints: []extensionsv1alpha1.ControlPlaneEndpoint{{
				NodeName:  "seed-node",
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.18.0.11"}},
			}},
		},
	}
	if err := e.c.Create(e.ctx, exp); err != nil {
		t.Fatalf("creating exposure %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		cur := &extensionsv1alpha1.SelfHostedShootExposure{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(exp), cur); err != nil {
			return
		}
		if len(cur.Finalizers) > 0 {
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Finalizers = nil
			_ = e.c.Patch(ctx, cur, patch)
		}
		_ = e.c.Delete(ctx, cur)
	})
	return exp
}

func (e *env) createNode(t *testing.T, name string, controlPlane bool, ip string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	if controlPlane {
		node.Labels[controlPlaneLabel] = ""
	}
	if err := e.c.Create(e.ctx, node); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), node) })
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: ip},
		{Type: corev1.NodeHostName, Address: name},
	}
	if err := e.c.Status().Update(e.ctx, node); err != nil {
		t.Fatalf("setting node %s addresses: %v", name, err)
	}
	return node
}

func (e *env) setInternalIP(t *testing.T, node *corev1.Node, ip string) {
	t.Helper()
	patch := client.MergeFrom(node.DeepCopy())
	node.Status.Addresses[0].Address = ip
	if err := e.c.Status().Patch(e.ctx, node, patch); err != nil {
		t.Fatalf("changing node %s InternalIP: %v", node.Name, err)
	}
}

func onlyFor(t *testing.T, calls []string, want string) {
	t.Helper()
	for _, c := range calls {
		if c != want {
			t.Fatalf("sync for %q, want only %q (calls %q)", c, want, calls)
		}
	}
}

const (
	syncTimeout = 15 * time.Second
	quiet       = 1500 * time.Millisecond
)

func TestNodeEventsTriggerSync(t *testing.T) {
	e := startController(t, startControlPlane(t))
	exp := e.createExposure(t, "shoot-a", "kube-vip")
	e.createExposure(t, "shoot-other", "other-exposure")
	want := "kube-system/" + exp.Name

	// Creating and labelling objects without a control-plane node triggers nothing.
	e.rec.expectNoNewCalls(t, 0, quiet)

	cp := e.createNode(t, "cp-1", true, "198.18.0.21")
	calls := e.rec.settle(t, 1, syncTimeout, quiet)
	onlyFor(t, calls, want)
	n := len(calls)

	e.createNode(t, "worker-1", false, "198.18.0.31")
	e.rec.expectNoNewCalls(t, n, quiet)

	// A change that is not about addresses (a heartbeat-like annotation) is ignored.
	patch := client.MergeFrom(cp.DeepCopy())
	cp.Annotations = map[string]string{"example.com/heartbeat": time.Now().Format(time.RFC3339Nano)}
	if err := e.c.Patch(e.ctx, cp, patch); err != nil {
		t.Fatal(err)
	}
	e.rec.expectNoNewCalls(t, n, quiet)

	e.setInternalIP(t, cp, "198.18.0.22")
	calls = e.rec.waitForCalls(t, n+1, syncTimeout)
	onlyFor(t, calls, want)
	n = len(calls)

	if err := e.c.Delete(e.ctx, cp); err != nil {
		t.Fatal(err)
	}
	calls = e.rec.waitForCalls(t, n+1, syncTimeout)
	onlyFor(t, calls, want)
	n = len(calls)

	// A worker that becomes a control-plane node is tracked from then on.
	worker := &corev1.Node{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Name: "worker-1"}, worker); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(worker.DeepCopy())
	worker.Labels[controlPlaneLabel] = ""
	if err := e.c.Patch(e.ctx, worker, patch); err != nil {
		t.Fatal(err)
	}
	calls = e.rec.waitForCalls(t, n+1, syncTimeout)
	onlyFor(t, calls, want)
	n = len(calls)

	if err := e.c.Delete(e.ctx, worker); err != nil {
		t.Fatal(err)
	}
	e.rec.waitForCalls(t, n+1, syncTimeout)
}

func TestSyncErrorIsRetried(t *testing.T) {
	e := startController(t, startControlPlane(t))
	exp := e.createExposure(t, "shoot-b", "kube-vip")
	e.rec.failNext(3)

	start := time.Now()
	e.createNode(t, "cp-retry", true, "198.18.0.41")
	calls := e.rec.waitForCalls(t, 4, syncTimeout)
	onlyFor(t, calls, "kube-system/"+exp.Name)
	t.Logf("4 syncs (3 failed) in %s", time.Since(start).Round(time.Millisecond))
	// After the success nothing is requeued (the Node's second event, its addresses, may
	// add one more sync).
	calls = e.rec.settle(t, 4, syncTimeout, quiet)
	if len(calls) > 5 {
		t.Fatalf("%d syncs after the success, want at most 5 in total: requeued after success?", len(calls))
	}
}

func TestExposureBeingDeletedIsSkipped(t *testing.T) {
	e := startController(t, startControlPlane(t))
	exp := e.createExposure(t, "shoot-c", "kube-vip")

	// Hold the exposure in deletion with a finalizer, as the exposure controller does.
	patch := client.MergeFrom(exp.DeepCopy())
	exp.Finalizers = []string{"extensions.gardener.cloud/selfhostedshootexposure"}
	if err := e.c.Patch(e.ctx, exp, patch); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, exp); err != nil {
		t.Fatal(err)
	}
	// Let the cache see the deletion timestamp before the node event arrives.
	if err := waitFor(e.ctx, 10*time.Second, func() (bool, error) {
		cur := &extensionsv1alpha1.SelfHostedShootExposure{}
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(exp), cur); err != nil {
			return false, err
		}
		return cur.DeletionTimestamp != nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)

	e.createNode(t, "cp-deleting", true, "198.18.0.51")
	e.rec.expectNoNewCalls(t, 0, quiet)

	// A live exposure of the same type next to it is synced.
	live := e.createExposure(t, "shoot-d", "kube-vip")
	e.setInternalIP(t, mustGetNode(t, e, "cp-deleting"), "198.18.0.52")
	onlyFor(t, e.rec.waitForCalls(t, 1, syncTimeout), "kube-system/"+live.Name)
}

func mustGetNode(t *testing.T, e *env, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("condition not met within %s: %w", timeout, err)
			}
			return fmt.Errorf("condition not met within %s", timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
