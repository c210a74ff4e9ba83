#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Runs a command with the local Keystone + Neutron up: reuses them if they already run
# (and leaves them running), else starts them and stops them afterwards, also when the
# command fails. Exits with the command's status.
#
#   hack/with-openstack.sh go test ./test/...
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }

if "$ROOT/hack/openstack.sh" status >/dev/null 2>&1; then
  echo "with-openstack: reusing the running Keystone + Neutron" >&2
else
  trap '"$ROOT/hack/openstack.sh" down' EXIT
  "$ROOT/hack/openstack.sh" up
fi
rc=0
"$@" || rc=$?
exit $rc
