#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Prints what `make test` cost, so that every change to the suite shows its price:
#
#   hack/test-cost.sh RESULTS_DIR [N]
#
# the time of each step (RESULTS_DIR/steps, lines "<step> <seconds>" that make test writes),
# then the N (default 20) slowest top-level tests and the N slowest packages of every tier's
# `go test -json` stream (RESULTS_DIR/*.json, gotestsum's --jsonfile).
set -euo pipefail
dir=$1 n=${2:-20}

mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

if [ -s "$dir/steps" ]; then
  echo "==== time by step"
  total=0
  while read -r step secs; do
    printf '%-22s %8s\n' "$step" "$(mmss "$secs")"
    total=$((total + secs))
  done <"$dir/steps"
  printf '%-22s %8s\n' "all steps" "$(mmss "$total")"
fi

shopt -s nullglob
jsons=("$dir"/*.json)
[ ${#jsons[@]} -gt 0 ] || exit 0
# Each file is one tier; the tier's name is the file's.
events() {
  for f in "${jsons[@]}"; do
    jq -c --arg tier "$(basename "$f" .json)" 'select(.Elapsed != null and (.Action == "pass" or .Action == "fail")) + {tier: $tier}' "$f"
  done
}
slowest() {
  events | jq -rs --argjson n "$n" "$1"' | sort_by(-.Elapsed) | .[:$n][]
    | "\(.Elapsed | floor | tostring | (" " * (6 - length)) + .)s  \(.tier)  \(.Package | sub("^github.com/gardener/gardener-extension-kube-vip/"; ""))\(if .Test then "  " + .Test else "" end)\(if .Action == "fail" then "  (failed)" else "" end)"'
}
echo "==== the $n slowest tests (top level)"
slowest 'map(select(.Test != null and (.Test | contains("/") | not)))'
echo "==== the $n slowest packages"
slowest 'map(select(.Test == null))'
