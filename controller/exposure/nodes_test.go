// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// clusterObject is the extensions Cluster of the exposure's namespace with the Shoot.
func clusterObject(t *testing.T, s *gardencorev1beta1.Shoot) client.Object {
	t.Helper()
	shoot, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return &extensionsv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}, Spec: extensionsv1alpha1.ClusterSpec{
		Shoot: runtime.RawExtension{Raw: shoot}, CloudProfile: runtime.RawExtension{Raw: []byte(`{}`)}, Seed: &runtime.RawExtension{Raw: []byte(`{}`)}}}
}

func TestSyncNodePairs(t *testing.T) {
	vip := &v1alpha1.ExposureStatus{Identity: "shoot--p--shoot", NetworkID: "net", PortID: "port-1", VIPAddress: "198.18.0.100"}
	cpNode := node("cp-0", "uid-0", map[string]string{LabelControlPlane: ""}, "198.18.0.21")
	for _, tc := range []struct {
		name   string
		status *v1alpha1.ExposureStatus
		nodes  []client.Object
		// edit changes the exposure the sync is asked for (the cached one).
		edit func(exp *extensionsv1alpha1.SelfHostedShootExposure)
		// wantCloud: the sync goes to OpenStack (and gets its error).
		wantCloud bool
	}{
		{"no VIP yet: nothing to pair", &v1alpha1.ExposureStatus{}, []client.Object{cpNode}, nil, false},
		{"another port holds the VIP: no node may carry its pair", func() *v1alpha1.ExposureStatus { s := vip.DeepCopy(); s.VIPHeldBy = "port-x"; return s }(), []client.Object{cpNode}, nil, false},
		// None observed is a transient view; stripping every pair would black-hole the door.
		{"no control-plane Node observed: the pairs stay", vip, nil, nil, false},
		{"a re-created exposure of the same name is not this one", vip, []client.Object{cpNode}, func(exp *extensionsv1alpha1.SelfHostedShootExposure) { exp.UID = "uid-old" }, false},
		{"a gone exposure is skipped", vip, []client.Object{cpNode}, func(exp *extensionsv1alpha1.SelfHostedShootExposure) { exp.Name = "gone" }, false},
		{"control-plane Nodes and a VIP: the pairs are synced", vip, []client.Object{cpNode}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, nil, append([]client.Object{clusterObject(t, testShoot())}, tc.nodes...)...)
			cl.recordStatus(t, tc.status)
			cached := cl.exp.DeepCopy()
			if tc.edit != nil {
				tc.edit(cached)
			}
			err := cl.a.SyncNodePairs(t.Context(), logr.Discard(), cached)
			if tc.wantCloud {
				if !errors.Is(err, errKeystoneDown) || cl.cloud.calls != 1 {
					t.Errorf("got %v after %d logins, want one login", err, cl.cloud.calls)
				}
				return
			}
			if err != nil || cl.cloud.calls != 0 {
				t.Errorf("got %v after %d logins, want nothing done", err, cl.cloud.calls)
			}
		})
	}
}
