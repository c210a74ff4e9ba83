// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

func TestDecodeStatus(t *testing.T) {
	typed := &v1alpha1.ExposureStatus{PortID: "typed"}
	for _, tc := range []struct {
		name    string
		raw     *runtime.RawExtension
		want    string
		wantErr bool
	}{
		{"none", nil, "", false},
		{"empty", &runtime.RawExtension{}, "", false},
		{"as JSON", &runtime.RawExtension{Raw: []byte(`{"portID":"json"}`)}, "json", false},
		{"as a typed object", &runtime.RawExtension{Object: typed}, "typed", false},
		{"unreadable", &runtime.RawExtension{Raw: []byte(`{"portID":`)}, "", true},
	} {
		exp := &extensionsv1alpha1.SelfHostedShootExposure{}
		exp.Status.ProviderStatus = tc.raw
		got, err := DecodeStatus(exp)
		if (err != nil) != tc.wantErr || (err == nil && got.PortID != tc.want) {
			t.Errorf("%s: %+v, %v; want port %q, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	// The decoded status is a copy: changing it leaves the object's alone.
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	exp.Status.ProviderStatus = &runtime.RawExtension{Object: typed}
	got, _ := DecodeStatus(exp)
	got.PortID = "changed"
	if typed.PortID != "typed" {
		t.Error("DecodeStatus returned the object's own status")
	}
}

func TestPatchStatusWritesOnlyChanges(t *testing.T) {
	cl := newCluster(t, nil)
	status := &v1alpha1.ExposureStatus{PortID: "port-1", Conditions: []metav1.Condition{{Type: v1alpha1.ConditionVIPHeld, Status: metav1.ConditionTrue, Reason: reasonHeld}}}
	// A condition of another type in status.conditions (Gardener's) is kept.
	cl.exp.Status.Conditions = []gardencorev1beta1.Condition{{Type: "Gardener", Status: gardencorev1beta1.ConditionTrue}}
	cl.recordStatus(t, status)
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := cl.c.Get(t.Context(), client.ObjectKeyFromObject(cl.exp), exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Status.Conditions) != 2 || exp.Status.Conditions[0].Type != "Gardener" || string(exp.Status.Conditions[1].Type) != v1alpha1.ConditionVIPHeld {
		t.Errorf("status.conditions %+v, want Gardener's kept and VIPHeld mirrored", exp.Status.Conditions)
	}
	if stored := cl.stored(t); stored.PortID != "port-1" || stored.Kind != "ExposureStatus" {
		t.Errorf("stored %+v", stored)
	}

	// The same status again is no write: the resourceVersion stays.
	version := exp.ResourceVersion
	if err := cl.a.patchStatus(t.Context(), exp, status.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	again := &extensionsv1alpha1.SelfHostedShootExposure{}
	_ = cl.c.Get(t.Context(), client.ObjectKeyFromObject(cl.exp), again)
	if again.ResourceVersion != version {
		t.Errorf("an unchanged status was written (resourceVersion %s -> %s)", version, again.ResourceVersion)
	}
}

func TestExposureOwning(t *testing.T) {
	// A taken-over front door names its first exposure as owner: that one is live while
	// the exposure that recorded it is.
	taker := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: "taker", Namespace: "kube-system", UID: "uid-taker"}}
	taker.Status.ProviderStatus = &runtime.RawExtension{Raw: []byte(`{"owner":"uid-lost"}`)}
	cl := newCluster(t, nil, taker)
	for uid, want := range map[string]string{"uid-self": "kube-system/shoot", "uid-lost": "kube-system/taker", "uid-gone": ""} {
		got, err := cl.a.exposureOwning(t.Context(), "kube-system", uid)
		if err != nil || got != want {
			t.Errorf("%s: %q (%v), want %q", uid, got, err, want)
		}
	}

	// The next claimant's cache may not show the taker's recorded owner yet: what counts is
	// the API's answer.
	// The API reader answers only in kube-system, as the chart's Role does.
	stale := newCluster(t, nil, &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: taker.ObjectMeta})
	a := &Actuator{client: stale.c, reader: interceptor.NewClient(cl.c.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if o := (&client.ListOptions{}).ApplyOptions(opts); o.Namespace != "kube-system" {
				return apierrors.NewForbidden(schema.GroupResource{Group: "extensions.gardener.cloud", Resource: "selfhostedshootexposures"}, "", errors.New("the Role grants kube-system only"))
			}
			return c.List(ctx, list, opts...)
		},
	})}
	if got, err := a.exposureOwning(t.Context(), "kube-system", "uid-lost"); err != nil || got != "kube-system/taker" {
		t.Errorf("with a stale cache: %q (%v), want the taker the API shows", got, err)
	}
}
