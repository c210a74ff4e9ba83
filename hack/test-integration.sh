#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# The integration tier (make test-integration), in two phases:
#
#   1. the packages that measure no failover, in two streams of about equal length: the
#      fault matrices (test/integration/faults: the real controller against Neutron through
#      a fault-injecting proxy) and then foundation, nodes and packaging on a Keystone +
#      Neutron of their own; the exposure package and the rest on the shared Keystone + Neutron. The
#      streams share no sqlite database, no port and no namespace, and neither stream's
#      Neutron calls queue behind the other's (Neutron, one Python process, is the busiest
#      part of this phase).
#   2. the failover packages (agent, VIP, election, kube-vip, the real nodes, the harnesses),
#      one at a time with the machine to themselves: they measure sub-second timings.
#
#   hack/with-openstack.sh hack/test-integration.sh RESULTS_DIR GO_TEST_FLAGS...
#
# The shared Keystone + Neutron is the caller's (hack/with-openstack.sh); the second
# stream's own is started and stopped here. Needs KUBEBUILDER_ASSETS, GOTESTSUM (the command) and
# INTEGRATION_PKGS (the tier's packages), as the Makefile sets them. Writes RESULTS_DIR/integration.json (both phases); exits non-zero if any
# test failed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
results=$1; shift
: "${GOTESTSUM:?}" "${KUBEBUILDER_ASSETS:?}" "${INTEGRATION_PKGS:?}"
read -r -a gotestsum <<<"$GOTESTSUM"

mod=$(go list -m)
all=$(tr -s ' ' '\n' <<<"$INTEGRATION_PKGS")
# What measures failover timings, or drives the agent in network namespaces.
timed_re="$mod/test/(integration/(agent|vip|election|kubevip|harness)|netns|e2e|nodes|bench/runner)"
# The second stream of phase 1, on the Keystone + Neutron of its own.
second_re="$mod/test/integration/(faults|foundation|nodes|packaging)"
mapfile -t timed < <(grep -E -x "$timed_re" <<<"$all")
mapfile -t second < <(grep -E -x "$second_re" <<<"$all")
mapfile -t calm < <(grep -v -E -x -e "$timed_re" -e "$second_re" <<<"$all")

# run NAME PACKAGES...: one package at a time, into RESULTS_DIR/integration-NAME.json, under
# the command in wrap (none, or hack/with-openstack.sh); no packages, no run (go test would
# test the current directory).
flags=("$@")
wrap=()
run() {
  local name=$1; shift
  : >"$results/integration-$name.json"
  [ $# -gt 0 ] || return 0
  "${wrap[@]}" "${gotestsum[@]}" --jsonfile "$results/integration-$name.json" -- -p 1 "${flags[@]}" "$@"
}

rc=0
(
  export KUBE_VIP_OPENSTACK_DIR=$ROOT/.local/openstack-second KUBE_VIP_OPENSTACK_ENV=$ROOT/.local/openstack-second/env.sh \
    KEYSTONE_PORT=5020 NEUTRON_PORT=9720
  rm -rf "$KUBE_VIP_OPENSTACK_DIR"
  wrap=(hack/with-openstack.sh)
  run second "${second[@]}"
) &
second_pid=$!
run calm "${calm[@]}" || rc=1
wait "$second_pid" || rc=1
# The failover phase has the machine to itself: make test's prebuild, if still compiling,
# waits stopped until make test resumes it for the compile-only steps.
if [ -n "${PREBUILD_PGID:-}" ] && kill -STOP -- "-$PREBUILD_PGID" 2>/dev/null; then
  echo "test-integration: prebuild paused for the failover phase"
fi
run timed "${timed[@]}" || rc=1
cat "$results"/integration-{second,calm,timed}.json >"$results/integration.json" 2>/dev/null || rc=1
rm -f "$results"/integration-{second,calm,timed}.json
exit $rc
