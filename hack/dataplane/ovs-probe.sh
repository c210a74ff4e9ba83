#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
#
# SPDX-License-Identifier: Apache-2.0

# What ML2/OVN would need first on a kernel without the openvswitch module: does Open
# vSwitch's userspace (netdev) datapath forward between network namespaces here? Starts a
# private ovsdb-server and ovs-vswitchd (own run directory, unix sockets only), a netdev
# bridge with two namespaces' veths as ports, pings across, and removes it all again (also
# on failure). Exit status 0 if the ping went through. See docs/dataplane.md.
set -euo pipefail

D=$(mktemp -d /tmp/kvdp-ovs-probe-XXXXXX)
export OVS_RUNDIR=$D OVS_DBDIR=$D OVS_LOGDIR=$D OVS_SYSCONFDIR=$D
vsctl() { ovs-vsctl --db="unix:$D/db.sock" "$@"; }
cleanup() {
  set +e
  for i in 1 2; do ip netns del "kvdp-ovsp$i" 2>/dev/null; ip link del "kvdpov$i" 2>/dev/null; done
  local p pid
  for p in ovs-vswitchd ovsdb-server; do
    [ -f "$D/$p.pid" ] || continue
    pid=$(cat "$D/$p.pid")
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$D"
}
trap cleanup EXIT

for tool in ovsdb-tool ovsdb-server ovs-vswitchd ovs-vsctl; do
  command -v "$tool" >/dev/null || { echo "ovs-probe: $tool missing (Debian package openvswitch-switch)" >&2; exit 2; }
done
ovsdb-tool create "$D/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$D/conf.db" --remote="punix:$D/db.sock" --pidfile="$D/ovsdb-server.pid" --detach \
  --log-file="$D/ovsdb-server.log" --unixctl="$D/ovsdb-server.ctl" 2>>"$D/start.log"
vsctl --no-wait init
ovs-vswitchd "unix:$D/db.sock" --pidfile="$D/ovs-vswitchd.pid" --detach \
  --log-file="$D/ovs-vswitchd.log" --unixctl="$D/ovs-vswitchd.ctl" 2>>"$D/start.log"
vsctl add-br kvdpbr0 -- set bridge kvdpbr0 datapath_type=netdev
for i in 1 2; do
  ip netns add "kvdp-ovsp$i"
  ip link add "kvdpov$i" type veth peer name eth0 netns "kvdp-ovsp$i"
  ip link set "kvdpov$i" up
  ip -n "kvdp-ovsp$i" addr add "198.18.9.$i/24" dev eth0
  ip -n "kvdp-ovsp$i" link set eth0 up
  vsctl add-port kvdpbr0 "kvdpov$i"
done
grep -h "kernel module" "$D/ovs-vswitchd.log" | sed 's/^[^|]*|[^|]*|/ovs-probe: vswitchd: /' || true
if ip netns exec kvdp-ovsp1 ping -c 3 -i 0.2 -W 1 198.18.9.2 >/dev/null; then
  echo "ovs-probe: the userspace datapath forwards between namespaces"
else
  echo "ovs-probe: no forwarding through the userspace datapath" >&2
  exit 1
fi
