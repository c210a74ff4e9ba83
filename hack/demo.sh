#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# The demo of the extension (`make demo` / `make demo-down`): a self-hosted shoot of three
# real nodes (test/nodes: a network namespace each, with containerd, a kubelet, etcd and
# kube-apiserver), the local Keystone + Neutron (hack/openstack.sh), the extension installed
# from the release artifacts of `make release-artifacts` (the chart archive and the images' OCI
# layouts imported into the nodes' containerd; the controller and the agents run as pods), the SelfHostedShootExposure
# of gardenadm init's step (Gardener v1.150.0's own code, port 443) and a live failover. The demo program (test/demo) runs in the background until `down`.
#
#   hack/demo.sh up                 build, start in the background, stream the progress until READY
#   hack/demo.sh down               stop the demo (it deletes the exposure through the controller,
#                                   stops the cluster and removes its namespaces, mounts and cgroups),
#                                   then Keystone + Neutron if up started them
#   hack/demo.sh status             what runs
#   hack/demo.sh neutron PATH [JQ]  GET a Neutron API path as the demo project, e.g. '/v2.0/ports'
#
# The demo walks the front door: `up` brings the Neutron dataplane up (hack/dataplane.sh: the
# linuxbridge and L3 agents, a router, an external client namespace) and plugs the nodes into
# their Neutron ports; DEMO_FRONT_DOOR=0 skips that (the VIP on a plain LAN, no router).
# DEMO_KEEP_ENV=1 makes `down` leave Keystone + Neutron (and the dataplane) running.
# Needs root. State, logs and env.sh (source it to try the front door): .local/demo/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCAL=$ROOT/.local
DEMO=$LOCAL/demo
BIN=$DEMO/bin
PIDFILE=$DEMO/demo.pid
LOG=$DEMO/demo.log
OS_ENV=${KUBE_VIP_OPENSTACK_ENV:-$LOCAL/openstack/env.sh}
# Present when `up` brought Keystone + Neutron up: `down` stops them only then.
OPENSTACK_MARKER=$DEMO/openstack-started
# Present when `up` brought the dataplane up: `down` stops it (and Keystone + Neutron) only then.
DATAPLANE_MARKER=$DEMO/dataplane-started
FRONT_DOOR=${DEMO_FRONT_DOOR:-1}
PREFIX=kvd-
READY_TIMEOUT=${DEMO_READY_TIMEOUT:-900}
STOP_TIMEOUT=240
export GONOSUMDB=${GONOSUMDB:-github.com/gardener,github.com/kube-vip,github.com/mdlayher}

