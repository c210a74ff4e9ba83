#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# ML2/OVN, devstack's default Neutron backend, as the local dataplane (opt-in, instead of
# hack/dataplane.sh's linuxbridge): Open vSwitch with its userspace datapath (this kernel has
# no openvswitch module), the OVN databases, ovn-northd and ovn-controller from Debian, and
# Keystone + Neutron (hack/openstack.sh) with the OVN mechanism driver and L3 plugin, one
# process on sqlite. Tenant networks are geneve (one chassis: no tunnel is ever used); the
# external network "public" is bridged to kvovn-ex, where namespace kvovn-client sits as
# 198.19.0.1/24 with no route to the node subnet.
#
#   hack/ovn.sh up       OVS + OVN, then a fresh Keystone + Neutron with ML2/OVN
#   hack/ovn.sh down     Keystone + Neutron, OVN, OVS, the bridges, the client namespace
#   hack/ovn.sh status
#
# It needs a Keystone + Neutron state of its own: export KUBE_VIP_OPENSTACK_DIR (and ports)
# to a directory that no agent-less `hack/openstack.sh up` has used. The result is
# $DIR/ovn/env.sh. OVN's databases listen on 127.0.0.1:${OVN_NB_PORT:-26641} and :${OVN_SB_PORT:-26642}.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${KUBE_VIP_OPENSTACK_DIR:-$ROOT/.local/openstack}
ETC=$DIR/etc BIN=$DIR/bin
S=$DIR/ovn
NB_PORT=${OVN_NB_PORT:-26641} SB_PORT=${OVN_SB_PORT:-26642}
CHASSIS=kvovn-host INT=kvovn-int EXT=kvovn-ex
CLIENT_NS=kvovn-client CLIENT_IP=198.19.0.1
PKGS="openvswitch-switch ovn-central ovn-host ethtool arping iproute2 jq curl"

log() { echo "ovn: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
vsctl() { ovs-vsctl --db="unix:$S/run/db.sock" "$@"; }
alive() { [ -f "$S/run/$1.pid" ] && kill -0 "$(cat "$S/run/$1.pid")" 2>/dev/null; }

install_packages() {
  local missing=()
  for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} = 0 ] && return 0
  log "installing ${missing[*]}"
  # Debian starts the packages' own services on install: keep them down, this script runs
  # private instances.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  local rc=0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null || rc=$?
  rm -f /usr/sbin/policy-rc.d
  [ $rc = 0 ] || die "apt-get install failed"
}

start_switch() {
  mkdir -p "$S/run" "$S/log" "$S/db"
  export OVS_RUNDIR=$S/run OVS_LOGDIR=$S/log OVN_RUNDIR=$S/run OVN_LOGDIR=$S/log
  [ -f "$S/db/conf.db" ] || ovsdb-tool create "$S/db/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  [ -f "$S/db/nb.db" ] || ovsdb-tool create "$S/db/nb.db" /usr/share/ovn/ovn-nb.ovsschema
  [ -f "$S/db/sb.db" ] || ovsdb-tool create "$S/db/sb.db" /usr/share/ovn/ovn-sb.ovsschema
  alive ovsdb-server || ovsdb-server "$S/db/conf.db" --remote="punix:$S/run/db.sock" \
    --pidfile="$S/run/ovsdb-server.pid" --unixctl="$S/run/ovsdb-server.ctl" --detach --log-file="$S/log/ovsdb-server.log"
  vsctl --no-wait init
  alive ovs-vswitchd || ovs-vswitchd "unix:$S/run/db.sock" --pidfile="$S/run/ovs-vswitchd.pid" \
    --unixctl="$S/run/ovs-vswitchd.ctl" --detach --log-file="$S/log/ovs-vswitchd.log"
  alive nb || ovsdb-server "$S/db/nb.db" --remote="punix:$S/run/nb.sock" --remote="ptcp:$NB_PORT:127.0.0.1" \
    --pidfile="$S/run/nb.pid" --unixctl="$S/run/nb.ctl" --detach --log-file="$S/log/nb.log"
  alive sb || ovsdb-server "$S/db/sb.db" --remote="punix:$S/run/sb.sock" --remote="ptcp:$SB_PORT:127.0.0.1" \
    --pidfile="$S/run/sb.pid" --unixctl="$S/run/sb.ctl" --detach --log-file="$S/log/sb.log"
  alive northd || ovn-northd --ovnnb-db="unix:$S/run/nb.sock" --ovnsb-db="unix:$S/run/sb.sock" \
    --pidfile="$S/run/northd.pid" --unixctl="$S/run/northd.ctl" --detach --log-file="$S/log/northd.log"
  # The userspace datapath (netdev): the kernel has no openvswitch module.
  vsctl set open . external_ids:system-id=$CHASSIS external_ids:hostname=$CHASSIS \
    external_ids:ovn-remote="unix:$S/run/sb.sock" external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip=127.0.0.1 \
    external_ids:ovn-bridge=$INT external_ids:ovn-bridge-datapath-type=netdev \
    external_ids:ovn-bridge-mappings=external:$EXT external_ids:ovn-cms-options=enable-chassis-as-gw
  vsctl --may-exist add-br $INT -- set bridge $INT datapath_type=netdev fail-mode=secure
  vsctl --may-exist add-br $EXT -- set bridge $EXT datapath_type=netdev
  alive ovn-controller || ovn-controller "unix:$S/run/db.sock" --pidfile="$S/run/ovn-controller.pid" \
    --detach --log-file="$S/log/ovn-controller.log"
}

