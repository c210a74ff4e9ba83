#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# The local development environment: Keystone + Neutron (hack/openstack.sh) and a
# kube-apiserver + etcd on loopback with the Gardener objects of a self-hosted OpenStack
# shoot (test/framework/localenv), all in the background.
#
#   hack/local-env.sh up       start (or reuse) everything; writes .local/kubeconfig and .local/env.sh
#   hack/local-env.sh down     stop exactly what `up` started, by PID (Keystone + Neutron only
#                              if `up` started them)
#   hack/local-env.sh status   print what runs; exit 0 only if everything runs
#
# `source .local/env.sh` then gives KUBECONFIG and the OpenStack variables.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCAL=$ROOT/.local
PIDFILE=$LOCAL/localenv.pid
LOGFILE=$LOCAL/localenv.log
BINARY=$ROOT/bin/localenv
KUBECONFIG_FILE=$LOCAL/kubeconfig
OPENSTACK_MARKER=$LOCAL/localenv.openstack-started
export GONOSUMDB=${GONOSUMDB:-github.com/gardener,github.com/kube-vip,github.com/mdlayher}

log() { echo "local-env: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=hack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

localenv_pid() { # prints the PID if the recorded process is alive and is our localenv
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$BINARY --kubeconfig $KUBECONFIG_FILE" || return 1
  echo "$pid"
}

up() {
  local t0=$SECONDS pid assets
  assets=$("$ROOT/hack/build-kube-binaries.sh")
  mkdir -p "$LOCAL"
  # Remember whether this brought Keystone + Neutron up, so that `down` stops only what `up` started.
  if ! "$ROOT/hack/openstack.sh" status >/dev/null 2>&1; then touch "$OPENSTACK_MARKER"; fi
  "$ROOT/hack/openstack.sh" up
  if pid=$(localenv_pid) && [ -s "$KUBECONFIG_FILE" ]; then
    log "kube-apiserver already runs (localenv pid $pid)"
  else
    stop_localenv
    (cd "$ROOT" && go build -o "$BINARY" ./test/framework/localenv)
    mkdir -p "$LOCAL"
    rm -f "$KUBECONFIG_FILE"
    KUBEBUILDER_ASSETS=$assets setsid "$BINARY" --kubeconfig "$KUBECONFIG_FILE" \
      --openstack-env "$LOCAL/openstack/env.sh" >"$LOGFILE" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 240); do
      [ -s "$KUBECONFIG_FILE" ] && break
      kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -20 "$LOGFILE" >&2; die "localenv exited"; }
      sleep 0.5
    done
    [ -s "$KUBECONFIG_FILE" ] || { tail -20 "$LOGFILE" >&2; die "no kubeconfig after 120s"; }
  fi
  cat >"$LOCAL/env.sh" <<EOF
# Written by hack/local-env.sh up.
export KUBECONFIG=$KUBECONFIG_FILE
. $LOCAL/openstack/env.sh
EOF
  log "up in $((SECONDS - t0))s; use it with: source .local/env.sh"
}

stop_localenv() {
  local pid
  if ! pid=$(localenv_pid); then
    rm -f "$PIDFILE"
    return 0
  fi
  # envtest's etcd and kube-apiserver are children of localenv; stop_tree notes them in case
  # it dies hard.
  stop_tree localenv "$pid" 30 'kube-apiserver|etcd'
  rm -f "$PIDFILE" "$KUBECONFIG_FILE"
}

down() {
  stop_localenv
  rm -f "$LOCAL/env.sh"
  if [ -e "$OPENSTACK_MARKER" ]; then
    "$ROOT/hack/openstack.sh" down
    rm -f "$OPENSTACK_MARKER"
  else
    log "leaving Keystone + Neutron running: they ran before \`up\` (stop them with hack/openstack.sh down)"
  fi
}

status() {
  local rc=0 pid
  if pid=$(localenv_pid); then
    echo "localenv (etcd + kube-apiserver): running, pid $pid; KUBECONFIG=$KUBECONFIG_FILE"
  else
    echo "localenv (etcd + kube-apiserver): not running"
    rc=1
  fi
  "$ROOT/hack/openstack.sh" status || rc=1
  return $rc
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*)
  echo "usage: $0 up|down|status" >&2
  exit 2
  ;;
esac
