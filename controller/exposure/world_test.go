// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking"
	"github.com/gardener/gardener-extension-kube-vip/controller/networking/networkingtest"
)

// world is one exposure of cluster c1 (Shoot shoot-a) on the fake Neutron, with the
// exposures of its cluster in a fake kube-apiserver.
type world struct {
	a      *Actuator
	n      *networkingtest.Neutron
	exp    *extensionsv1alpha1.SelfHostedShootExposure
	config Config
	status *v1alpha1.ExposureStatus
	// nodes are the control-plane Nodes the reconciliation sees.
	nodes []controlPlaneNode
}

func newWorld(t *testing.T, uid string, others ...*extensionsv1alpha1.SelfHostedShootExposure) *world {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := extensionsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	exp := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: "kube-system", UID: types.UID(uid)}}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(exp).WithStatusSubresource(exp)
	for _, x := range others {
		b = b.WithObjects(x)
	}
	c := b.Build()
	return &world{
		a:      &Actuator{client: c, reader: c},
		n:      networkingtest.NewNeutron(),
		exp:    exp,
		config: Config{Spec: networking.Spec{NetworkID: "net", SubnetID: "sub", FloatingNetworkID: "ext"}, SubnetCIDR: "198.18.0.0/24", SubnetNetworkID: "net"},
		status: &v1alpha1.ExposureStatus{},
	}
}

// reconcile runs the OpenStack part of a reconciliation as Reconcile does: the
// immutability rule first, then the port, floating IP and pairs.
func (w *world) reconcile(t *testing.T) error {
	t.Helper()
	cfg := w.config
	if err := networking.CheckImmutable(&cfg.Spec, w.status); err != nil {
		return err
	}
	in := &inputs{status: w.status, identity: "c1", config: &cfg, uid: w.exp.UID, namespace: w.exp.Namespace, nodes: w.nodes,
		mark: networking.MarkOf(w.status, "c1", w.exp.UID, &gardencorev1beta1.Shoot{Status: gardencorev1beta1.ShootStatus{UID: "shoot-a"}})}
	status, err := w.a.ensureOpenStack(context.Background(), logr.Discard(), w.n, in, w.status)
	if status != nil {
		w.status = status
	}
	if err == nil {
		w.status.Ingress = ingressOf(w.status, cfg.InternalOnly)
	}
	return err
}

func (w *world) mustReconcile(t *testing.T) {
	t.Helper()
	if err := w.reconcile(t); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}
