#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds kube-apiserver and etcd from source through the Go module proxy (nothing
# prebuilt can be downloaded here) and caches them outside the clone, in
# $KUBE_VIP_CACHE/k8s/<version>/ (default ~/.cache/gardener-extension-kube-vip, XDG), the
# layout envtest's BinaryAssetsDirectory expects. A second run, from any clone, builds nothing.
#
#   hack/build-kube-binaries.sh            prints the asset directory on stdout
#   hack/build-kube-binaries.sh nodes      also kubelet, kube-controller-manager and
#                                          kube-scheduler (the real nodes of test/nodes)
#
# Versions come from the environment (KUBE_VERSION, ETCD_VERSION); the defaults match
# the k8s.io/api version in go.mod.
set -euo pipefail
KUBE_VERSION=${KUBE_VERSION:-v1.36.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.5}
CACHE=${KUBE_VIP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gardener-extension-kube-vip}
OUT=$CACHE/k8s/$KUBE_VERSION-etcd$ETCD_VERSION
WORK=$CACHE/.build
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
mkdir -p "$OUT" "$WORK"
# One build at a time: concurrent callers (make, tests, other clones) wait for the first one.
exec 9>"$CACHE/.build.lock"
flock 9
log() { echo "build-kube-binaries: $*" >&2; }

# build_kube CMD... builds k8s.io/kubernetes/cmd/CMD at KUBE_VERSION into $OUT/CMD, the
# missing ones in one module and one `go build`: the dependencies are resolved once instead
# of once per binary (each resolution left the cores idle), and one binary's link overlaps
# the others' compiles. A failed build keeps none of them.
build_kube() {
  local cmd missing=() pkgs=()
  for cmd in "$@"; do [ -x "$OUT/$cmd" ] || missing+=("$cmd"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  local d=$WORK/kube-$KUBE_VERSION t0=$SECONDS gomod
  rm -rf "$d"; mkdir -p "$d/out"; cd "$d"
  go mod init local/build-kube >/dev/null 2>&1
  # k8s.io/kubernetes replaces its staging modules with ./staging/...; a consumer has to
  # pin each of them to the matching published v0.X.Y instead.
  gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  local staging=v0.${KUBE_VERSION#v1.}
  grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" | awk '{print $1}' | sort -u | while read -r m; do
    go mod edit -replace "$m=$m@$staging"
  done
  for cmd in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$cmd"); done
  go get "${pkgs[@]/%/@$KUBE_VERSION}" >&2
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  CGO_ENABLED=0 go build -trimpath -o out/ \
    -ldflags "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean" \
    "${pkgs[@]}"
  for cmd in "${missing[@]}"; do mv "out/$cmd" "$OUT/$cmd"; done
  log "${missing[*]} $KUBE_VERSION built in $((SECONDS - t0))s"
}

build_etcd() {
  [ -x "$OUT/etcd" ] && return 0
  local d=$WORK/etcd-$ETCD_VERSION t0=$SECONDS
  rm -rf "$d"; mkdir -p "$d"; cd "$d"
  go mod init local/build-etcd >/dev/null 2>&1
  cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
  go mod tidy >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" .
  mv "$OUT/etcd.tmp" "$OUT/etcd"
  log "etcd $ETCD_VERSION built in $((SECONDS - t0))s"
}

cmds=(kube-apiserver)
if [ "${1:-}" = nodes ]; then cmds+=(kubelet kube-controller-manager kube-scheduler); fi
build_etcd
build_kube "${cmds[@]}"
# envtest also looks for kubectl in the asset directory; use the one on PATH if present.
if [ ! -e "$OUT/kubectl" ] && command -v kubectl >/dev/null; then ln -sf "$(command -v kubectl)" "$OUT/kubectl"; fi
echo "$OUT"
