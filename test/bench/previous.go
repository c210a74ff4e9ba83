// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
)

// buildPreviousAgent builds the kube-vip-agent of git revision rev (the previous release
// of the rolling update) into bin/bench/previous/<commit>/, once per commit. When rev
// has the same tree as HEAD (this branch is what landed last), its first parent is the
// previous release. It returns the binary and the commit.
func buildPreviousAgent(ctx context.Context, log logr.Logger, rev string) (string, string, error) {
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", args...).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
			}
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	commit, err := git("rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return "", "", err
	}
	tree, err := git("rev-parse", commit+"^{tree}")
	if err != nil {
		return "", "", err
	}
	head, err := git("rev-parse", "HEAD^{tree}")
	if err != nil {
		return "", "", err
	}
	if tree == head {
		if commit, err = git("rev-parse", "--verify", commit+"^1"); err != nil {
			return "", "", err
		}
	}
	root, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	bin := filepath.Join(root, "bin", "bench", "previous", commit, "kube-vip-agent")
	if _, err := os.Stat(bin); err == nil {
		log.Info("previous agent release (cached)", "commit", commit[:12], "binary", bin)
		return bin, commit, nil
	}
	src, err := os.MkdirTemp("", "kube-vip-agent-"+commit[:12]+"-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(src)
	log.Info("building the previous agent release", "commit", commit[:12], "to", bin)
	archive := exec.CommandContext(ctx, "sh", "-c", `git archive "$1" | tar -x -C "$2"`, "sh", commit, src)
	archive.Stderr = os.Stderr
	if err := archive.Run(); err != nil {
		return "", "", fmt.Errorf("git archive %s: %w", commit, err)
	}
	// Stripped like the current agent, so that both compare.
	build := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", bin+".tmp", "./cmd/kube-vip-agent")
	build.Dir, build.Stdout, build.Stderr = src, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", "", fmt.Errorf("building kube-vip-agent of %s: %w", commit, err)
	}
	return bin, commit, os.Rename(bin+".tmp", bin)
}
