// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

// Command testsummary reads `go test -json` on stdin, prints what a reader needs (package
// results, the output of failed tests, skip reasons) and a last line
// "<tier>: N passed, M failed, K skipped", and exits non-zero if anything failed. Tests
// and subtests count alike; a package that fails without a failed test (a build error, a
// crash in TestMain) counts as one failure.
//
// With -tooling, tests of the packages under those directories (the bench, the test
// harnesses, the build tools) are counted apart from the product's: two lines,
// "<tier> product: …" and "<tier> tooling: …", come before the tier's line, and the
// summary file gets those two.
//
// gotestsum would print the failures, but its closing line ("DONE 52 tests, 3 skipped,
// 1 failure") has another format and it cannot split product from tooling tests, so this
// stays.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
	ImportPath string
}

type counts struct {
	passed, failed, skipped int
}

func (c *counts) add(o counts) {
	c.passed += o.passed
	c.failed += o.failed
	c.skipped += o.skipped
}

func (c counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.passed, c.failed, c.skipped)
}

type summarizer struct {
	out        io.Writer
	buffered   map[string][]string // output of running tests, by package and test
	failedPkgs map[string]bool
	pkgFailed  map[string]int // failed tests per package
	tooling    []string       // directories (e.g. "test/bench") whose packages are tooling
	product    counts
	tool       counts
	failures   []string
}

func newSummarizer(out io.Writer, tooling []string) *summarizer {
	return &summarizer{out: out, buffered: map[string][]string{}, failedPkgs: map[string]bool{}, pkgFailed: map[string]int{}, tooling: tooling}
}

// countsOf returns the counts a package's tests go to.
func (s *summarizer) countsOf(pkg string) *counts {
	for _, dir := range s.tooling {
		dir = "/" + strings.Trim(dir, "/")
		if strings.HasSuffix(pkg, dir) || strings.Contains(pkg, dir+"/") {
			return &s.tool
		}
	}
	return &s.product
}

func (s *summarizer) total() counts {
	c := s.product
	c.add(s.tool)
	return c
}

func main() {
	tier := flag.String("tier", "tests", "name of the test tier in the summary line")
	summaryFile := flag.String("summary-file", "", "also write the summary line to this file")
	rawFile := flag.String("raw", "", "also copy the raw JSON stream to this file")
	tooling := flag.String("tooling", "", "comma-separated directories (e.g. test/bench,hack/tools) whose tests are counted as tooling, apart from the product's")
	flag.Parse()
	var toolingDirs []string
	if *tooling != "" {
		toolingDirs = strings.Split(*tooling, ",")
	}

	in := io.Reader(os.Stdin)
	if *rawFile != "" {
		if err := os.MkdirAll(filepath.Dir(*rawFile), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
		f, err := os.Create(*rawFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}

	start := time.Now()
	s := newSummarizer(os.Stdout, toolingDirs)
	if err := s.read(in); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	line := s.summary(*tier, time.Since(start))
	file := line + "\n"
	if len(toolingDirs) > 0 {
		split := s.split(*tier)
		fmt.Fprint(s.out, split)
		file = split
	}
	fmt.Fprintln(s.out, line)
	if *summaryFile != "" {
		if err := os.WriteFile(*summaryFile, []byte(file), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
	}
	if s.total().failed > 0 {
		os.Exit(1)
	}
}

func (s *summarizer) read(r io.Reader) error {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for scanner.Scan() {
		text := scanner.Bytes()
		var e event
		if err := json.Unmarshal(text, &e); err != nil || e.Action == "" {
			// Not an event: go's own messages (e.g. "no Go files"); pass them on.
			fmt.Fprintln(s.out, string(text))
			continue
		}
		s.handle(e)
	}
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("reading go test -json: %w", err)
	}
	s.finish()
	return nil
}

func (s *summarizer) handle(e event) {
	key := e.Package + " " + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
	case "build-fail":
		s.failedPkgs[e.ImportPath] = true
	case "output":
		if e.Test == "" {
			// Package-level lines: "ok", "FAIL", "--- FAIL" of TestMain, panics.
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS") {
				fmt.Fprint(s.out, e.Output)
			}
			return
		}
		s.buffered[key] = append(s.buffered[key], e.Output)
	case "pass":
		if e.Test != "" {
			s.countsOf(e.Package).passed++
			delete(s.buffered, key)
		}
	case "skip":
		if e.Test != "" {
			s.countsOf(e.Package).skipped++
			fmt.Fprintf(s.out, "SKIP %s %s: %s\n", e.Package, e.Test, skipReason(s.buffered[key]))
			delete(s.buffered, key)
		}
	case "fail":
		if e.Test == "" {
			s.failedPkgs[e.Package] = true
			return
		}
		s.countsOf(e.Package).failed++
		s.pkgFailed[e.Package]++
		s.failures = append(s.failures, e.Package+" "+e.Test)
		fmt.Fprintf(s.out, "FAIL %s %s (%.1fs)\n", e.Package, e.Test, e.Elapsed)
		for _, l := range s.buffered[key] {
			fmt.Fprint(s.out, "    "+l)
		}
		delete(s.buffered, key)
	}
}

// finish counts failed packages without a failed test, and tests that never ended (a
// package that timed out or crashed).
func (s *summarizer) finish() {
	var pkgs []string
	for p := range s.failedPkgs {
		if s.pkgFailed[p] == 0 {
			pkgs = append(pkgs, p)
		}
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		s.countsOf(p).failed++
		s.failures = append(s.failures, p+" (package)")
	}
	for key, lines := range s.buffered {
		fmt.Fprintf(s.out, "UNFINISHED %s\n", key)
		for _, l := range lines {
			fmt.Fprint(s.out, "    "+l)
		}
	}
}

func (s *summarizer) summary(tier string, took time.Duration) string {
	if len(s.failures) > 0 {
		fmt.Fprintln(s.out, "failed:")
		for _, f := range s.failures {
			fmt.Fprintln(s.out, "  "+f)
		}
	}
	return fmt.Sprintf("%s: %s (%s)", tier, s.total(), took.Round(time.Second))
}

// split returns the product and tooling lines of the tier.
func (s *summarizer) split(tier string) string {
	return fmt.Sprintf("%s product: %s\n%s tooling: %s\n", tier, s.product, tier, s.tool)
}

// skipReason returns the test's last output line that is not the "--- SKIP" line.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "--- SKIP") && !strings.HasPrefix(l, "=== ") {
			return l
		}
	}
	return "(no reason given)"
}
