package timing

import (
	"testing"
	"time"
)

func TestDefaultsHaveNoProblems(t *testing.T) {
	if p := Defaults().Problems(); len(p) != 0 {
		t.Fatalf("defaults: %v", p)
	}
}

func TestProblems(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Timings)
		field  Field
	}{
		"retry not below renew":   {func(t *Timings) { t.RetryPeriod = 1300 * time.Millisecond }, FieldRenewDeadline},
		"renew not below lease":   {func(t *Timings) { t.LeaseDuration = time.Second }, FieldLeaseDuration},
		"fractional lifetime":     {func(t *Timings) { t.VIPLifetime = 1500 * time.Millisecond }, FieldVIPLifetime},
		"lifetime fills the term": {func(t *Timings) { t.VIPLifetime = 2 * time.Second; t.LeaseDuration = 3 * time.Second }, FieldRenewDeadline},
		"zero retry":              {func(t *Timings) { t.RetryPeriod = 0 }, FieldRetryPeriod},
		"no takeover margin":      {func(t *Timings) { t.LeaseDuration = t.RenewDeadline + time.Millisecond }, FieldLeaseDuration},
		"no time to renew":        {func(t *Timings) { t.RetryPeriod = 1280 * time.Millisecond }, FieldRetryPeriod},
	} {
		t.Run(name, func(t *testing.T) {
			tm := Defaults()
			tc.mutate(&tm)
			found := false
			for _, p := range tm.Problems() {
				found = found || p.Field == tc.field
			}
			if !found {
				t.Fatalf("no problem on %s in %v", tc.field, tm.Problems())
			}
		})
	}
}
