#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# The integration tier (make test-integration), in two phases:
#
#   1. the fault matrices (test/integration/faults: the real controller against Neutron
#      through a fault-injecting proxy, no network namespace, no failover timing) on a
#      Keystone + Neutron of their own, concurrently with the packages that measure no
#      failover, on the shared Keystone + Neutron. The two share no sqlite database, no port
#      and no namespace, and the faults' Neutron calls no longer queue behind the others'.
#   2. the failover packages (agent, VIP, election, kube-vip, the real nodes, the harnesses),
#      one at a time with the machine to themselves: they measure sub-second timings.
#
#   hack/with-openstack.sh hack/test-integration.sh RESULTS_DIR GO_TEST_FLAGS...
#
# The shared Keystone + Neutron is the caller's (hack/with-openstack.sh); the faults' own is
# started and stopped here. Needs KUBEBUILDER_ASSETS, GOTESTSUM (the command) and
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
faults=$mod/test/integration/faults
# What measures failover timings, or drives the agent in network namespaces.
timed_re="$mod/test/(integration/(agent|vip|election|kubevip|harness)|netns|e2e|nodes|bench/runner)"
mapfile -t timed < <(grep -E -x "$timed_re" <<<"$all")
mapfile -t calm < <(grep -v -x -F -e "$faults" <<<"$all" | grep -v -E -x "$timed_re")

# run NAME PACKAGES...: one package at a time, into RESULTS_DIR/integration-NAME.json.
flags=("$@")
run() {
  local name=$1; shift
  "${gotestsum[@]}" --jsonfile "$results/integration-$name.json" -- -p 1 "${flags[@]}" "$@"
}

rc=0
(
  export KUBE_VIP_OPENSTACK_DIR=$ROOT/.local/openstack-faults KUBE_VIP_OPENSTACK_ENV=$ROOT/.local/openstack-faults/env.sh \
    KEYSTONE_PORT=5020 NEUTRON_PORT=9720
  rm -rf "$KUBE_VIP_OPENSTACK_DIR"
  hack/with-openstack.sh "${gotestsum[@]}" --jsonfile "$results/integration-faults.json" -- -p 1 "${flags[@]}" "$faults"
) &
faults_pid=$!
run calm "${calm[@]}" || rc=1
wait "$faults_pid" || rc=1
run timed "${timed[@]}" || rc=1
cat "$results"/integration-{faults,calm,timed}.json >"$results/integration.json" 2>/dev/null || rc=1
rm -f "$results"/integration-{faults,calm,timed}.json
exit $rc
