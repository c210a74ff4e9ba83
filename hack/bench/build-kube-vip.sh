#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds upstream kube-vip (default v1.0.0) from the Go module proxy, for the failover
# benchmark and the tests of kube-vip as the agent. The binary is cached outside the clone,
# in $KUBE_VIP_CACHE/kube-vip/<version>/kube-vip (default ~/.cache/gardener-extension-kube-vip),
# so a second run, from any clone, builds nothing. No kube-vip code enters this repository:
# the build happens in a scratch module under that cache's .build.
#
#   hack/bench/build-kube-vip.sh        prints the binary's path on stdout
set -euo pipefail
KUBE_VIP_VERSION=${KUBE_VIP_VERSION:-v1.0.0}
CACHE=${KUBE_VIP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gardener-extension-kube-vip}
OUT=$CACHE/kube-vip/$KUBE_VIP_VERSION
WORK=$CACHE/.build/kube-vip-$KUBE_VIP_VERSION
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
export GONOSUMDB=${GONOSUMDB:+$GONOSUMDB,}github.com/kube-vip
log() { echo "build-kube-vip: $*" >&2; }

mkdir -p "$CACHE"
# One build at a time: a concurrent caller waits for the first one and finds the binary.
exec 9>"$CACHE/.build-kube-vip.lock"
flock 9
if [ ! -x "$OUT/kube-vip" ]; then
  t0=$SECONDS
  rm -rf "$WORK"; mkdir -p "$WORK" "$OUT"; cd "$WORK"
  go mod init local/build-kube-vip >/dev/null 2>&1
  go get "github.com/kube-vip/kube-vip@$KUBE_VIP_VERSION" >&2
  # As upstream's release build (Makefile, Dockerfile): no cgo, stripped.
  CGO_ENABLED=0 go build -ldflags "-s -w" -o "$OUT/kube-vip.tmp" github.com/kube-vip/kube-vip
  mv "$OUT/kube-vip.tmp" "$OUT/kube-vip"
  log "kube-vip $KUBE_VIP_VERSION built in $((SECONDS - t0))s"
fi
echo "$OUT/kube-vip"
