// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress prints what the demo does for the user, each line stamped with the time since
// the demo started. It is safe for concurrent use.
type progress struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

func newProgress(out io.Writer) *progress {
	return &progress{out: out, start: time.Now()}
}

func (p *progress) stamp() string {
	return fmt.Sprintf("[%6.1fs]", time.Since(p.start).Seconds())
}

// Step announces one of the demo's numbered steps.
func (p *progress) Step(n int, title string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "\n%s ==> %d. %s\n", p.stamp(), n, title)
}

// Printf prints one stamped line (a trailing newline is added).
func (p *progress) Printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "%s     %s\n", p.stamp(), fmt.Sprintf(format, args...))
}

// Block prints text without stamps, indented, e.g. commands to copy.
func (p *progress) Block(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(p.out, "    %s\n", line)
	}
}

// Raw prints a line as it is (the READY marker that hack/demo.sh waits for).
func (p *progress) Raw(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.out, line)
}
