// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"math"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stamp writes this candidate's lease duration into a Lease it is about to write, and
// removes a release mark: only release writes one.
func (e *Elector) stamp(lease *coordinationv1.Lease) {
	lease.Spec.LeaseDurationSeconds = e.leaseSeconds()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[LeaseDurationAnnotation] = strconv.FormatInt(e.cfg.Timings.LeaseDuration.Milliseconds(), 10)
	delete(lease.Annotations, ReleasedByAnnotation)
	if e.offersLead() {
		lease.Annotations[YieldAnnotation] = e.cfg.Identity
	} else {
		delete(lease.Annotations, YieldAnnotation)
	}
}

// leaseSeconds is LeaseDuration rounded up to whole seconds, as the Lease stores it.
func (e *Elector) leaseSeconds() *int32 {
	s := int32(math.Ceil(e.cfg.Timings.LeaseDuration.Seconds()))
	return &s
}

// leaseDurationOf is the lease duration the Lease's writer published: exactly, in the
// annotation, or rounded up to whole seconds in spec.leaseDurationSeconds.
func leaseDurationOf(lease *coordinationv1.Lease) time.Duration {
	if lease == nil {
		return 0
	}
	if ms, err := strconv.ParseInt(lease.Annotations[LeaseDurationAnnotation], 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	if lease.Spec.LeaseDurationSeconds != nil {
		return time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	return 0
}

// isRelease reports whether the Lease is a release record: no holder, and the release mark
// that only release writes (a holder, after its VIP is gone). A holder cleared by hand, or
// an unheld Lease that create made, is not one. The record itself tells, so a candidate
// whose view jumped from the unheld Lease it created straight to the release (a conflict's
// re-read that skipped the short term in between) does not wait for an expiry.
func isRelease(lease *coordinationv1.Lease) bool {
	return holderOf(lease) == "" && lease.Annotations[ReleasedByAnnotation] != ""
}

// ownRecord reports whether the Lease as last seen carries the record this process wrote
// last.
func (e *Elector) ownRecord() bool {
	return e.observed != nil && e.lastWrite != nil && microEq(e.observed.Spec.RenewTime, e.lastWrite)
}

// storedTime is t as the API server stores a MicroTime: to the microsecond. lastWrite
// must compare equal to the renewTime the API server returns, or this process never
// recognises its own record.
func storedTime(t time.Time) metav1.MicroTime {
	return metav1.NewMicroTime(t.Truncate(time.Microsecond))
}

func holderOf(lease *coordinationv1.Lease) string {
	if lease == nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// sameRecord reports whether two versions of the Lease carry the same election record.
func sameRecord(a, b *coordinationv1.LeaseSpec) bool {
	return ptrEq(a.HolderIdentity, b.HolderIdentity) && microEq(a.RenewTime, b.RenewTime) &&
		microEq(a.AcquireTime, b.AcquireTime) && ptrEq(a.LeaseTransitions, b.LeaseTransitions)
}

func ptrEq[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func microEq(a, b *metav1.MicroTime) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(b))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
