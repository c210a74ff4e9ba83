// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package faults_test

import (
	"context"
	"fmt"
	"slices"
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

// lifecycle creates an exposure, lets Nodes join when r.update, deletes it, and checks the
// exact Neutron state after each step. Each phase runs under its fault of r, if any; the
// exact state checked between the phases makes each phase start from a clean exposure, so
// one run can carry a fault in each phase. It returns the mutating calls of each phase.
func lifecycle(t *testing.T, e *sharedEnv, r run) map[phase][]faults.Call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*converge)
	defer cancel()
	e.setControlPlane(t, ctx, !r.update)
	waitForLabels(t, ctx, e, !r.update)

	exp, identity := newExposure(t, ctx, e, "faults")
	ob := &observer{t: t, e: e, key: client.ObjectKeyFromObject(exp)}
	calls := map[phase][]faults.Call{}
	// A failed run leaves no fault armed for the next.
	defer e.proxy.Arm(nil)
	during := func(p phase, act func()) {
		e.proxy.Arm(r.fault(p))
		act()
		injected := e.proxy.Injected()
		calls[p] = e.proxy.Mutating()
		e.proxy.Arm(nil)
		r.checkInjected(t, p, injected)
	}

	during(phaseCreate, func() {
		if err := e.cp.Client.Create(ctx, exp); err != nil {
			t.Fatalf("creating exposure: %v", err)
		}
		ob.poll(ctx, "the exposure to succeed", succeeded)
	})
	pairs := 3
	if r.update {
		pairs = 0
	}
	vip := assertExact(t, ctx, e, identity, pairs)

	if r.update {
		during(phaseUpdate, func() {
			e.setControlPlane(t, ctx, true)
			ob.poll(ctx, "the node tracker to put the pair on three node ports", func(x *extensionsv1alpha1.SelfHostedShootExposure, err error) bool {
				if err != nil || x.Status.ProviderStatus == nil || strings.Count(string(x.Status.ProviderStatus.Raw), `"portID"`) < 4 { // VIP port + 3 node ports
					return false
				}
				return len(pairHolders(t, ctx, e, vip)) == 3
			})
		})
		assertExact(t, ctx, e, identity, 3)
	}

	during(phaseDelete, func() {
		if err := e.cp.Client.Delete(ctx, exp); err != nil {
			t.Fatalf("deleting exposure: %v", err)
		}
		ob.poll(ctx, "the exposure to be deleted", gone)
	})
	assertNothingLeft(t, ctx, e, identity, vip)

	if len(ob.seen) > 0 {
		t.Errorf("a fault that heals by itself was reported with a code that stops gardenlet's retries: %v", ob.seen)
	}
	return calls
}

// point is one fault at one mutating call of a phase: the nth call of its method and
// class. The controller creates the floating IP and sets the pairs at once, so the calls'
// order across classes differs from run to run; within a class it does not.
type point struct {
	at   phase
	call faults.Call
	nth  int
	kind faults.Kind
}

func (p point) String() string {
	return fmt.Sprintf("%s/%s-%s-%d/%s", p.at, p.call.Method, strings.ReplaceAll(p.call.Class, "/", "_"), p.nth, p.kind)
}

// Which faults each call gets. At every call: a lost response (the call committed; is its
// result found and adopted?), and the two statuses of a concurrent writer, which no call may
// take as final: a 409 (a port create must tell it from an address conflict) and a 412 (the
// revision retry of a port update). The others reach only the transport and the generic
// retry, whatever the call (errors.go: a 5xx, a reset and a timeout are transient alike): a
// 500, a reset connection and a stall take turns over the calls, shifted per phase, and
// every phase has at least three calls, so each kind still hits every phase.
var (
	atEveryCall = []faults.Kind{faults.ResponseLost, faults.Status409, faults.Status412}
	inTurn      = []faults.Kind{faults.Status500, faults.Reset, faults.Stall}
)

// sampled gives the i-th call of a phase atEveryCall and one kind of inTurn.
func sampled(at phase) func(i int) []faults.Kind {
	shift := slices.Index([]phase{phaseCreate, phaseDelete, phaseUpdate}, at)
	return func(i int) []faults.Kind {
		return append(slices.Clone(atEveryCall), inTurn[(i+shift)%len(inTurn)])
	}
}

