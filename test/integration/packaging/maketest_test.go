// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeTestExitsWithItsStepsStatus runs make test's own recipe with stand-in steps, so
// that CI's verdict is the tests' verdict: a run whose steps all pass exits 0, and a run
// with a failing step exits non-zero and says FAILED. The stand-ins come in through
// MAKEFILES, which every sub-make reads too.
func TestMakeTestExitsWithItsStepsStatus(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	stubs := filepath.Join(dir, "stubs.mk")
	if err := os.WriteFile(stubs, []byte(".PHONY: stub-pass stub-fail\nstub-pass:\n\t@true\nstub-fail:\n\t@false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		steps  string
		passes bool
		says   string
	}{
		{steps: "stub-pass stub-pass", passes: true, says: "make test: passed"},
		{steps: "stub-pass stub-fail stub-pass", passes: false, says: "make test: FAILED"},
	} {
		t.Run(strings.ReplaceAll(tc.steps, " ", "+"), func(t *testing.T) {
			cmd := exec.Command("make", "--no-print-directory", "test",
				"TEST_STEPS="+tc.steps, "COMPILE_STEPS=stub-pass", "PREBUILD_TARGET=stub-pass",
				"RESULTS="+filepath.Join(t.TempDir(), "results"))
			cmd.Dir = root
			// Under make test itself, the outer make's flags would reach this one too.
			cmd.Env = append(os.Environ(), "MAKEFILES="+stubs, "MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=")
			out, err := cmd.CombinedOutput()
			if passed := err == nil; passed != tc.passes {
				t.Fatalf("make test with steps %q: exit error %v, want passing=%t; output:\n%s", tc.steps, err, tc.passes, out)
			}
			if !strings.Contains(string(out), tc.says) {
				t.Fatalf("make test with steps %q did not say %q; output:\n%s", tc.steps, tc.says, out)
			}
		})
	}
}
