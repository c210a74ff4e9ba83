// Package timing holds the agent's election and VIP timings and the rules that tie them
// together. The agent checks its flags with it, and the controller checks the
// providerConfig with it, so that a configuration the agent would refuse is refused
// before it is rolled out.
package timing

import (
	"fmt"
	"time"
)

const (
	// LifetimeSlack covers the kernel's handling of address lifetimes: an IPv4 address
	// with valid_lft N is removed about N seconds after it was last set, from a kernel
	// work queue that may run a little late.
	LifetimeSlack = 50 * time.Millisecond
	// MinRefreshWindow is the least time a leader must have, after the start of a
	// renewal, to refresh the VIP's lifetime within its term.
	MinRefreshWindow = 100 * time.Millisecond
	// MinRenewBudget is the least time a renewal may take without the VIP lapsing: the
	// next renewal starts RetryPeriod after the last one, and the VIP refreshed after the
	// last one expires RenewDeadline − LifetimeSlack after its start.
	MinRenewBudget = 100 * time.Millisecond
	// MinTakeoverMargin is the least time between the end of a leader's term and the
	// earliest takeover by a follower. It covers a refresh whose write lands up to
	// LifetimeSlack after the check, and the kernel's lateness in removing the address.
	MinTakeoverMargin = 2 * LifetimeSlack
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
	if t.LeaseDuration-t.RenewDeadline < MinTakeoverMargin {
		out = append(out, Problem{FieldLeaseDuration, t.LeaseDuration,
			fmt.Sprintf("must exceed the renew deadline (%s) by at least %s", t.RenewDeadline, MinTakeoverMargin)})
	}
	if t.RetryPeriod > 0 && t.RenewDeadline > t.RetryPeriod && t.RenewDeadline-t.RetryPeriod-LifetimeSlack < MinRenewBudget {
		out = append(out, Problem{FieldRetryPeriod, t.RetryPeriod,
			fmt.Sprintf("must be at least %s shorter than the renew deadline (%s), so that a renewal can refresh the VIP before it expires",
				LifetimeSlack+MinRenewBudget, t.RenewDeadline)})
	}
	switch {
	case t.VIPLifetime < time.Second || t.VIPLifetime%time.Second != 0:
		out = append(out, Problem{FieldVIPLifetime, t.VIPLifetime, "must be a whole number of seconds, at least 1s"})
	case t.RenewDeadline-t.VIPLifetime-LifetimeSlack < MinRefreshWindow:
		out = append(out, Problem{FieldRenewDeadline, t.RenewDeadline,
			fmt.Sprintf("must exceed the VIP lifetime (%s) by at least %s, so that the leader can refresh the VIP within its term",
				t.VIPLifetime, LifetimeSlack+MinRefreshWindow)})
	}
	return out
}