// every gives each call all the kinds.
func every(kinds ...faults.Kind) func(int) []faults.Kind {
	return func(int) []faults.Kind { return kinds }
}

// points are the faults kinds(i) at the i-th call of a clean run of the phase.
func points(t *testing.T, at phase, clean []faults.Call, kinds func(i int) []faults.Kind) []point {
	t.Helper()
	if len(clean) == 0 {
		t.Fatalf("%s made no mutating call", at)
	}
	t.Logf("%s: %d mutating calls: %v", at, len(clean), clean)
	var out []point
	seen := map[string]int{}
	for i, call := range clean {
		nth := seen[call.String()]
		seen[call.String()]++
		for _, kind := range kinds(i) {
			out = append(out, point{at: at, call: call, nth: nth, kind: kind})
		}
	}
	return out
}

// run is one exposure's life with at most one fault per phase.
type run struct {
	// update: the Nodes become control-plane Nodes only after the exposure succeeded.
	update bool
	points []point
}

func (r run) String() string {
	names := make([]string, len(r.points))
	for i, p := range r.points {
		names[i] = p.String()
	}
	return strings.Join(names, "+")
}

func (r run) point(at phase) (point, bool) {
	for _, p := range r.points {
		if p.at == at {
			return p, true
		}
	}
	return point{}, false
}

// fault is the fault to arm for the phase, nil for none.
func (r run) fault(at phase) *faults.Fault {
	p, ok := r.point(at)
	if !ok {
		return nil
	}
	return &faults.Fault{Kind: p.kind, Index: p.nth, Call: p.call.String()}
}

// checkInjected fails the test when the phase's fault was not injected: the run would not
// test the point it names.
func (r run) checkInjected(t *testing.T, at phase, injected bool) {
	t.Helper()
	if p, ok := r.point(at); ok && !injected {
		t.Fatalf("%s: the fault was not injected: the call did not happen", p)
	}
}

// pair puts the points of a and b into one run each, side by side: the n-th run carries
// a[n] and b[n] (either may have run out).
func pair(a, b []point) []run {
	runs := make([]run, max(len(a), len(b)))
	for n := range runs {
		if n < len(a) {
			runs[n].points = append(runs[n].points, a[n])
		}
		if n < len(b) {
			runs[n].points = append(runs[n].points, b[n])
		}
	}
	return runs
}

// TestFaultsAtEveryMutatingCall injects faults at every mutating Neutron call of create,
// update and delete (points says which); the calls come from clean recorded runs. Every
// point is injected, and each run carries one create and one delete point (or one update
// point): half the exposures for the same points.
func TestFaultsAtEveryMutatingCall(t *testing.T) {
	for _, k := range faults.Kinds {
		if !slices.Contains(atEveryCall, k) && !slices.Contains(inTurn, k) {
			t.Fatalf("fault kind %s is neither at every call nor in turn: the matrix would not inject it", k)
		}
	}
	e := env(t)
	startController(t, e)
	clean := lifecycle(t, e, run{})
	cleanUpdate := lifecycle(t, e, run{update: true})
	for at, calls := range map[phase][]faults.Call{phaseCreate: clean[phaseCreate], phaseDelete: clean[phaseDelete], phaseUpdate: cleanUpdate[phaseUpdate]} {
		if len(calls) < len(inTurn) {
			t.Fatalf("%s made %d mutating calls, fewer than the %d kinds that take turns: some kind would miss it", at, len(calls), len(inTurn))
		}
	}
	runs := pair(points(t, phaseCreate, clean[phaseCreate], sampled(phaseCreate)), points(t, phaseDelete, clean[phaseDelete], sampled(phaseDelete)))
	for _, p := range points(t, phaseUpdate, cleanUpdate[phaseUpdate], sampled(phaseUpdate)) {
		runs = append(runs, run{update: true, points: []point{p}})
	}
	total := 0
	for _, r := range runs {
		t.Run(r.String(), func(t *testing.T) { lifecycle(t, e, r) })
		total += len(r.points)
	}
	t.Logf("%d faults injected in %d exposures", total, len(runs))
}
