// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// InCI tells whether the tests run in CI (environment variable CI set to a non-empty value
// other than "false"). There, a missing component is an error, not a reason to skip.
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false"
}

// Unavailable ends the test because a component it needs is not there: t.Fatal in CI,
// t.Skip elsewhere. The message should say how to provide the component.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// RequireRoot ends the test (see Unavailable) unless it runs as root, which network
// namespaces, links and raw sockets need.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "this test needs root (network namespaces); run it as root")
	}
}

// RepoRoot returns the root of this repository: the nearest directory at or above the
// working directory that holds go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getting working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("looking for go.mod in %s: %w", dir, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found at or above the working directory")
		}
		dir = parent
	}
}
