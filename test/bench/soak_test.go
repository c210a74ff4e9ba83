// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
)

// The soak's agent does not roll: its default set leaves rolling-update out, and asking
// for it is refused before the harness starts instead of ending the soak at its first run.
func TestSoakScenariosLeaveOutWhatTheAgentCannotPrepare(t *testing.T) {
	sys := sut.Agent{}
	all, err := selectScenarios("")
	if err != nil {
		t.Fatal(err)
	}
	got, err := soakScenarios(sys, all, false)
	if err != nil {
		t.Fatalf("default set: %v", err)
	}
	kept := map[string]bool{}
	for _, sc := range got {
		kept[sc.Name] = true
	}
	left := 0
	for _, sc := range all {
		applies := sc.Applies == nil || sc.Applies(sys)
		if !applies {
			left++
		}
		if kept[sc.Name] != applies {
			t.Errorf("default set: %q kept = %t, want %t (whether it applies to %s)", sc.Name, kept[sc.Name], applies, sys.Name())
		}
	}
	if left == 0 {
		t.Fatal("every scenario applies to the soak's agent: the test no longer checks anything")
	}

	chosen, err := selectScenarios("graceful,rolling-update")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := soakScenarios(sys, chosen, true); err == nil || !strings.Contains(err.Error(), `"rolling-update"`) {
		t.Errorf("-scenarios graceful,rolling-update: error = %v, want a refusal naming rolling-update", err)
	}
}
