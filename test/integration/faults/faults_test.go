// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/test/faults"
)

// phase is the part of an exposure's life in which a fault is injected.
type phase string

const (
	// phaseCreate: the exposure is created while three control-plane Nodes exist (VIP port,
	// floating IP, three pairs).
	phaseCreate phase = "create"
	// phaseUpdate: three Nodes become control-plane Nodes after the exposure succeeded;
	// the node tracker adds the three pairs.
	phaseUpdate phase = "update"
	// phaseDelete: the exposure with three pairs is deleted.
	phaseDelete phase = "delete"
)

// lifecycle creates an exposure, lets Nodes join for phaseUpdate, deletes it, and checks
// the exact Neutron state after each step. The fault is armed for the given phase only.
// It returns the mutating calls of that phase and whether the fault was injected.
func lifecycle(t *testing.T, e *sharedEnv, at phase, fault *faults.Fault) (calls []faults.Call, injected bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*converge)
	defer cancel()
	e.setControlPlane(t, ctx, at != phaseUpdate)
	waitForLabels(t, ctx, e, at != phaseUpdate)

	exp, identity := newExposure(t, ctx, e, "faults")
	ob := &observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}
	arm := func(p phase) {
		if p == at {
			e.proxy.Arm(fault)
		}
	}
	disarm := func(p phase) {
		if p == at {
			calls, injected = e.proxy.Mutating(), e.proxy.Injected()
			e.proxy.Arm(nil)
		}
	}

	arm(phaseCreate)
	if err := e.cp.Client.Create(ctx, exp); err != nil {
		t.Fatalf("creating exposure: %v", err)
	}
	ob.poll(ctx, "the exposure to succeed", succeeded)
	disarm(phaseCreate)
	pairs := 3
	if at == phaseUpdate {
		pairs = 0
	}
	vip := assertExact(t, ctx, e, identity, pairs)

	if at == phaseUpdate {
		arm(phaseUpdate)
		e.setControlPlane(t, ctx, true)
		ob.poll(ctx, "the node tracker to put the pair on three node ports", func(x *extensionsv1alpha1.SelfHostedShootExposure, err error) bool {
			if err != nil || x.Status.ProviderStatus == nil || strings.Count(string(x.Status.ProviderStatus.Raw), `"portID"`) < 4 { // VIP port + 3 node ports
				return false
			}
			return len(pairHolders(t, ctx, e, vip)) == 3
		})
		disarm(phaseUpdate)
		assertExact(t, ctx, e, identity, 3)
	}

	arm(phaseDelete)
	if err := e.cp.Client.Delete(ctx, exp); err != nil {
		t.Fatalf("deleting exposure: %v", err)
	}
	ob.poll(ctx, "the exposure to be deleted", gone)
	disarm(phaseDelete)
	assertNothingLeft(t, ctx, e, identity, vip)

	if len(ob.seen) > 0 {
		t.Errorf("a fault that heals by itself was reported with a code that stops gardenlet's retries: %v", ob.seen)
	}
	return calls, injected
}

// TestFaultsAtEveryMutatingCall injects each fault kind at every mutating Neutron call of
// create, update and delete. The call indexes come from a clean recorded run.
func TestFaultsAtEveryMutatingCall(t *testing.T) {
	e := env(t)
	startController(t, e)
	total := 0
	for _, at := range []phase{phaseCreate, phaseUpdate, phaseDelete} {
		clean, _ := lifecycle(t, e, at, nil)
		if len(clean) == 0 {
			t.Fatalf("%s made no mutating call", at)
		}
		t.Logf("%s: %d mutating calls: %v", at, len(clean), clean)
		for i, call := range clean {
			for _, kind := range faults.Kinds {
				t.Run(fmt.Sprintf("%s/%d-%s-%s/%s", at, i, call.Method, strings.ReplaceAll(call.Class, "/", "_"), kind), func(t *testing.T) {
					_, injected := lifecycle(t, e, at, &faults.Fault{Kind: kind, Index: i})
					if !injected {
						t.Fatalf("the fault was not injected: call %d did not happen", i)
					}
				})
				total++
			}
		}
	}
	t.Logf("%d faults injected", total)
}
