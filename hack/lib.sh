# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# shellcheck shell=bash
# Shell helpers shared by the hack/ scripts; source it, do not run it.
# The caller defines log().

# stop_tree NAME PID GRACE-S CHILD-PATTERN: SIGTERM the process, SIGKILL it if it is still
# there after GRACE-S seconds, then SIGKILL those of its children (noted before the
# signal) that linger and whose command line matches CHILD-PATTERN (an extended regexp),
# so that a PID reused by an unrelated process is never signalled.
stop_tree() {
  local name=$1 pid=$2 grace=$3 pattern=$4 kids k
  kids=$(ps -o pid= --ppid "$pid" | tr -s ' \n' ' ' || true) # none: ps exits 1
  log "stopping $name pid $pid (children: ${kids:-none})"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((grace * 4))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then log "$name pid $pid ignored SIGTERM, killing"; kill -KILL "$pid" 2>/dev/null || true; fi
  for k in $kids; do
    for _ in $(seq 1 20); do kill -0 "$k" 2>/dev/null || break; sleep 0.25; done
    if [ -r "/proc/$k/cmdline" ] && tr '\0' ' ' <"/proc/$k/cmdline" | grep -qE "$pattern"; then
      log "$name child $k still alive, killing"
      kill -KILL "$k" 2>/dev/null || true
    fi
  done
}
