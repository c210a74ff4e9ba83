// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

// Package timing holds the agent's election and VIP timings and the one rule that keeps
// the VIP on at most one node: every moment at which this node can still hold the VIP
// lies before the earliest moment at which any follower can take the Lease over. The
// election, the keeper and the validation of the agent's flags and of the providerConfig
// all use the functions here, so the rule exists once.
//
// A term starts at S, the start of the leader's last successful acquisition or renewal.
// A follower sees that write only after it started, so the earliest takeover is S + L
// (L = LeaseDuration, and a follower waits at least the leader's L, see election). This
// node can hold the VIP until the later of:
//
//   - active removal: the term ends at S + D (D = RenewDeadline) and the leader removes the
//     VIP itself, within ActiveRemovalLateness;
//   - the kernel backstop, when the process is dead or frozen: the last refresh completes
//     by RefreshBy(S) = S + L − lifetime − KernelExpiryLateness, and the kernel removes the
//     address within its lifetime plus KernelExpiryLateness of the refresh, so by S + L.
//
// Problems rejects every set of timings for which either bound does not lie before S + L
// or for which the leader has too little time to refresh and renew.
package timing

import (
	"fmt"
	"time"
)

const (
	// KernelExpiryLateness is how long after its valid_lft ran out the kernel may still
	// hold an IPv4 address on a host where no other address changed in the last second.
	// Linux's lifetime check (devinet.c check_lifetime) rounds its next run up to a whole
	// second when that adds less than HZ/4 (250 ms) and the timer wheel adds up to one
	// granule (32 ms at HZ=250, 64 ms at HZ=1000 for a one-second timer).
	// test/integration/vip TestKernelLifetimeExpiry measures it and fails above this
	// budget; it measured up to 277 ms on a HZ=250 kernel. Any other IPv4 address change
	// in the namespace within the second before expiry delays the check by up to a
	// further second; that case is covered by active removal only (docs/agent.md).
	KernelExpiryLateness = 300 * time.Millisecond
	// KernelExpiryEarliness is how early the kernel may remove an address: it counts an
	// address as expired HZ/50 before its lifetime ends (at most 20 ms, at HZ=50+).
	KernelExpiryEarliness = 20 * time.Millisecond
	// ActiveRemovalLateness is the most the living leader may take, after its term ended,
	// to remove the VIP: the election's timer, the callback and one netlink delete, on a
	// node where the agent gets CPU (its pod requests it; docs/agent.md).
	ActiveRemovalLateness = 100 * time.Millisecond
	// KeeperTick is the interval at which the keeper refreshes the VIP and checks the term.
	KeeperTick = 100 * time.Millisecond
	// MinRefreshWindow is the least time a leader must have, after the start of a
	// renewal, to refresh the VIP's lifetime safely (RefreshBy).
	MinRefreshWindow = 100 * time.Millisecond
	// MinRenewBudget is the least time a renewal may take without the VIP lapsing.
	MinRenewBudget = 100 * time.Millisecond
)

// Timings are the election and VIP timings of the agent.
type Timings struct {
	// LeaseDuration: followers take over this long after the last renewal they saw.
	LeaseDuration time.Duration
	// RenewDeadline: the leader's term ends this long after the start of its last
	// successful renewal.
	RenewDeadline time.Duration
	// RetryPeriod: the interval of the leader's renewals.
	RetryPeriod time.Duration
	// VIPLifetime: the kernel valid_lft of the VIP, whole seconds.
	VIPLifetime time.Duration
}

// Defaults returns the default timings.
func Defaults() Timings {
	return Timings{
		LeaseDuration: 1500 * time.Millisecond,
		RenewDeadline: 1300 * time.Millisecond,
		RetryPeriod:   900 * time.Millisecond,
		VIPLifetime:   time.Second,
	}
}

// Term is one leader term, from the start of the acquisition or renewal that began it.
type Term struct {
	// Start is when the successful write started (S).
	Start time.Time
	// End is when the term ends unless renewed (S + D): the leader removes the VIP then.
	End time.Time
	// RefreshBy is the latest moment at which a refresh of the VIP's kernel lifetime may
	// complete: the kernel removes an address refreshed by then before any takeover.
	RefreshBy time.Time
	// EarliestTakeover is the earliest moment at which a follower can take the Lease
	// over (S + L).
	EarliestTakeover time.Time
}

