// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command promrules writes the rule groups of a PrometheusRule manifest as a Prometheus rule
// file, the form `promtool test rules` reads (make promtool-test).
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "promrules:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 3 {
		return fmt.Errorf("usage: promrules <PrometheusRule manifest> <rule file to write>")
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		return fmt.Errorf("reading the manifest: %w", err)
	}
	var manifest struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &manifest); err != nil {
		return fmt.Errorf("decoding %s: %w", os.Args[1], err)
	}
	if manifest.Kind != "PrometheusRule" || len(manifest.Spec.Groups) == 0 {
		return fmt.Errorf("%s is no PrometheusRule with rule groups", os.Args[1])
	}
	out, err := yaml.Marshal(map[string]any{"groups": manifest.Spec.Groups})
	if err != nil {
		return fmt.Errorf("encoding the rule groups: %w", err)
	}
	return os.WriteFile(os.Args[2], out, 0o644)
}
