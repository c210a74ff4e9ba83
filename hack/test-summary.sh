#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Counts a tier's `go test -json` stream (gotestsum's --jsonfile) into the lines that
# `make test` sums up and CI reads:
#
#   hack/test-summary.sh TIER TOOLING_DIRS JSON_FILE SUMMARY_FILE SECONDS
#
# prints "<tier> product: N passed, M failed, K skipped", the same for "tooling" (the tests of
# packages under the comma-separated TOOLING_DIRS: the bench, the harnesses, the build
# tools), and "<tier>: ... (<time>)"; SUMMARY_FILE gets the three (make test sums the
# product and tooling lines). Tests and subtests
# count alike; a package that failed without a failed test (a build error, a crash in
# TestMain, a timeout) counts as one failure. gotestsum prints the tests themselves; its
# closing line cannot tell product from tooling, hence this count.
set -euo pipefail

tier=$1 tooling=$2 json=$3 summary=$4 seconds=$5

[ -s "$json" ] || : >"$json"
lines=$(jq -rs --arg tier "$tier" --arg tooling "$tooling" '
  ($tooling | split(",") | map("/" + ltrimstr("/") | rtrimstr("/"))) as $dirs
  | def kind: . as $p | if any($dirs[]; . as $d | ($p | endswith($d)) or ($p | contains($d + "/"))) then "tooling" else "product" end;
  [.[] | select(.Package != null)] as $events
  | ($events | map(select(.Test != null and (.Action == "pass" or .Action == "fail" or .Action == "skip")))) as $tests
  | ($tests | map(select(.Action == "fail") | .Package) | unique) as $withFailedTest
  | ($events | map(select(.Test == null and .Action == "fail") | .Package) | unique
     | map(select(. as $p | $withFailedTest | index($p) | not))) as $failedPackages
  | def count($k): {
      passed: ($tests | map(select(.Action == "pass" and (.Package | kind) == $k)) | length),
      failed: (($tests | map(select(.Action == "fail" and (.Package | kind) == $k)) | length)
               + ($failedPackages | map(select(kind == $k)) | length)),
      skipped: ($tests | map(select(.Action == "skip" and (.Package | kind) == $k)) | length)};
    def line($c): "\($c.passed) passed, \($c.failed) failed, \($c.skipped) skipped";
    count("product") as $p | count("tooling") as $t
  | "\($tier) product: \(line($p))",
    "\($tier) tooling: \(line($t))",
    "\($tier): \(line({passed: ($p.passed + $t.passed), failed: ($p.failed + $t.failed), skipped: ($p.skipped + $t.skipped)}))"
' "$json")
{
  head -n 2 <<<"$lines"
  echo "$(tail -n 1 <<<"$lines") ($((seconds / 60))m$((seconds % 60))s)"
} | tee "$summary"
