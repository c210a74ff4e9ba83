// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gardener/gardener-extension-kube-vip/agent"
)

// TestEveryFlagDocumented: docs/design.md's agent CLI table lists every flag the agent has.
func TestEveryFlagDocumented(t *testing.T) {
	design, err := os.ReadFile(filepath.Join("..", "..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Flags in the first column of a table row: | `--a` / `--b` | ...
	documented := map[string]bool{}
	for _, row := range regexp.MustCompile("(?m)^\\| (`--[^|]+)\\|").FindAllSubmatch(design, -1) {
		for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllSubmatch(row[1], -1) {
			documented[string(m[1])] = true
		}
	}
	cfg := agent.DefaultConfig()
	fs := pflag.NewFlagSet("kube-vip-agent", pflag.ContinueOnError)
	var level string
	var version bool
	bindFlags(fs, &cfg, &level, &version)
	fs.VisitAll(func(f *pflag.Flag) {
		if !documented[f.Name] {
			t.Errorf("docs/design.md's agent CLI table lacks --%s", f.Name)
		}
	})
}
