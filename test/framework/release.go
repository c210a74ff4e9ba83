// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// PreviousRelease is the commit of the last landed release, whose agent the version-skew
// test rolls from and whose chart the helm upgrade test installs first (a branch name such
// as main would name this very tree once it lands). Move it forward when a release lands.
const PreviousRelease = "dc76af36adbfe2abe22235045fe94125b4e63627"

// ErrNoPreviousRelease: the clone lacks PreviousRelease (a shallow clone); tests skip.
var ErrNoPreviousRelease = errors.New("the clone lacks the previous release's commit " + PreviousRelease + " (a shallow clone?)")

// ExtractPreviousRelease writes the tree of PreviousRelease into dir (git archive).
func ExtractPreviousRelease(ctx context.Context, dir string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	// git answers a missing commit with an exit status (and says why); git not running at
	// all, or the context ending, is another failure.
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "cat-file", "-e", PreviousRelease+"^{commit}").CombinedOutput(); err != nil {
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && ctx.Err() == nil {
			return fmt.Errorf("%w: %s", ErrNoPreviousRelease, bytes.TrimSpace(out))
		}
		return fmt.Errorf("looking up the previous release's commit: %w", err)
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git archive "$1" | tar -x -C "$2"`, "sh", PreviousRelease, dir)
	archive.Dir = root
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", PreviousRelease, err, out)
	}
	return nil
}

// BuildHelm builds the helm CLI of go.mod's tool directive to out, the helm the tests run
// as a release's users and its workflow do.
func BuildHelm(ctx context.Context, out string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "helm.sh/helm/v4/cmd/helm")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building helm: %w\n%s", err, out)
	}
	return nil
}
