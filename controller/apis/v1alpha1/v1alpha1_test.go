// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

func TestImplementationOf(t *testing.T) {
	empty, kubeVIP := AgentImplementation(""), AgentImplementationKubeVIP
	for _, tc := range []struct {
		name  string
		agent *AgentConfig
		want  AgentImplementation
	}{
		{"no agent config", nil, AgentImplementationKubeVIPAgent},
		{"no implementation", &AgentConfig{}, AgentImplementationKubeVIPAgent},
		{"empty implementation", &AgentConfig{Implementation: &empty}, AgentImplementationKubeVIPAgent},
		{"kube-vip", &AgentConfig{Implementation: &kubeVIP}, AgentImplementationKubeVIP},
	} {
		if got := ImplementationOf(tc.agent); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := AgentImplementations(); !slices.Equal(got, []AgentImplementation{AgentImplementationKubeVIPAgent, AgentImplementationKubeVIP}) {
		t.Errorf("AgentImplementations() = %v", got)
	}
}

func TestSchemeKnowsTheKinds(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{&ExposureConfig{}, &ExposureStatus{}} {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0].GroupVersion() != SchemeGroupVersion {
			t.Errorf("%T: kinds %v, %v; want one in %s", obj, gvks, err, SchemeGroupVersion)
		}
	}
}

// TestDeepCopy: for every type, a copy of a fully filled value equals it, and writing
// through every pointer, slice and map of the copy (json.Unmarshal reuses them) leaves the
// original as it was; a nil value copies to nil.
func TestDeepCopy(t *testing.T) {
	for _, typ := range []any{&ExposureConfig{}, &AgentConfig{}, &HealthCheck{}, &ExposureStatus{}, &FamilyVIP{}, &NodePort{}, &AgentStatus{}} {
		ptr := reflect.TypeOf(typ)
		deepCopy := func(v reflect.Value) any { return v.MethodByName("DeepCopy").Call(nil)[0].Interface() }
		if got := reflect.ValueOf(deepCopy(reflect.Zero(ptr))); !got.IsNil() {
			t.Errorf("%s: a nil value's copy is %v", ptr, got)
		}
		for seed := range int64(20) {
			fill := randfill.NewWithSeed(seed).NilChance(0).NumElements(1, 3)
			orig, other := reflect.New(ptr.Elem()), reflect.New(ptr.Elem())
			fill.Fill(orig.Interface())
			fill.Fill(other.Interface())
			copied := deepCopy(orig)
			if !equality.Semantic.DeepEqual(orig.Interface(), copied) {
				t.Fatalf("%s seed %d: the copy differs from the original", ptr, seed)
			}
			if obj, ok := orig.Interface().(runtime.Object); ok && !equality.Semantic.DeepEqual(obj, obj.DeepCopyObject()) {
				t.Fatalf("%s seed %d: DeepCopyObject differs from the original", ptr, seed)
			}
			before := mustJSON(t, orig.Interface())
			if err := json.Unmarshal([]byte(mustJSON(t, other.Interface())), copied); err != nil {
				t.Fatal(err)
			}
			if after := mustJSON(t, orig.Interface()); after != before {
				t.Fatalf("%s seed %d: writing into the copy changed the original:\n%s\nwas\n%s", ptr, seed, after, before)
			}
		}
	}
}

func mustJSON(t *testing.T, obj any) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
