#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Hands what a root run wrote back to the owner of the checkout, so that a later run as that
# user can use it: bin/ (the built binaries and caches), .local/ (state, logs, test results),
# test/bench/out, and Go's build and module caches when they live in that user's home (a
# `sudo -E make test` keeps HOME). Does nothing when not run as root, or when root owns the
# checkout. The Makefile calls it at the end of test, demo, demo-down and bench.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $(id -u) == 0 ]] || exit 0
owner=$(stat -c %u .)
group=$(stat -c %g .)
[[ $owner != 0 ]] || exit 0

paths=()
for p in bin .local test/bench/out; do
	[[ -e $p ]] && paths+=("$p")
done
home=$(getent passwd "$owner" | cut -d: -f6 || true)
for var in GOCACHE GOMODCACHE; do
	dir=$(go env "$var" 2>/dev/null || true)
	# Only caches inside the owner's home are theirs; root's own caches stay root's.
	if [[ -n $home && $home != / && -n $dir && $dir == "$home"/* && -e $dir ]]; then
		paths+=("$dir")
	fi
done
((${#paths[@]})) || exit 0
# The module cache is read-only by design (go mod makes it so); chown keeps the modes.
chown -R --no-dereference "$owner:$group" "${paths[@]}"
echo "handback: ${paths[*]} now belong to uid $owner"
