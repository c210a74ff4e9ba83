// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
)

// recordingSyncer records the exposures it was asked to sync and fails with err.
type recordingSyncer struct {
	err    error
	synced []types.NamespacedName
}

func (s *recordingSyncer) SyncNodePairs(_ context.Context, _ logr.Logger, exp *extensionsv1alpha1.SelfHostedShootExposure) error {
	s.synced = append(s.synced, client.ObjectKeyFromObject(exp))
	return s.err
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, extensionsv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func exposure(namespace, typ string) *extensionsv1alpha1.SelfHostedShootExposure {
	e := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: namespace}}
	e.Spec.Type = typ
	return e
}

// newReconciler serves the objects from a fake client; funcs intercept its calls.
func newReconciler(t *testing.T, syncer PairSyncer, funcs interceptor.Funcs, objects ...client.Object) *reconciler {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objects...).WithInterceptorFuncs(funcs).Build()
	return &reconciler{client: c, syncer: syncer, exposureTyp: DefaultType}
}

func TestReconcileSyncsOnlyLiveExposuresOfItsType(t *testing.T) {
	deleting := exposure("deleting", DefaultType)
	// A zero time would serialise as null and the fake client would drop it.
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)}
	deleting.Finalizers = []string{"extensions.gardener.cloud/kube-vip"}
	syncErr := errors.New("port of node m2 not found")
	readErr := errors.New("cache unusable")
	failingGet := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return readErr
	}}

	for _, tc := range []struct {
		name       string
		objects    []client.Object
		funcs      interceptor.Funcs
		syncErr    error
		wantSynced bool
		// wantErr is what the returned error must wrap; nil: no error.
		wantErr error
	}{
		{name: "exposure of the type", objects: []client.Object{exposure("ns", DefaultType)}, wantSynced: true},
		{name: "exposure of another type", objects: []client.Object{exposure("ns", "metallb")}},
		{name: "exposure being deleted", objects: []client.Object{deleting}},
		{name: "exposure gone", objects: nil},
		{name: "sync fails", objects: []client.Object{exposure("ns", DefaultType)}, syncErr: syncErr, wantSynced: true, wantErr: syncErr},
		{name: "read fails", objects: []client.Object{exposure("ns", DefaultType)}, funcs: failingGet, wantErr: readErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			syncer := &recordingSyncer{err: tc.syncErr}
			key := types.NamespacedName{Namespace: "ns", Name: "shoot"}
			if len(tc.objects) > 0 {
				key = client.ObjectKeyFromObject(tc.objects[0])
			}
			r := newReconciler(t, syncer, tc.funcs, tc.objects...)

			result, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: key})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want one wrapping %v", err, tc.wantErr)
			}
			if tc.syncErr != nil && !strings.Contains(err.Error(), key.String()) {
				t.Errorf("error %q does not name the exposure %s", err, key)
			}
			if result != (reconcile.Result{}) {
				t.Errorf("result %+v; requeues are left to the rate limiter", result)
			}
			var want []types.NamespacedName
			if tc.wantSynced {
				want = []types.NamespacedName{key}
			}
			if !slices.Equal(syncer.synced, want) {
				t.Errorf("synced %v, want %v", syncer.synced, want)
			}
		})
	}
}

// TestNodeChangeMapsToEveryExposureOfTheType: the Node itself does not matter, every
// exposure of the extension's type in any namespace is synced.
func TestNodeChangeMapsToEveryExposureOfTheType(t *testing.T) {
	r := newReconciler(t, &recordingSyncer{}, interceptor.Funcs{},
		exposure("shoot--a", DefaultType), exposure("shoot--b", DefaultType), exposure("shoot--c", "metallb"))

	var got []string
	for _, req := range r.exposuresForNode(t.Context(), node(true, "p", "198.18.0.11")) {
		got = append(got, req.String())
	}
	slices.Sort(got)
	if want := []string{"shoot--a/shoot", "shoot--b/shoot"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

// TestNodeChangeThatCannotBeMappedIsLogged: a map function cannot return its error, so the
// lost change must at least show in the log.
func TestNodeChangeThatCannotBeMappedIsLogged(t *testing.T) {
	listErr := errors.New("informer not synced")
	r := newReconciler(t, &recordingSyncer{}, interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return listErr
	}}, exposure("shoot--a", DefaultType))
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})

	requests := r.exposuresForNode(logf.IntoContext(t.Context(), log), node(true, "p", "198.18.0.11"))
	if len(requests) != 0 {
		t.Errorf("requests %v after a failed list, want none", requests)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], listErr.Error()) || !strings.Contains(logged[0], "node change not mapped") {
		t.Errorf("logged %q, want the list error and the lost change", logged)
	}
}
