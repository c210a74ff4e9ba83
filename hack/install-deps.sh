#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Installs the Debian packages the project needs for building and testing, if missing.
#
#   hack/install-deps.sh            everything (OpenStack servers and CLI, networking tools, make)
#   hack/install-deps.sh PKG...     only these
#
# Only library and tool packages, none that runs a service; a policy-rc.d guard makes sure
# no maintainer script starts a daemon anyway. Needs root when something is missing.
# Go and its modules are not installed here: go.mod and go.sum pin the modules.
set -euo pipefail

ALL="python3-neutron python3-keystone python3-openstackclient uwsgi-core uwsgi-plugin-python3 curl jq sqlite3
iproute2 iputils-ping arping keepalived util-linux procps make git ca-certificates
containerd runc containernetworking-plugins gcc libc6-dev
rabbitmq-server iptables ipset conntrack radvd"
pkgs=${*:-$ALL}

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -n "$missing" ] || exit 0
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing Debian packages:$missing; run as root or apt-get install them" >&2
  exit 1
fi

t0=$SECONDS
echo "install-deps: installing$missing" >&2
guard=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  guard=1
fi
trap '[ -z "$guard" ] || rm -f /usr/sbin/policy-rc.d' EXIT
log=$(mktemp)
# shellcheck disable=SC2086 # word splitting of the package list is intended
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing; } >"$log" 2>&1; then
  tail -30 "$log" >&2
  rm -f "$log"
  echo "install-deps: apt-get failed" >&2
  exit 1
fi
rm -f "$log"
echo "install-deps: done in $((SECONDS - t0))s" >&2
