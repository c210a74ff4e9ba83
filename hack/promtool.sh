#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Prints the path of promtool, Prometheus' own tool, taken from Debian's prometheus package
# and cached by the package's version in $KUBE_VIP_CACHE/tools. The package is downloaded, not
# installed (it would bring a Prometheus service): only usr/bin/promtool is unpacked. Building
# promtool from the module proxy instead took 7 to 17 minutes on a cold 2-core machine.
set -euo pipefail
: "${KUBE_VIP_CACHE:?}"

# awk reads to the end: exiting at the first match would let apt-cache die of SIGPIPE, which
# pipefail turns into this script's failure (seen once in make check).
candidate() { apt-cache show --no-all-versions prometheus 2>/dev/null | awk '/^Version:/ && v == "" { v = $2 } END { print v }'; }
version=$(candidate)
if [ -z "$version" ]; then
  # apt's lists are empty on a new container; the runners of GitHub's workflows are not root.
  if [ "$(id -u)" = 0 ]; then apt-get update -qq >&2; else sudo -n apt-get update -qq >&2; fi
  version=$(candidate)
fi
if [ -z "$version" ]; then
  echo "promtool: apt knows no prometheus package; is Debian's main archive in sources.list?" >&2
  exit 1
fi
bin=$KUBE_VIP_CACHE/tools/promtool-debian-${version//[^A-Za-z0-9.+-]/_}
if [ ! -x "$bin" ]; then
  mkdir -p "$KUBE_VIP_CACHE/tools"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # apt-get download runs as _apt where it can; the directory is opened to it to spare the warning.
  chmod 0777 "$tmp"
  if ! (cd "$tmp" && apt-get download -qq "prometheus=$version") >"$tmp/log" 2>&1; then
    cat "$tmp/log" >&2
    echo "promtool: downloading Debian's prometheus $version failed" >&2
    exit 1
  fi
  dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool
  mv "$tmp/usr/bin/promtool" "$bin"
fi
echo "$bin"
