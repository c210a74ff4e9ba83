// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command generate-registration writes manifests/gardenlet/controller-registration.yaml: the
// ControllerRegistration and ControllerDeployment (chart embedded as rawChart) derived from
// the operator Extension. Run it from the repository root (`make generate` does).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
)

func main() {
	if err := run("."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(root string) error {
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
