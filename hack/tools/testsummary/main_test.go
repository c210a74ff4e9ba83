// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}`,
		`{"Action":"run","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB","Elapsed":0.2}`,
		`{"Action":"run","Package":"p","Test":"TestC"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: needs root\n"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"--- SKIP: TestC (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestC"}`,
		`{"Action":"fail","Package":"p"}`,
		`{"ImportPath":"q","Action":"build-output","Output":"q/x.go:1: syntax error\n"}`,
		`{"ImportPath":"q","Action":"build-fail"}`,
		`{"Action":"fail","Package":"q"}`,
	}, "\n")
	var out bytes.Buffer
	s := newSummarizer(&out, nil)
	if err := s.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	line := s.summary("unit", 0)
	if want := "unit: 1 passed, 2 failed, 1 skipped (0s)"; line != want {
		t.Errorf("summary %q, want %q", line, want)
	}
	for _, want := range []string{"b_test.go:9: boom", "SKIP p TestC: c_test.go:3: needs root", "q/x.go:1: syntax error", "q (package)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestToolingCountedApart(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"pass","Package":"m/controller/exposure","Test":"TestA"}`,
		`{"Action":"pass","Package":"m/test/integration/exposure","Test":"TestB"}`,
		`{"Action":"pass","Package":"m/test/bench/stats","Test":"TestC"}`,
		`{"Action":"fail","Package":"m/test/bench","Test":"TestD"}`,
		`{"Action":"skip","Package":"m/hack/tools/testsummary","Test":"TestE"}`,
		`{"Action":"pass","Package":"m/test/benchmarks","Test":"TestF"}`,
		`{"ImportPath":"m/test/netns","Action":"build-fail"}`,
		`{"Action":"fail","Package":"m/test/netns"}`,
	}, "\n")
	var out bytes.Buffer
	s := newSummarizer(&out, []string{"test/bench", "test/netns", "hack/tools/"})
	if err := s.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	want := "it product: 3 passed, 0 failed, 0 skipped\nit tooling: 1 passed, 2 failed, 1 skipped\n"
	if got := s.split("it"); got != want {
		t.Errorf("split %q, want %q", got, want)
	}
	if got, want := s.summary("it", 0), "it: 4 passed, 2 failed, 1 skipped (0s)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