// TermFrom returns the term that a successful write started at start gives.
func (t Timings) TermFrom(start time.Time) Term {
	return Term{
		Start:            start,
		End:              start.Add(t.RenewDeadline),
		RefreshBy:        start.Add(t.LeaseDuration - t.VIPLifetime - KernelExpiryLateness),
		EarliestTakeover: start.Add(t.LeaseDuration),
	}
}

// LatestHold is the latest moment at which this node can still hold the VIP in the term:
// the later of active removal at the end of the term and the kernel's removal of a VIP
// refreshed at RefreshBy.
func (t Timings) LatestHold(term Term) time.Time {
	active := term.End.Add(ActiveRemovalLateness)
	backstop := term.RefreshBy.Add(t.VIPLifetime + KernelExpiryLateness)
	if active.After(backstop) {
		return active
	}
	return backstop
}

// Field names the timing a Problem is about.
type Field string

// The timings, named as in the providerConfig; the agent's flags are the same words in
// kebab case.
const (
	FieldLeaseDuration Field = "leaseDuration"
	FieldRenewDeadline Field = "renewDeadline"
	FieldRetryPeriod   Field = "retryPeriod"
	FieldVIPLifetime   Field = "vipLifetime"
)

// Problem is one broken rule.
type Problem struct {
	Field   Field
	Value   time.Duration
	Message string
}

// Problems lists every rule the timings break.
func (t Timings) Problems() []Problem {
	var out []Problem
	if t.RetryPeriod <= 0 {
		out = append(out, Problem{FieldRetryPeriod, t.RetryPeriod, "must be positive"})
	}
	if t.RenewDeadline <= t.RetryPeriod {
		out = append(out, Problem{FieldRenewDeadline, t.RenewDeadline,
			fmt.Sprintf("must be longer than the retry period (%s)", t.RetryPeriod)})
	}
	if t.VIPLifetime < time.Second || t.VIPLifetime%time.Second != 0 {
		out = append(out, Problem{FieldVIPLifetime, t.VIPLifetime, "must be a whole number of seconds, at least 1s"})
		return out
	}
	// The safety rule: nothing this node holds outlives the earliest takeover.
	term := t.TermFrom(time.Time{})
	// A takeover adds the VIP only after its Lease write returned, so a hold that ends at
	// the earliest takeover itself is still over before the new holder's VIP is on.
	if t.LatestHold(term).After(term.EarliestTakeover) {
		out = append(out, Problem{FieldLeaseDuration, t.LeaseDuration,
			fmt.Sprintf("must exceed the renew deadline (%s) by more than %s, so that the leader removes the VIP before any follower can take over",
				t.RenewDeadline, ActiveRemovalLateness)})
	}
	if window := term.RefreshBy.Sub(term.Start); window < MinRefreshWindow {
		out = append(out, Problem{FieldVIPLifetime, t.VIPLifetime,
			fmt.Sprintf("must be at most the lease duration (%s) less %s, so that the leader can refresh the VIP early enough for the kernel to remove it before a takeover",
				t.LeaseDuration, KernelExpiryLateness+MinRefreshWindow)})
	}
	// Continuity: the last refresh (at most a keeper tick before RefreshBy) must last until
	// the next renewal, RetryPeriod after the start of this one, has completed. Checked
	// only when the rules above hold, so that one mistake gives one message.
	if len(out) == 0 {
		lapse := term.RefreshBy.Add(-KeeperTick + t.VIPLifetime - KernelExpiryEarliness)
		if budget := lapse.Sub(term.Start.Add(t.RetryPeriod)); budget < MinRenewBudget {
			out = append(out, Problem{FieldRetryPeriod, t.RetryPeriod,
				fmt.Sprintf("must be at most %s, so that a renewal can refresh the VIP before it expires",
					t.RetryPeriod+budget-MinRenewBudget)})
		}
	}
	return out
}
