// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/runner"
)

// The steady soak's default systems are names the bench knows: a typo would end the run
// only after the binaries were built.
func TestSteadySoakSystemsExist(t *testing.T) {
	got, err := selectSystems(options{systems: steadySoakSystems}, binaries{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(strings.Split(steadySoakSystems, ",")); len(got) != want {
		t.Fatalf("%d systems, want %d", len(got), want)
	}
}

// The modes exclude each other, and a steady soak's options are checked before the slow
// start.
func TestCheckMode(t *testing.T) {
	soak := runner.SteadySoakOptions{Duration: 30 * time.Minute, BlipEvery: time.Minute, Blackhole: time.Second, Flap: 500 * time.Millisecond, ARPLoss: 0.02}
	for _, tc := range []struct {
		name string
		o    options
		ok   bool
	}{
		{"tables", options{}, true},
		{"steady soak", options{steadySoak: soak}, true},
		{"steady soak and soak", options{steadySoak: soak, soak: 10}, false},
		{"dataplane and soak", options{dataplane: true, soak: 10}, false},
		{"negative steady soak", options{steadySoak: runner.SteadySoakOptions{Duration: -time.Minute}}, false},
	} {
		if err := tc.o.checkMode(); (err == nil) != tc.ok {
			t.Errorf("%s: checkMode = %v, want ok %t", tc.name, err, tc.ok)
		}
		if tc.ok && tc.o.tables() != (tc.name == "tables") {
			t.Errorf("%s: tables() = %t", tc.name, tc.o.tables())
		}
	}
}
