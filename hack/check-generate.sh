#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Fails if `make generate` would change or add a file. Runs the generators in a copy of
# the tree (the files git does not ignore), so the working tree is never touched.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$ROOT"
git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar -cf - --null -T - | tar -xf - -C "$tmp"
make --no-print-directory -C "$tmp" generate >"$tmp/.generate.log" 2>&1 || { cat "$tmp/.generate.log"; exit 1; }
rm -f "$tmp/.generate.log"

stale=""
while IFS= read -r -d '' f; do
  f=${f#./}
  cmp -s "$tmp/$f" "$ROOT/$f" || stale="$stale  $f"$'\n'
done < <(cd "$tmp" && find . -type f -print0)
if [ -n "$stale" ]; then
  printf 'check-generate: `make generate` changes these files; run it and commit the result:\n%s' "$stale"
  exit 1
fi
echo "check-generate: generated files are up to date"
