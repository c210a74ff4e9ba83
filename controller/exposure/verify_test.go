// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// succeeded makes the cluster's exposure a Succeeded one of its current generation whose
// front door was verified age ago.
func (cl *fakeCluster) succeeded(t *testing.T, age time.Duration) {
	t.Helper()
	status := cl.verified(t, cl.clock.Now().Add(-age))
	cl.a.setCondition(cl.exp, status, v1alpha1.ConditionVIPHeld, true, reasonHeld, "held")
	cl.recordStatus(t, status)
	cl.exp.Generation, cl.exp.Status.ObservedGeneration = 2, 2
	cl.exp.Status.LastOperation = &gardencorev1beta1.LastOperation{State: gardencorev1beta1.LastOperationStateSucceeded}
}

func TestRefreshOnlyWhileTheVerificationIsRecent(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(cl *fakeCluster)
		age  time.Duration
		want bool
	}{
		{"succeeded and verified a minute ago", nil, time.Minute, true},
		{"verified longer ago than the interval", nil, 6 * time.Minute, false},
		{"the spec changed since", func(cl *fakeCluster) { cl.exp.Generation = 3 }, time.Minute, false},
		{"the last operation failed", func(cl *fakeCluster) { cl.exp.Status.LastOperation.State = gardencorev1beta1.LastOperationStateError }, time.Minute, false},
		{"being deleted", func(cl *fakeCluster) { cl.exp.DeletionTimestamp = &metav1.Time{Time: cl.clock.Now()} }, time.Minute, false},
		{"never operated on", func(cl *fakeCluster) { cl.exp.Status.LastOperation = nil }, time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, nil)
			cl.succeeded(t, tc.age)
			if tc.edit != nil {
				tc.edit(cl)
			}
			if got := cl.a.refreshOnly(cl.exp); got != tc.want {
				t.Errorf("refreshOnly %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNextCheckIsTheEarlierOfRefreshAndVerification(t *testing.T) {
	cl := newCluster(t, nil)
	cl.a.opts.VerifyInterval, cl.a.opts.AgentRefreshInterval, cl.a.opts.FrontDoorProbe = 5*time.Minute, time.Minute, FrontDoorLease
	cl.succeeded(t, 4*time.Minute+30*time.Second)
	if got := cl.a.nextCheck(cl.exp); got != 30*time.Second {
		t.Errorf("with the verification due in 30s: %s", got)
	}
	if got := cl.a.nextCheck(nil); got != time.Minute {
		t.Errorf("just verified: %s, want the refresh interval", got)
	}
	// Without agent refreshes, only the verification brings the exposure back.
	cl.a.opts.FrontDoorProbe = FrontDoorOff
	if got := cl.a.nextCheck(nil); got != 5*time.Minute {
		t.Errorf("without refreshes: %s, want the verify interval", got)
	}
	cl.succeeded(t, time.Hour)
	if got := cl.a.nextCheck(cl.exp); got != time.Second {
		t.Errorf("long overdue: %s, want the floor of 1s", got)
	}
}

// innerReconciler stands for Gardener's reconciler: it counts its runs.
type innerReconciler struct {
	runs   int
	result reconcile.Result
}

func (r *innerReconciler) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	r.runs++
	return r.result, nil
}

// updated stores the changes of the exposure's metadata, spec and status.
func (cl *fakeCluster) updated(t *testing.T) {
	t.Helper()
	status := cl.exp.Status.DeepCopy()
	if err := cl.c.Update(t.Context(), cl.exp); err != nil {
		t.Fatal(err)
	}
	cl.exp.Status = *status
	if err := cl.c.Status().Update(t.Context(), cl.exp); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyingReconciler(t *testing.T) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "kube-system", Name: "shoot"}}
	t.Run("a recently verified exposure only refreshes its agents", func(t *testing.T) {
		cl := newCluster(t, nil)
		cl.a.opts.FrontDoorProbe = FrontDoorLease
		cl.succeeded(t, time.Minute)
		cl.updated(t)
		inner := &innerReconciler{}
		r := &verifyingReconciler{inner: inner, reader: cl.c, actuator: cl.a}
		res, err := r.Reconcile(t.Context(), req)
		if err != nil || inner.runs != 0 || res.RequeueAfter != time.Minute {
			t.Errorf("result %+v, err %v, %d reconciliations; want a refresh requeued after the refresh interval", res, err, inner.runs)
		}
	})
	t.Run("an annotated unchanged exposure is verified against OpenStack", func(t *testing.T) {
		cl := newCluster(t, nil)
		cl.succeeded(t, time.Minute)
		metav1.SetMetaDataAnnotation(&cl.exp.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
		cl.updated(t)
		inner := &innerReconciler{}
		r := &verifyingReconciler{inner: inner, reader: cl.c, actuator: cl.a}
		if _, err := r.Reconcile(t.Context(), req); err != nil || inner.runs != 1 {
			t.Fatalf("err %v, %d reconciliations, want one", err, inner.runs)
		}
		if !cl.a.verifications.take(cl.exp.UID) {
			t.Error("no verification was requested for the actuator")
		}
	})
	t.Run("a reconciliation that asks for a requeue keeps its result", func(t *testing.T) {
		cl := newCluster(t, nil)
		inner := &innerReconciler{result: reconcile.Result{RequeueAfter: 7 * time.Second}}
		r := &verifyingReconciler{inner: inner, reader: cl.c, actuator: cl.a}
		if res, err := r.Reconcile(t.Context(), req); err != nil || res.RequeueAfter != 7*time.Second {
			t.Errorf("result %+v, err %v; want the inner requeue", res, err)
		}
	})
	t.Run("a gone exposure is nothing to do", func(t *testing.T) {
		cl := newCluster(t, nil)
		inner := &innerReconciler{}
		r := &verifyingReconciler{inner: inner, reader: cl.c, actuator: cl.a}
		gone := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "kube-system", Name: "gone"}}
		if res, err := r.Reconcile(t.Context(), gone); err != nil || inner.runs != 0 || !res.IsZero() {
			t.Errorf("result %+v, err %v, %d reconciliations", res, err, inner.runs)
		}
	})
}

