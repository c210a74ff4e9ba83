// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestGardenadmInit drives the controller with Gardener v1.150.0's own code, as `gardenadm
// init` does: the exposure named after the shoot in kube-system, spec.port 443, the Ready
// control-plane Nodes of the moment as spec.endpoints (here the first node only: the other
// two are not Ready yet), Deploy and Wait, and the DNS value computed once from
// status.ingress. The node tracker's concern, the VIP pair on every control-plane port,
// does not depend on spec.endpoints. A second `gardenadm init` gets the same address, and the
// controller writes nothing to OpenStack for it; a third, at once, returns only after the
// verification it asked for.
func TestGardenadmInit(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	identity := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, identity, 3)
	setReady(t, ctx, e, nodes[0].name)
	cut := startController(t, e)
	g := &framework.Gardenadm{Client: e.cp.Client, Log: testLogger(t), WaitInterval: 250 * time.Millisecond}
	key := clientKey(framework.DefaultShootName)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := g.Destroy(ctx); err != nil {
			t.Errorf("destroy: %v", err)
			forceCleanup(ctx, e, identity)
			return
		}
		if left := taggedPorts(t, ctx, e, identity); len(left) > 0 {
			t.Errorf("after destroy Neutron still has %d ports tagged for %s", len(left), identity)
			forceCleanup(ctx, e, identity)
		}
	})

	before := cut.metrics.Snapshot()
	start := time.Now()
	dns, err := g.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := cut.metrics.Snapshot().Sub(before)
	t.Logf("gardenadm init: DNS value %v after %s, %d OpenStack calls (%d writes): %v", dns, time.Since(start).Round(time.Millisecond), calls.Total(), calls.Writes(), calls)

	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, key, exp); err != nil {
		t.Fatalf("the exposure named after the shoot: %v", err)
	}
	if exp.Spec.Port != 443 || exp.Spec.ProviderConfig != nil {
		t.Errorf("spec.port %d, providerConfig %v: want Gardener's 443 and none", exp.Spec.Port, exp.Spec.ProviderConfig)
	}
	if names := endpointNames(exp); !slices.Equal(names, []string{nodes[0].name}) {
		t.Errorf("spec.endpoints name %v, want the Ready node %s only", names, nodes[0].name)
	}
	status, err := exposure.DecodeStatus(exp)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dns, []string{status.FloatingIPAddress}) {
		t.Errorf("DNS value %v, want the floating IP %s", dns, status.FloatingIPAddress)
	}
	// Every control-plane port carries the pair, the nodes not in spec.endpoints too.
	checkPairs(t, ctx, e, nodes, status.VIPAddress, true)
	tagged := taggedPorts(t, ctx, e, identity)
	if len(tagged) != 1 || len(floatingIPsOfPort(t, ctx, e, tagged[0].ID)) != 1 {
		t.Errorf("Neutron holds %d VIP ports for the cluster, want one with one floating IP", len(tagged))
	}

	// The other nodes become Ready; gardenadm init runs again.
	setReady(t, ctx, e, nodes[1].name)
	setReady(t, ctx, e, nodes[2].name)
	before = cut.metrics.Snapshot()
	again, err := g.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls = cut.metrics.Snapshot().Sub(before)
	t.Logf("gardenadm init again: DNS value %v, %d OpenStack calls (%d writes): %v", again, calls.Total(), calls.Writes(), calls)
	if !slices.Equal(again, dns) {
		t.Errorf("the second init's DNS value %v, want the first's %v", again, dns)
	}
	if calls.Writes() != 0 {
		t.Errorf("the second init made %d OpenStack writes: %v", calls.Writes(), calls)
	}

	// Once more at once, on an unchanged spec: Gardener's annotation asks for a verification,
	// and Init returns only after it, though its request falls in the second of the last
	// update (Gardener compares the two at second granularity).
	// It reads the exposure every millisecond, so that it would see the moment between
	// Gardener's wrapper removing the annotation and the reconciler marking it Processing.
	eager := *g
	eager.WaitInterval = time.Millisecond
	before = cut.metrics.Snapshot()
	if _, err := eager.Init(ctx); err != nil {
		t.Fatal(err)
	}
	calls = cut.metrics.Snapshot().Sub(before)
	t.Logf("gardenadm init a third time, at once: %d OpenStack calls (%d writes): %v", calls.Total(), calls.Writes(), calls)
	if calls.Total() == 0 || calls.Writes() != 0 {
		t.Errorf("the third init returned after %d OpenStack calls (%d writes): want the verification's reads, and no write", calls.Total(), calls.Writes())
	}
}

// setReady sets the Node's Ready condition (ControlPlaneEndpointsFromNodes keeps Ready
// Nodes only).
func setReady(t *testing.T, ctx context.Context, e *sharedEnv, name string) {
	t.Helper()
	node := &corev1.Node{}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := e.cp.Client.Status().Update(ctx, node); err != nil {
		t.Fatalf("setting %s Ready: %v", name, err)
	}
}

func endpointNames(exp *extensionsv1alpha1.SelfHostedShootExposure) []string {
	var out []string
	for _, ep := range exp.Spec.Endpoints {
		out = append(out, ep.NodeName)
	}
	return out
}
