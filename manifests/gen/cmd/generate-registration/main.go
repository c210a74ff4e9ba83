// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command generate-registration stamps the version of VERSION and the registry of -registry
// into the chart, the image vector and the operator Extension, then writes
// manifests/gardenlet/controller-registration.yaml: the ControllerRegistration and
// ControllerDeployment (chart embedded as rawChart) derived from the operator Extension. Run
// it from the repository root (`make generate` does).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
)

func main() {
	registry := flag.String("registry", gen.DefaultRegistry, "prefix of the images and the chart, e.g. ghcr.io/<owner>")
	flag.Parse()
	if err := run(".", *registry); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(root, registry string) error {
	version, err := gen.ReadVersion(root)
	if err != nil {
		return err
	}
	if err := gen.Stamp(root, gen.Release{Version: version, Registry: registry}); err != nil {
		return err
	}
	data, err := gen.Registration(root)
	if err != nil {
		return err
	}
	path := filepath.Join(root, gen.RegistrationFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
