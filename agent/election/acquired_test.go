// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

func TestAcquisitionReason(t *testing.T) {
	held := func(holder string, annotations map[string]string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		return l
	}
	released := held("", map[string]string{ReleasedByAnnotation: "node-a"})
	offered := held("node-a", map[string]string{YieldAnnotation: "node-a"})
	for _, tc := range []struct {
		name           string
		lease          *coordinationv1.Lease
		early, expired bool
		want           string
	}{
		{"a release", released, false, false, ReasonRelease},
		{"a release seen long ago", released, false, true, ReasonRelease},
		{"an offer", offered, false, false, ReasonOffer},
		{"an offering holder that stopped renewing", offered, false, true, ReasonExpiry},
		{"an offer of a former holder", held("node-a", map[string]string{YieldAnnotation: "node-b"}), false, false, ReasonExpiry},
		{"a held Lease nobody renewed", held("node-a", nil), false, true, ReasonExpiry},
		{"a Lease created unheld", held("", nil), false, true, ReasonExpiry},
		{"no Lease yet", nil, false, true, ReasonExpiry},
		{"the early takeover's write", held("node-a", nil), true, false, ReasonEarly},
		{"this node's own last record", held("node-self", nil), false, false, ReasonOwnRecord},
		{"this node's name in an expired record it did not write", held("node-self", nil), false, true, ReasonExpiry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := acquisitionReason(tc.lease, "node-self", tc.early, tc.expired); got != tc.want {
				t.Fatalf("reason %q, want %q", got, tc.want)
			}
		})
	}
}

// Every way a follower takes the Lease writes its reason and evidence into the Lease with
// the acquisition write itself, and reports it once through OnAcquired; renewals keep it.
func TestAcquisitionIsRecordedInTheLease(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	ctx := context.Background()
	yield := false
	silentSince := h.clock.Now()
	a, recA := h.candidate(t, "node-a", tm)
	b, recB := h.candidateWith(t, Config{Identity: "node-b", Timings: tm, Yield: func(bool) bool { return yield }})
	c, recC := h.candidateWith(t, Config{Identity: "node-c", MAC: "02:00:00:00:00:0c", Timings: tm, VIPSilence: func() Silence {
		return Silence{HeardAt: silentSince, HeardFrom: "02:00:00:00:00:0b", SilentSince: silentSince}
	}})
	observeAll := func() {
		for _, e := range []*Elector{a, b, c} {
			e.observe(h.leases.current(), false)
		}
	}
	recorded := func(want Acquisition, rec *recorded) {
		t.Helper()
		got, ok := AcquisitionOf(h.leases.current())
		want.At = h.clock.Now().UTC()
		if !ok || got != want {
			t.Fatalf("the Lease records %#v (ok=%v), want %#v", got, ok, want)
		}
		if n := len(rec.acquired); n == 0 || rec.acquired[n-1] != want {
			t.Fatalf("OnAcquired saw %#v, want %#v last", rec.acquired, want)
		}
	}

	// The Lease sync created, unheld: nobody held it.
	a.tryAcquireOrRenew(ctx)
	recorded(Acquisition{Reason: ReasonExpiry, Holder: "node-a"}, recA)
	h.clock.Step(tm.RetryPeriod)
	a.tryAcquireOrRenew(ctx)
	if len(recA.acquired) != 1 {
		t.Fatalf("a renewal reported an acquisition: %+v", recA.acquired)
	}
	if got, _ := AcquisitionOf(h.leases.current()); got.Reason != ReasonExpiry {
		t.Fatalf("the renewal changed the record to %+v", got)
	}

	a.stopLeading("test", true)
	observeAll()
	b.tryAcquireOrRenew(ctx)
	recorded(Acquisition{Reason: ReasonRelease, Holder: "node-b", PreviousHolder: "node-a"}, recB)

	yield = true
	h.clock.Step(tm.RetryPeriod)
	b.step(ctx)
	observeAll()
	a.tryAcquireOrRenew(ctx)
	recorded(Acquisition{Reason: ReasonOffer, Holder: "node-a", PreviousHolder: "node-b"}, recA)

	observeAll()
	b.step(ctx) // sees the new holder and steps down
	if took := h.waitUntilAcquirable(b, 5*time.Second); took < tm.LeaseDuration {
		t.Fatalf("node-b may take the Lease after %s", took)
	}
	b.tryAcquireOrRenew(ctx)
	recorded(Acquisition{Reason: ReasonExpiry, Holder: "node-b", PreviousHolder: "node-a"}, recB)

	observeAll()
	silentSince = h.clock.Now()
	h.clock.Step(412 * time.Millisecond)
	c.takeEarly(ctx)
	recorded(Acquisition{Reason: ReasonEarly, Holder: "node-c", PreviousHolder: "node-b", SilenceMillis: 412, LastHeardMAC: "02:00:00:00:00:0b", HolderMAC: "02:00:00:00:00:0c"}, recC)
	// A follower counts only answers from the MAC the holder recorded.
	observeAll()
	if got := a.view().holderMAC; got != "02:00:00:00:00:0c" {
		t.Fatalf("node-a's view of node-c's MAC is %q, want the recorded 02:00:00:00:00:0c", got)
	}

	c.stopLeading("test", false) // its record stays
	c.tryAcquireOrRenew(ctx)
	recorded(Acquisition{Reason: ReasonOwnRecord, Holder: "node-c", PreviousHolder: "node-c", HolderMAC: "02:00:00:00:00:0c"}, recC)
}

// A Lease whose holder wrote no record (upstream kube-vip), or whose record is an earlier
// holder's, tells nothing.
func TestAcquisitionOfAnotherWriter(t *testing.T) {
	lease := heldBy("node-a", time.Unix(1000, 0))
	if _, ok := AcquisitionOf(lease); ok {
		t.Fatal("a Lease without the annotation has a record")
	}
	Acquisition{Reason: ReasonRelease, Holder: "node-b"}.record(lease)
	if _, ok := AcquisitionOf(lease); ok {
		t.Fatal("another holder's record counts as the current holder's")
	}
}
