#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# `make bench`: the failover tables (go run ./test/bench ARGS...), then ours behind the
# Neutron router with the router's extra cost (go run ./test/bench -dataplane). It brings the
# dataplane of hack/dataplane.sh up for the second part and down again, also when that part
# fails or is interrupted, holding the machine's dataplane lock throughout (the kvdp-* names
# exist once per machine). Run it from the repository root, as root, with Keystone + Neutron
# up (the Makefile wraps it in hack/with-openstack.sh).
#
#   test/bench/make-bench.sh [FLAGS...]   FLAGS go to the tables run; -runs, -scenarios,
#                                         -steady-window, -out, -logs and -v also to the router run
#   BENCH_DATAPLANE=0                     the tables only
#   DATAPLANE_LOCK                        the lock file (default /run/lock/kube-vip-dataplane.lock)
#
# The router part is skipped when FLAGS ask for something other than the tables (-soak,
# -steady-soak, -dataplane, -from, -h).
set -euo pipefail
GO=${GO:-go}
LOCK=${DATAPLANE_LOCK:-/run/lock/kube-vip-dataplane.lock}

"$GO" run ./test/bench "$@"

router=()
while [ $# -gt 0 ]; do
	case $1 in
	-soak | -soak=* | --soak | --soak=* | -steady-soak | -steady-soak=* | --steady-soak | --steady-soak=* | -dataplane* | --dataplane* | -from | -from=* | --from | --from=* | -h | -help | --help)
		exit 0 ;;
	-runs | --runs | -scenarios | --scenarios | -steady-window | --steady-window | -out | --out | -logs | --logs)
		router+=("$1" "${2:-}")
		shift ;;
	-runs=* | --runs=* | -scenarios=* | --scenarios=* | -steady-window=* | --steady-window=* | -out=* | --out=* | -logs=* | --logs=* | -v | --v | -v=* | --v=*)
		router+=("$1") ;;
	esac
	shift
done
[ "${BENCH_DATAPLANE:-1}" != 0 ] || exit 0

mkdir -p "$(dirname "$LOCK")"
exec 9>"$LOCK"
echo "bench: waiting for the dataplane lock $LOCK" >&2
flock 9
up=0
down() {
	[ "$up" = 1 ] || return 0
	up=0
	# 9>&-: daemons must not inherit the lock.
	hack/dataplane.sh down 9>&- || echo "bench: hack/dataplane.sh down failed; run it by hand" >&2
}
trap down EXIT
trap 'exit 130' INT TERM
up=1
hack/dataplane.sh up 9>&-
echo >&2
echo "bench: ours behind the Neutron router (go run ./test/bench -dataplane ${router[*]})" >&2
"$GO" run ./test/bench -dataplane "${router[@]}" 9>&-