log() { echo "demo: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

demo_pid() { # prints the PID if the recorded process is alive and is our demo program
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$BIN/demo --state-dir $DEMO" || return 1
  echo "$pid"
}

# follow_until PID PATTERN TIMEOUT-S: print the log as it grows until a line matches
# PATTERN (returns 0), the process exits (1) or the time is up (2).
FOLLOW_TAIL="" # the tail of follow_until, for the interrupt trap
follow_until() {
  local pid=$1 pattern=$2 timeout=$3 rc=2
  tail -n +1 -f "$LOG" &
  FOLLOW_TAIL=$!
  for _ in $(seq 1 $((timeout * 4))); do
    if grep -qE "$pattern" "$LOG" 2>/dev/null; then rc=0; break; fi
    if ! kill -0 "$pid" 2>/dev/null; then rc=1; break; fi
    sleep 0.25
  done
  sleep 0.3 # let tail print the last lines
  stop_follow
  return $rc
}

stop_follow() {
  [ -n "$FOLLOW_TAIL" ] || return 0
  kill "$FOLLOW_TAIL" 2>/dev/null || true
  wait "$FOLLOW_TAIL" 2>/dev/null || true
  FOLLOW_TAIL=""
}

# wait_exit PID TIMEOUT-S: stream the log until the process is gone; SIGKILL after the timeout.
wait_exit() {
  local pid=$1 timeout=$2 tailpid
  tail -n 0 -f "$LOG" &
  tailpid=$!
  for _ in $(seq 1 $((timeout * 4))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid did not stop within ${timeout}s, killing it"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  sleep 0.3
  kill "$tailpid" 2>/dev/null || true
  wait "$tailpid" 2>/dev/null || true
}

# remove_namespaces PATTERN: delete the demo's namespaces whose names match (and what runs in them).
remove_namespaces() {
  local ns p
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "$1" || true); do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    ip netns delete "$ns" 2>/dev/null || true
    log "removed leftover namespace $ns"
  done
}

# what a demo whose process is gone (a crash or SIGKILL) left: its namespaces (and what
# runs in them), the containers' shims and the mounts below the state directory
sweep_stale() {
  local ns pid m
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX" || true); do
    pid=${ns#"$PREFIX"}
    pid=${pid%%-*}
    if ! kill -0 "$pid" 2>/dev/null; then remove_namespaces "^$ns\$"; fi
  done
  demo_pid >/dev/null && return 0
  for pid in $(pgrep -f -- "$DEMO/" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  for m in $(awk -v d="$DEMO/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r); do
    umount -l "$m" 2>/dev/null && log "unmounted leftover $m"
  done
}

up() {
  local t0=$SECONDS pid assets rc
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
  if pid=$(demo_pid); then
    log "the demo runs already (pid $pid); see: hack/demo.sh status, $LOG; stop it with: make demo-down"
    return 0
  fi
  rm -f "$PIDFILE"
  sweep_stale
  mkdir -p "$BIN"
  "$ROOT/hack/install-deps.sh"
  "$ROOT/hack/build-kube-binaries.sh" nodes >/dev/null
  mkdir -p "$DEMO"
  if ! "$ROOT/hack/openstack.sh" status >/dev/null 2>&1; then touch "$OPENSTACK_MARKER"; fi
  "$ROOT/hack/openstack.sh" up
  local flags=()
  if [ "$FRONT_DOOR" = 1 ]; then
    if ! "$ROOT/hack/dataplane.sh" status >/dev/null 2>&1; then touch "$DATAPLANE_MARKER"; fi
    "$ROOT/hack/dataplane.sh" up
    flags+=(--front-door)
  fi
  log "the release artifacts the demo installs from (make release-artifacts: OCI layouts and the chart in bin/release)"
  make -C "$ROOT" --no-print-directory release-artifacts >"$DEMO/release-artifacts.log" 2>&1 ||
    { tail -n 20 "$DEMO/release-artifacts.log" >&2; die "make release-artifacts failed (log: $DEMO/release-artifacts.log)"; }
  log "building the demo program"
  (cd "$ROOT" && go build -o "$BIN/demo" ./test/demo)

  : >"$LOG" # a fresh log: follow_until must not find the READY of an earlier run
  setsid "$BIN/demo" --state-dir "$DEMO" --openstack-env "$OS_ENV" --prefix "$PREFIX" --release "$ROOT/bin/release" "${flags[@]}" >"$LOG" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PIDFILE"
  log "demo program started (pid $pid, log $LOG)"
  # Ctrl-C while it comes up stops it cleanly.
  trap 'stop_follow; log "interrupted; stopping the demo"; kill -TERM "$pid" 2>/dev/null || true; wait_exit "$pid" "$STOP_TIMEOUT"; rm -f "$PIDFILE"; exit 130' INT TERM

  rc=0
  follow_until "$pid" '^READY' "$READY_TIMEOUT" || rc=$?
  trap - INT TERM
  case $rc in
  0)
    log "up in $((SECONDS - t0))s; the demo keeps running in the background. Stop everything with: make demo-down"
    ;;
  *)
    if [ "$rc" = 2 ]; then
      log "no READY within ${READY_TIMEOUT}s; stopping the demo"
      kill -TERM "$pid" 2>/dev/null || true
    else
      log "the demo program exited before it was ready; waiting for its teardown"
    fi
    wait_exit "$pid" "$STOP_TIMEOUT" >/dev/null
    rm -f "$PIDFILE"
    echo "----- last lines of $LOG" >&2
    tail -n 25 "$LOG" >&2
    echo "----- controller log: $DEMO/controller.log; Keystone + Neutron still run (make demo-down stops them)" >&2
    exit 1
    ;;
  esac
}

down() {
  local pid left
  if pid=$(demo_pid); then
    log "stopping the demo (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    wait_exit "$pid" "$STOP_TIMEOUT"
    remove_namespaces "^$PREFIX$pid-"
  else
    log "the demo does not run"
  fi
  rm -f "$PIDFILE"
  sweep_stale
  # Only what `up` started: Keystone + Neutron if they did not run before (never the
  # kube-apiserver of hack/local-env.sh, which the demo does not use).
  if [ "${DEMO_KEEP_ENV:-}" = 1 ]; then
    log "DEMO_KEEP_ENV=1: leaving Keystone + Neutron running"
  elif [ -e "$DATAPLANE_MARKER" ]; then
    # the dataplane's down stops Keystone + Neutron too
    "$ROOT/hack/dataplane.sh" down
    rm -f "$DATAPLANE_MARKER" "$OPENSTACK_MARKER"
  elif [ -e "$OPENSTACK_MARKER" ]; then
    "$ROOT/hack/openstack.sh" down
    rm -f "$OPENSTACK_MARKER"
  else
    log "leaving Keystone + Neutron running: the demo did not start them (stop them with hack/openstack.sh down)"
  fi

  left=""
  if ip netns list 2>/dev/null | grep -q "^$PREFIX"; then left+=" namespaces:$(ip netns list | awk '{print $1}' | grep "^$PREFIX" | tr '\n' ' ')"; fi
  if pgrep -f -- "$DEMO/" >/dev/null 2>&1; then left+=" processes:$(pgrep -f -- "$DEMO/" | tr '\n' ' ')"; fi
  if awk -v d="$DEMO/" 'index($2, d) == 1 {f=1} END {exit !f}' /proc/self/mounts; then left+=" mounts below $DEMO"; fi
  [ -z "$left" ] || die "left behind:$left"
  log "down: no demo namespace, process or mount is left (logs stay in $DEMO)"
}

status() {
  local pid rc=0
  if pid=$(demo_pid); then
    echo "demo: running, pid $pid, log $LOG"
    ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX$pid-" | sed 's/^/  namespace /' || true
  else
    echo "demo: not running"
    rc=1
  fi
  "$ROOT/hack/openstack.sh" status || rc=1
  return $rc
}

neutron() {
  local path=${1:?usage: hack/demo.sh neutron PATH [JQ-FILTER]} filter=${2:-.} token
  [ -f "$OS_ENV" ] || die "no $OS_ENV; run make demo first"
  # shellcheck disable=SC1090
  . "$OS_ENV"
  token=$(curl -fsS -i -m 30 -H 'Content-Type: application/json' "$OS_AUTH_URL/auth/tokens" -d "$(jq -nc \
    --arg id "$OS_APPLICATION_CREDENTIAL_ID" --arg secret "$OS_APPLICATION_CREDENTIAL_SECRET" \
    '{auth: {identity: {methods: ["application_credential"], application_credential: {id: $id, secret: $secret}}}}')" |
    awk -F': ' 'tolower($1)=="x-subject-token"{print $2}' | tr -d '\r')
  [ -n "$token" ] || die "no token from Keystone"
  curl -fsS -m 30 -H "X-Auth-Token: $token" "$NEUTRON_URL$path" | jq "$filter"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
neutron)
  shift
  neutron "$@"
  ;;
*)
  echo "usage: $0 up|down|status|neutron PATH [JQ-FILTER]" >&2
  exit 2
  ;;
esac