func TestRefreshAgentReportsAFrontDoorThatStoppedWorking(t *testing.T) {
	for _, tc := range []struct {
		name       string
		agent      v1alpha1.AgentStatus
		wantHeld   bool
		wantReason string
		wantEvent  string
	}{
		{"no agent holds the Lease", v1alpha1.AgentStatus{DesiredPods: 2, ReadyPods: 2}, false, reasonNoHolder, eventLost},
		{"the holder is not ready", v1alpha1.AgentStatus{LeaseHolder: "cp-1", DesiredPods: 2, ReadyPods: 1}, false, reasonHolderNotReady, eventLost},
		{"the VIP moved to another ready node", v1alpha1.AgentStatus{LeaseHolder: "cp-1", HolderReady: true, DesiredPods: 2, ReadyPods: 2}, true, reasonHeldNotProbed, eventHolderChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, nil)
			cl.a.opts.FrontDoorProbe = FrontDoorLease
			cl.succeeded(t, time.Minute)
			status, _ := DecodeStatus(cl.exp)
			status.Agent = &v1alpha1.AgentStatus{LeaseHolder: "cp-0", HolderReady: true}
			cl.recordStatus(t, status)
			cl.agent.status = &tc.agent
			if err := cl.a.RefreshAgent(t.Context(), logr.Discard(), cl.exp); err != nil {
				t.Fatal(err)
			}
			stored := cl.stored(t)
			held := meta.FindStatusCondition(stored.Conditions, v1alpha1.ConditionVIPHeld)
			if held == nil || (held.Status == metav1.ConditionTrue) != tc.wantHeld || held.Reason != tc.wantReason {
				t.Errorf("VIPHeld %+v, want held %v with %s", held, tc.wantHeld, tc.wantReason)
			}
			if evs := cl.drainEvents(); !slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, tc.wantEvent) }) {
				t.Errorf("events %v, want %s", evs, tc.wantEvent)
			}
			// The Kubernetes Condition mirrors it for kubectl wait.
			exp := &extensionsv1alpha1.SelfHostedShootExposure{}
			_ = cl.c.Get(t.Context(), client.ObjectKeyFromObject(cl.exp), exp)
			if i := slices.IndexFunc(exp.Status.Conditions, func(c gardencorev1beta1.Condition) bool { return string(c.Type) == v1alpha1.ConditionVIPHeld }); i < 0 ||
				(exp.Status.Conditions[i].Status == gardencorev1beta1.ConditionTrue) != tc.wantHeld {
				t.Errorf("status.conditions %+v do not mirror VIPHeld", exp.Status.Conditions)
			}
		})
	}
}

func TestAwaitFrontDoorGivesUpWithARetryableCode(t *testing.T) {
	cl := newCluster(t, nil)
	cl.a.opts.FrontDoorProbe, cl.a.opts.FrontDoorWait = FrontDoorLease, time.Millisecond
	cl.agent.status = &v1alpha1.AgentStatus{DesiredPods: 1}
	status := cl.verified(t, cl.clock.Now())
	err := cl.a.awaitFrontDoor(t.Context(), logr.Discard(), cl.exp, status)
	if !slices.Contains(v1beta1helper.ExtractErrorCodes(err), gardencorev1beta1.ErrorRetryableInfraDependencies) || !strings.Contains(err.Error(), reasonNoHolder) {
		t.Fatalf("got %v, want %s naming %s", err, gardencorev1beta1.ErrorRetryableInfraDependencies, reasonNoHolder)
	}
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionAgentsReady); c == nil || c.Reason != reasonNotAllReady {
		t.Errorf("AgentsReady %+v, want %s", c, reasonNotAllReady)
	}
}