neutron_config() {
  mkdir -p "$ETC" "$BIN"
  cat >"$ETC/dataplane.conf" <<CONF
# Written by hack/ovn.sh: ML2/OVN instead of the agent-less openvswitch driver.
[DEFAULT]
service_plugins = ovn-router
[ml2]
type_drivers = flat,geneve
tenant_network_types = geneve
mechanism_drivers = ovn
extension_drivers = port_security,tag_ports_during_bulk_creation
overlay_ip_version = 4
[ml2_type_geneve]
vni_ranges = 1:1000
max_header_size = 38
[ovn]
ovn_nb_connection = tcp:127.0.0.1:$NB_PORT
ovn_sb_connection = tcp:127.0.0.1:$SB_PORT
ovn_l3_scheduler = leastloaded
enable_distributed_floating_ip = false
ovn_metadata_enabled = false
CONF
  cat "$ROOT/hack/dataplane/server_patch.py" "$ROOT/hack/ovn/server_patch.py" >"$BIN/dataplane_server_patch.py"
}

# The client namespace on the external bridge. The userspace datapath's conntrack checks
# TCP checksums, which a veth leaves to offload: every NIC that sends through it has
# transmit checksumming off.
client_namespace() {
  ip netns add $CLIENT_NS 2>/dev/null || true
  ip link show kvovn-cl >/dev/null 2>&1 || ip link add kvovn-cl type veth peer name eth0 netns $CLIENT_NS
  ip -n $CLIENT_NS addr replace $CLIENT_IP/24 dev eth0
  ip -n $CLIENT_NS link set eth0 up
  ip -n $CLIENT_NS link set lo up
  ip netns exec $CLIENT_NS ethtool -K eth0 tx off >/dev/null
  ip link set kvovn-cl up
  vsctl --may-exist add-port $EXT kvovn-cl
}

security_rules() {
  # shellcheck disable=SC1091
  . "$DIR/env.sh"
  local tok
  tok=$(curl -fsS -i -m 30 -H 'Content-Type: application/json' "$OS_AUTH_URL/auth/tokens" -d '{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"'"$OS_USERNAME"'","domain":{"name":"Default"},"password":"'"$OS_PASSWORD"'"}}},"scope":{"project":{"name":"'"$OS_PROJECT_NAME"'","domain":{"name":"Default"}}}}}' |
    awk -F': ' 'tolower($1)=="x-subject-token"{print $2}' | tr -d '\r')
  [ -n "$tok" ] || die "no token"
  # The node security group admits ICMP and the API port from anywhere, as a shoot's would.
  for rule in '"protocol":"icmp"' '"protocol":"tcp","port_range_min":6443,"port_range_max":6443'; do
    curl -fsS -m 30 -X POST -H "X-Auth-Token: $tok" -H 'Content-Type: application/json' "$NEUTRON_URL/v2.0/security-group-rules" \
      -d '{"security_group_rule":{"security_group_id":"'"$SECURITY_GROUP_ID"'","direction":"ingress","ethertype":"IPv4","remote_ip_prefix":"0.0.0.0/0",'"$rule"'}}' >/dev/null 2>&1 || true
  done
}

up() {
  local t0=$SECONDS
  [ "$(id -u)" = 0 ] || die "needs root"
  install_packages
  if "$ROOT/hack/openstack.sh" status >/dev/null 2>&1 && [ ! -f "$S/env.sh" ]; then
    die "Keystone + Neutron of $DIR run without OVN; stop them (hack/openstack.sh down) or use another KUBE_VIP_OPENSTACK_DIR"
  fi
  start_switch
  neutron_config
  "$ROOT/hack/openstack.sh" up
  client_namespace
  security_rules
  cat >"$S/env.sh" <<ENV
# Written by hack/ovn.sh up: ML2/OVN on top of $DIR/env.sh.
export OVN_DIR=$S
export OVN_CHASSIS=$CHASSIS
export OVN_INTEGRATION_BRIDGE=$INT
export OVN_CLIENT_NS=$CLIENT_NS
export OVN_CLIENT_IP=$CLIENT_IP
export OVN_NB=unix:$S/run/nb.sock
export OVN_SB=unix:$S/run/sb.sock
export OVS_DB=unix:$S/run/db.sock
ENV
  log "up in $((SECONDS - t0))s; env in $S/env.sh"
}

down() {
  local p
  "$ROOT/hack/openstack.sh" down || true
  for p in ovn-controller northd sb nb ovs-vswitchd ovsdb-server; do
    if alive $p; then kill "$(cat "$S/run/$p.pid")" 2>/dev/null || true; fi
  done
  for _ in $(seq 1 50); do
    alive ovs-vswitchd || alive ovsdb-server || alive ovn-controller || break
    sleep 0.1
  done
  for p in ovn-controller northd sb nb ovs-vswitchd ovsdb-server; do
    if alive $p; then kill -KILL "$(cat "$S/run/$p.pid")" 2>/dev/null || true; fi
  done
  ip netns delete $CLIENT_NS 2>/dev/null || true
  for l in kvovn-cl $INT $EXT ovs-netdev; do ip link delete "$l" 2>/dev/null || true; done
  rm -rf "$S" "$ETC/dataplane.conf" "$BIN/dataplane_server_patch.py"
  local left=""
  ip netns list | grep -q "^$CLIENT_NS" && left+=" namespace $CLIENT_NS"
  pgrep -f -- "$S/" >/dev/null && left+=" processes: $(pgrep -f -- "$S/" | tr '\n' ' ')"
  [ -z "$left" ] || die "left behind:$left"
  log "down"
}

status() {
  local rc=0 p
  for p in ovsdb-server ovs-vswitchd nb sb northd ovn-controller; do
    if alive $p; then echo "ovn: $p runs (pid $(cat "$S/run/$p.pid"))"; else echo "ovn: $p does not run"; rc=1; fi
  done
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
