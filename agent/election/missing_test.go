// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package election

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// Under the controller's Role a follower whose Lease was deleted may not create it: it
// says so once, backs off as after refused takeovers, and takes the Lease once it is back.
func TestFollowerWaitsForAMissingLeaseItMayNotCreate(t *testing.T) {
	h := newHarness()
	tm := timing.Defaults()
	e, _ := h.candidate(t, "node-a", tm)
	var logged []string
	e.log = funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})

	h.leases.lease = nil
	h.leases.createErr = apierrors.NewForbidden(leases, "", nil)
	e.observe(&coordinationv1.Lease{}, true)
	for range 5 {
		e.tryAcquireOrRenew(context.Background())
	}
	if e.leading {
		t.Fatal("leading without a Lease")
	}
	waits := 0
	for _, l := range logged {
		if strings.Contains(l, "may not create it") {
			waits++
		}
	}
	if waits != 1 {
		t.Errorf("logged the refused create %d times in 5 attempts, want once: %q", waits, logged)
	}
	if got := e.followerRetry(); got < tm.RetryPeriod {
		t.Errorf("after 5 refused creates the next attempt comes after %s, want at least a retry period (%s)", got, tm.RetryPeriod)
	}

	// The controller creates it again: unheld, no spec.
	h.leases.createErr = nil
	h.leases.set(&coordinationv1.Lease{})
	e.observe(h.leases.current(), true)
	h.waitUntilAcquirable(e, 2*tm.LeaseDuration)
	e.tryAcquireOrRenew(context.Background())
	if !e.leading || holderOf(h.leases.current()) != "node-a" {
		t.Fatalf("leading=%v, holder %q on the re-created Lease", e.leading, holderOf(h.leases.current()))
	}
}
