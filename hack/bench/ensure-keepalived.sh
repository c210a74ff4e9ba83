#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Makes sure keepalived (Debian package) is installed for the failover benchmark, through
# hack/install-deps.sh (policy-rc.d guard: the package's own daemon is never started). The
# benchmark runs its own keepalived instances inside network namespaces, each with its own
# configuration and pid files.
set -euo pipefail
command -v keepalived >/dev/null && exit 0
"$(dirname "$0")/../install-deps.sh" keepalived
command -v keepalived >/dev/null
