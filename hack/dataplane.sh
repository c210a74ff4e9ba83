#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# The real Neutron dataplane, layered on hack/openstack.sh's Keystone + Neutron (opt-in):
# a private RabbitMQ, the ML2 linuxbridge agent (vxlan tenant networks, iptables security groups,
# ebtables ARP protection) and the L3 agent (qrouter namespace: SNAT and floating-IP DNAT), both
# from python3-neutron, plus an external client namespace whose only way to the nodes is a
# floating IP.
#
#   hack/dataplane.sh up      restart Neutron with the dataplane config, start the agents
#   hack/dataplane.sh smoke   plug a namespace into node port 0, ping its floating IP from the client
#   hack/dataplane.sh down    stop the agents (and the L3 agent's radvd) and RabbitMQ, remove every namespace, device,
#                             iptables/ebtables chain and ipset they made, then stop Keystone +
#                             Neutron (the next `hack/openstack.sh up` is agent-less again)
#   hack/dataplane.sh status
#
# Host plumbing (198.18.0.0/15 only): bridge kvdp-vtep holds the VXLAN endpoint 198.19.255.1/32
# (this kernel has no dummy devices), bridge kvdp-ext is physical network "external" (the public
# network 198.19.0.0/24 of hack/openstack.sh), namespace kvdp-client sits on it as 198.19.0.1/24
# (the public gateway) with no route to the node subnet 198.18.0.0/24.
# The result is $DIR/dataplane/env.sh. Ports (127.0.0.1 only): RabbitMQ DATAPLANE_RABBIT_PORT
# (25715), its distribution port (25716) and epmd (24715); VXLAN UDP 24789.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${KUBE_VIP_OPENSTACK_DIR:-$ROOT/.local/openstack}
ETC=$DIR/etc BIN=$DIR/bin
DP=$DIR/dataplane
PY=/usr/bin/python3
KEYSTONE_URL=http://127.0.0.1:${KEYSTONE_PORT:-5000}
NEUTRON_URL=http://127.0.0.1:${NEUTRON_PORT:-9696}
RABBIT_PORT=${DATAPLANE_RABBIT_PORT:-25715}
RABBIT_DIST_PORT=${DATAPLANE_RABBIT_DIST_PORT:-25716}
EPMD_PORT=${DATAPLANE_EPMD_PORT:-24715}
VXLAN_PORT=24789
AGENT_HOST=kvdp-host
VTEP_IP=198.19.255.1
CLIENT_NS=kvdp-client CLIENT_IP=198.19.0.1
# IPv6 (2001:2::/48 only): the client is the external IPv6 subnet's gateway and routes the node
# prefix to the router, which routes it without NAT
CLIENT_IP6=2001:2:0:1::1 NODE_PREFIX6=2001:2:0:10::/64 NODE_GATEWAY6=2001:2:0:10::1
# radvd: the L3 agent starts it in the router namespace for every IPv6 router interface, and
# without it the whole router (IPv4 NAT too) stays unconfigured
PKGS="python3-neutron rabbitmq-server iptables ipset conntrack arping curl jq iproute2 radvd"

now() { date +%s%N; }
since() { local d=$(($(now) - $1)); printf '%d.%01d' $((d / 1000000000)) $((d / 100000000 % 10)); }
log() { echo "dataplane: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=hack/lib.sh
. "$ROOT/hack/lib.sh"

# ------------------------------------------------------------------ helpers
alive() { # alive PIDFILE PATTERN -> PID, if the recorded process lives and its command line has PATTERN
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2" && echo "$pid"
}
admin_token() {
  curl -fsS -i -m 30 -H 'Content-Type: application/json' "$KEYSTONE_URL/v3/auth/tokens" \
    -d '{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"admin","domain":{"id":"default"},"password":"adminpass"}}},"scope":{"project":{"name":"admin","domain":{"id":"default"}}}}}' |
    awk -F': ' 'tolower($1)=="x-subject-token"{print $2}' | tr -d '\r'
}
nt() { # nt METHOD PATH [BODY], as admin
  local a=(-fsS -m 60 -X "$1" -H "X-Auth-Token: $TOKEN")
  if [ -n "${3:-}" ]; then
    curl "${a[@]}" -H 'Content-Type: application/json' -d "$3" "$NEUTRON_URL/v2.0$2"
  else
    curl "${a[@]}" "$NEUTRON_URL/v2.0$2"
  fi
}
rabbit_env() {
  export HOME=$DP/rabbit RABBITMQ_NODENAME=kvdp@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$RABBIT_PORT RABBITMQ_DIST_PORT=$RABBIT_DIST_PORT
  export ERL_EPMD_PORT=$EPMD_PORT ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_CONFIG_FILE=$DP/rabbit/rabbitmq.conf RABBITMQ_ENABLED_PLUGINS_FILE=$DP/rabbit/enabled_plugins
  export RABBITMQ_MNESIA_BASE=$DP/rabbit/mnesia RABBITMQ_LOG_BASE=$DP/rabbit/log
  export RABBITMQ_PID_FILE=$DP/run/rabbit.pid RABBITMQ_CONF_ENV_FILE=$DP/rabbit/rabbitmq-env.conf
  # one scheduler thread, no busy waiting: the machine is shared
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+S 1:1 +A 4 +sbwt none +sbwtdcpu none +sbwtdio none -kernel inet_dist_use_interface {127,0,0,1}"
  export RABBITMQ_CTL_ERL_ARGS="+S 1:1"
}

# ------------------------------------------------------------------ up
plumb_host() {
  ip link show kvdp-vtep >/dev/null 2>&1 || {
    ip link add kvdp-vtep type bridge
    ip addr add "$VTEP_IP/32" dev kvdp-vtep
  }
  ip link set kvdp-vtep up
  ip link show kvdp-ext >/dev/null 2>&1 || ip link add kvdp-ext type bridge
  ip link set kvdp-ext up
  if ! ip netns list | grep -qw "$CLIENT_NS"; then
    ip netns add "$CLIENT_NS"
    ip link add kvdp-cl0 type veth peer name eth0 netns "$CLIENT_NS"
    ip link set kvdp-cl0 master kvdp-ext up
    ip -n "$CLIENT_NS" link set lo up
    ip -n "$CLIENT_NS" addr add "$CLIENT_IP/24" dev eth0
    ip -n "$CLIENT_NS" addr add "$CLIENT_IP6/64" dev eth0 nodad
    ip -n "$CLIENT_NS" link set eth0 up
  fi
}

start_rabbit() {
  if alive "$DP/run/rabbit-launcher.pid" rabbitmq-server >/dev/null && ss -Hltn "sport = :$RABBIT_PORT" | grep -q .; then
    return 0
  fi
  ss -Hltn "sport = :$RABBIT_PORT" | grep -q . && die "port $RABBIT_PORT is in use by a process this script did not start"
  mkdir -p "$DP/rabbit/log" "$DP/rabbit/mnesia"
  cat >"$DP/rabbit/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$RABBIT_PORT
loopback_users.guest = true
disk_free_limit.absolute = 50MB
log.console = false
log.file.level = warning
EOF
  echo '[].' >"$DP/rabbit/enabled_plugins"
  : >"$DP/rabbit/rabbitmq-env.conf"
  (
    rabbit_env
    setsid /usr/lib/rabbitmq/bin/rabbitmq-server >"$DP/run/rabbit.stdout" 2>&1 </dev/null 8>&- 9>&- &
    echo $! >"$DP/run/rabbit-launcher.pid"
  )
  for _ in $(seq 1 240); do ss -Hltn "sport = :$RABBIT_PORT" | grep -q . && return 0; sleep 0.25; done
  tail -n 20 "$DP/run/rabbit.stdout" >&2
  die "rabbitmq did not listen on $RABBIT_PORT within 60s"
}

write_config() {
  # Read after neutron.conf and ml2_conf.ini by the server, and by both agents.
  cat >"$ETC/dataplane.conf" <<EOF
[DEFAULT]
host = $AGENT_HOST
transport_url = rabbit://guest:guest@127.0.0.1:$RABBIT_PORT/
# forced to >= 1 by neutron; the server patch runs it inside the API process (sqlite)
rpc_workers = 1
[agent]
# all runs as root: no sudo, no rootwrap; privsep-helper is started directly
root_helper =
report_interval = 10
[experimental]
linuxbridge = true
[ml2]
mechanism_drivers = linuxbridge,l2population
[oslo_messaging_rabbit]
heartbeat_timeout_threshold = 0
EOF
  cat >"$DP/etc/linuxbridge_agent.ini" <<EOF
[linux_bridge]
bridge_mappings = external:kvdp-ext
[vxlan]
enable_vxlan = true
local_ip = $VTEP_IP
l2_population = true
udp_dstport = $VXLAN_PORT
[securitygroup]
firewall_driver = iptables
enable_security_group = true
enable_ipset = true
[agent]
polling_interval = 1
EOF
  cat >"$DP/etc/l3_agent.ini" <<EOF
[DEFAULT]
interface_driver = linuxbridge
agent_mode = legacy
enable_metadata_proxy = false
EOF
  cp "$ROOT/hack/dataplane/server_patch.py" "$BIN/dataplane_server_patch.py"
  cp "$ROOT/hack/dataplane/agent_patch.py" "$DP/bin/dataplane_agent_patch.py"
  printf '#!/usr/bin/python3\nimport sys\nimport dataplane_agent_patch  # noqa: F401\nfrom neutron.cmd.eventlet.plugins.linuxbridge_neutron_agent import main\nsys.exit(main())\n' >"$DP/bin/linuxbridge-agent"
  printf '#!/usr/bin/python3\nimport sys\nfrom neutron.cmd.eventlet.agents.l3 import main\nsys.exit(main())\n' >"$DP/bin/l3-agent"
  chmod +x "$DP/bin/linuxbridge-agent" "$DP/bin/l3-agent"
}

start_agent() { # start_agent NAME INI
  alive "$DP/run/$1.pid" "$DP/bin/$1" >/dev/null && return 0
  setsid "$DP/bin/$1" --config-file "$ETC/neutron.conf" --config-file "$ETC/dataplane.conf" --config-file "$DP/etc/$2" \
    --log-file "$DP/run/$1.log" >"$DP/run/$1.stdout" 2>&1 </dev/null 8>&- 9>&- &
  echo $! >"$DP/run/$1.pid"
}

# agent_logs: the agents' last lines. What an agent prints before its logging is set up (an
# import error, a bad option) is only in its .stdout; tail takes one file per call with -n.
agent_logs() {
  local f
  for f in "$DP"/run/{linuxbridge-agent,l3-agent}.{stdout,log}; do
    [ -s "$f" ] || continue
    echo "----- $f" >&2
    tail -n 20 "$f" >&2 || true
  done
}

# The node security group admits ICMP and the API ports from anywhere, as a shoot's would, and
# from the group itself (the other nodes) what a control plane needs between its nodes: etcd's
# client and peer ports, the kubelet's port and the agents' metrics port (for a kube-apiserver's
# pod proxy or a Prometheus on another node, as docs/operations.md asks of a shoot's groups).
sg_rule() { # sg_rule PROTO PORT_MIN PORT_MAX REMOTE (an address prefix or "self") [ETHERTYPE], unless it exists
  local remote port match body ethertype=${5:-IPv4}
  if [ "$4" = self ]; then remote='"remote_group_id":"'"$SECURITY_GROUP_ID"'"' match='.remote_group_id==$sg'; else remote='"remote_ip_prefix":"'"$4"'"' match='.remote_ip_prefix==$r'; fi
  port="" && [ -z "$2" ] || port=',"port_range_min":'"$2"',"port_range_max":'"$3"
  [ "$(jq --arg p "$1" --arg n "$2" --arg x "$3" --arg sg "$SECURITY_GROUP_ID" --arg r "$4" \
    --arg e "$ethertype" "[.security_group_rules[] | select(.protocol==\$p and .ethertype==\$e and $match and (.port_range_min|tostring)==(if \$n==\"\" then \"null\" else \$n end) and (.port_range_max|tostring)==(if \$x==\"\" then \"null\" else \$x end))] | length" <<<"$RULES")" = 0 ] || return 0
  body='{"security_group_rule":{"security_group_id":"'"$SECURITY_GROUP_ID"'","direction":"ingress","ethertype":"'"$ethertype"'","protocol":"'"$1"'"'"$port,$remote"'}}'
  nt POST /security-group-rules "$body" >/dev/null
}
provision() {
  # shellcheck source=/dev/null
  . "$DIR/env.sh"
  RULES=$(nt GET "/security-group-rules?security_group_id=$SECURITY_GROUP_ID&direction=ingress")
  sg_rule icmp "" "" 0.0.0.0/0
  sg_rule tcp 443 443 0.0.0.0/0
  sg_rule tcp 6443 6443 0.0.0.0/0
  sg_rule tcp 2379 2380 self
  sg_rule tcp 10250 10250 self
  sg_rule tcp 9482 9482 self
  sg_rule ipv6-icmp "" "" ::/0 IPv6
  sg_rule tcp 443 443 ::/0 IPv6
  sg_rule tcp 6443 6443 ::/0 IPv6
  sg_rule tcp 2379 2380 self IPv6
  sg_rule tcp 10250 10250 self IPv6
  sg_rule tcp 9482 9482 self IPv6
  # the client's route to the node prefix (the router's IPv6 gateway address is known only now)
  ip -n "$CLIENT_NS" -6 route replace "$NODE_PREFIX6" via "$ROUTER_GATEWAY_IP6"
  MTU=$(nt GET "/networks/$NETWORK_ID" | jq -r .network.mtu)
  (
    umask 077
    cat >"$DP/env.sh.tmp" <<EOF
# Written by hack/dataplane.sh up: the dataplane on top of $DIR/env.sh.
export DATAPLANE_AGENT_HOST=$AGENT_HOST
export DATAPLANE_CLIENT_NS=$CLIENT_NS
export DATAPLANE_CLIENT_IP=$CLIENT_IP
export DATAPLANE_NODE_BRIDGE=brq${NETWORK_ID:0:11}
export DATAPLANE_NODE_MTU=$MTU
export DATAPLANE_NODE_GATEWAY=198.18.0.1
export DATAPLANE_CLIENT_IP6=$CLIENT_IP6
export DATAPLANE_NODE_GATEWAY6=$NODE_GATEWAY6
export DATAPLANE_ROUTER_NS=qrouter-$ROUTER_ID
# binding:host_id is admin-only: the "Nova step" (plugging a node into its port) needs the admin
export DATAPLANE_ADMIN_USER=admin
export DATAPLANE_ADMIN_PASSWORD=adminpass
EOF
    mv "$DP/env.sh.tmp" "$DP/env.sh"
  )
}

up() {
  local t0 t
  t0=$(now)
  "$ROOT/hack/install-deps.sh" $PKGS
  mkdir -p "$DP/run" "$DP/etc" "$DP/bin" "$ETC" "$BIN"
  trap 'log "up failed; tearing down"; down' ERR
  t=$(now)
  plumb_host
  start_rabbit
  log "host plumbing + rabbitmq in $(since "$t")s"
  write_config
  t=$(now)
  # the running Neutron (if any) was started without the dataplane config: restart it
  if ! grep -qF -- "$ETC/dataplane.conf" /proc/"$(cat "$DIR/run/neutron-server.pid" 2>/dev/null || echo 0)"/cmdline 2>/dev/null; then
    "$ROOT/hack/openstack.sh" down 8>&-
  fi
  "$ROOT/hack/openstack.sh" up 8>&-
  log "keystone + neutron in $(since "$t")s"
  TOKEN=$(admin_token)
  [ -n "$TOKEN" ] || die "no admin token"
  t=$(now)
  start_agent linuxbridge-agent linuxbridge_agent.ini
  start_agent l3-agent l3_agent.ini
  local n=0 a dead=""
  for _ in $(seq 1 240); do
    n=$(nt GET "/agents?host=$AGENT_HOST" | jq '[.agents[] | select(.alive)] | length')
    [ "$n" = 2 ] && break
    # an agent that exited (a bad config, a missing module) will not report: stop waiting
    for a in linuxbridge-agent l3-agent; do alive "$DP/run/$a.pid" "$DP/bin/$a" >/dev/null || dead+=" $a"; done
    [ -z "$dead" ] || break
    sleep 0.5
  done
  [ "$n" = 2 ] || { agent_logs; die "agents not alive${dead:+ (exited:$dead)}"; }
  log "agents alive in $(since "$t")s"
  provision
  # the router (made before the L3 agent existed) must be hosted: its namespace appears
  for _ in $(seq 1 240); do ip netns list | grep -q "qrouter-$ROUTER_ID" && break; sleep 0.5; done
  ip netns list | grep -q "qrouter-$ROUTER_ID" || die "router $ROUTER_ID not hosted by the L3 agent"
  trap - ERR
  log "up in $(since "$t0")s; env in $DP/env.sh"
}

# ------------------------------------------------------------------ down
stop_recorded() { # stop_recorded NAME PATTERN
  local pid
  if pid=$(alive "$DP/run/$1.pid" "$2"); then stop_tree "$1" "$pid" 10 "$2|privsep-helper"; fi
  rm -f "$DP/run/$1.pid"
}

down() {
  trap - ERR
  set +e
  local router="" network="" t
  t=$(now)
  if [ -f "$DIR/env.sh" ]; then
    # shellcheck source=/dev/null
    . "$DIR/env.sh"
    router=${ROUTER_ID:-} network=${NETWORK_ID:-}
  fi
  stop_recorded l3-agent "$DP/bin/l3-agent"
  stop_recorded linuxbridge-agent "$DP/bin/linuxbridge-agent"
  # privsep daemons outlive their agent; ours are the ones started with our config files
  for p in $(pgrep -f "privsep-helper --config-file $ETC/neutron.conf --config-file $ETC/dataplane.conf"); do kill "$p"; done
  # rabbitmq: the launcher's beam child, the launcher, then our epmd (found by its port)
  local lp k ep
  if lp=$(alive "$DP/run/rabbit-launcher.pid" rabbitmq-server); then
    for k in $(ps -o pid= --ppid "$lp"); do
      tr '\0' ' ' <"/proc/$k/cmdline" 2>/dev/null | grep -qF "$DP/rabbit" || continue
      kill "$k"
      for _ in $(seq 1 60); do kill -0 "$k" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$k" 2>/dev/null
    done
    kill "$lp" 2>/dev/null
  fi
  rm -f "$DP/run/rabbit-launcher.pid"
  ep=$(ss -Hltnp "sport = :$EPMD_PORT" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
  [ -z "$ep" ] || ! tr '\0' ' ' <"/proc/$ep/cmdline" | grep -q epmd || kill "$ep"
  # namespaces and devices: ours by name, the router's by ID, the node network's bridge and taps
  local ns d
  for ns in $(ip netns list | awk '{print $1}' | grep -E '^kvdp-'); do
    for p in $(ip netns pids "$ns"); do kill -9 "$p"; done
    ip netns del "$ns"
  done
  # The L3 agent's radvd (one per IPv6 router interface) outlives the agent and keeps the
  # router's namespace, and with it the router's veths, alive after the del: the next up's
  # L3 agent then fails with "Interface tap... already exists" and builds no router.
  for p in $(pgrep -f "radvd -C $DIR/"); do kill -9 "$p"; done
  if [ -n "$router" ]; then
    for p in $(ip netns pids "qrouter-$router" 2>/dev/null); do kill -9 "$p"; done
    ip netns del "qrouter-$router" 2>/dev/null
  fi
  if [ -n "$network" ]; then
    for d in $(ip -o link show master "brq${network:0:11}" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
      case $d in tap* | vxlan-*) ip link del "$d" ;; esac
    done
    ip link del "brq${network:0:11}" 2>/dev/null
  fi
  for d in $(ip -o link show type vxlan | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip -d link show "$d" | grep -q "dstport $VXLAN_PORT" && ip link del "$d"
  done
  ip link del kvdp-cl0 2>/dev/null
  ip link del kvdp-ext 2>/dev/null
  ip link del kvdp-vtep 2>/dev/null
  # the linuxbridge agent leaves its chains and sets behind when it stops; only ours exist
  # unless another linuxbridge agent runs on this host
  if ! pgrep -f neutron.cmd.eventlet.plugins.linuxbridge >/dev/null && ! pgrep -f linuxbridge-agent >/dev/null; then
    local tb c rule
    for tb in filter raw mangle nat; do
      iptables-save -t "$tb" 2>/dev/null | grep -E '^-A [A-Z]+ .*-j neutron-' | sed 's/^-A/-D/' |
        while read -r rule; do eval "iptables -t $tb $rule"; done
      for c in $(iptables-save -t "$tb" 2>/dev/null | grep -oE '^:neutron-[^ ]+' | tr -d ':'); do iptables -t "$tb" -F "$c"; done
      for c in $(iptables-save -t "$tb" 2>/dev/null | grep -oE '^:neutron-[^ ]+' | tr -d ':'); do iptables -t "$tb" -X "$c"; done
    done
    while :; do # by number: ebtables-nft cannot delete some rules by spec (see hack/dataplane/agent_patch.py)
      c=$(ebtables -t nat -L PREROUTING 2>/dev/null | grep '^-' | grep -n -- '-j neutron' | tail -1 | cut -d: -f1)
      [ -n "$c" ] && ebtables -t nat -D PREROUTING "$c" || break
    done
    for c in $(ebtables -t nat -L 2>/dev/null | awk '/^Bridge chain: neutron/{print $3}' | tr -d ','); do ebtables -t nat -F "$c"; done
    for c in $(ebtables -t nat -L 2>/dev/null | awk '/^Bridge chain: neutron/{print $3}' | tr -d ','); do ebtables -t nat -X "$c"; done
    for c in $(ipset list -n 2>/dev/null | grep -E '^NIPv[46]'); do ipset destroy "$c"; done
  fi
  # Neutron back to agent-less: stop it (and Keystone) and drop the overrides
  "$ROOT/hack/openstack.sh" down 8>&-
  rm -f "$ETC/dataplane.conf" "$BIN/dataplane_server_patch.py" "$DP/env.sh"
  log "down in $(since "$t")s"
  set -e
}

# ------------------------------------------------------------------ smoke
# What Nova + os-vif do for a VM, with a namespace as the VM: bind port control-plane-0 to our
# host, give the namespace a veth with the port's MAC and IP, enslave the host end to the
# network's bridge. Then a floating IP on that port must answer ICMP from the client namespace,
# and the node subnet must be unreachable from there.
smoke() {
  # shellcheck source=/dev/null
  . "$DIR/env.sh"
  # shellcheck source=/dev/null
  . "$DP/env.sh"
  TOKEN=$(admin_token)
  local fip t rc=0 # port, tap, ns and fip_id stay global: the EXIT trap needs them
  ns=kvdp-smoke fip_id=""
  port=${NODE_PORT_IDS%% *} ip=${NODE_IPS%% *} ip6=${NODE_IPS6%% *}
  mac=$(nt GET "/ports/$port" | jq -r .port.mac_address)
  tap=tap${port:0:11}
  cleanup() {
    set +e # best effort, every step: the tap usually went with the namespace
    [ -z "${fip_id:-}" ] || nt DELETE "/floatingips/$fip_id" >/dev/null
    ip netns del "$ns" 2>/dev/null
    ip link del "$tap" 2>/dev/null
    nt PUT "/ports/$port" '{"port":{"binding:host_id":""}}' >/dev/null
  }
  trap cleanup EXIT
  t=$(now)
  ip netns add "$ns"
  ip link add "$tap" mtu "$DATAPLANE_NODE_MTU" type veth peer name eth0 netns "$ns"
  ip -n "$ns" link set eth0 address "$mac" mtu "$DATAPLANE_NODE_MTU" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" route add default via "$DATAPLANE_NODE_GATEWAY"
  ip -n "$ns" addr add "$ip6/64" dev eth0 nodad
  ip -n "$ns" -6 route add default via "$DATAPLANE_NODE_GATEWAY6"
  ip link set "$tap" up
  nt PUT "/ports/$port" '{"port":{"binding:host_id":"'"$DATAPLANE_AGENT_HOST"'"}}' >/dev/null
  for _ in $(seq 1 120); do ip link show "$DATAPLANE_NODE_BRIDGE" >/dev/null 2>&1 && break; sleep 0.5; done
  ip link set "$tap" master "$DATAPLANE_NODE_BRIDGE"
  for _ in $(seq 1 120); do [ "$(nt GET "/ports/$port" | jq -r .port.status)" = ACTIVE ] && break; sleep 0.5; done
  log "port $port ACTIVE after $(since "$t")s: $(nt GET "/ports/$port" | jq -r .port.status)"
  for f in $(nt GET "/floatingips?port_id=$port" | jq -r '.floatingips[].id'); do nt DELETE "/floatingips/$f"; done # an interrupted run's
  fip_id=$(nt POST /floatingips '{"floatingip":{"floating_network_id":"'"$EXTERNAL_NETWORK_ID"'","port_id":"'"$port"'","project_id":"'"$OS_PROJECT_ID"'"}}' | jq -r .floatingip.id)
  fip=$(nt GET "/floatingips/$fip_id" | jq -r .floatingip.floating_ip_address)
  t=$(now)
  for _ in $(seq 1 60); do ip netns exec "$CLIENT_NS" ping -c 1 -W 1 "$fip" >/dev/null 2>&1 && break; done
  if ip netns exec "$CLIENT_NS" ping -c 3 -i 0.2 -W 1 "$fip" >/dev/null; then
    log "PASS: client $CLIENT_IP pings floating IP $fip ($ip) $(since "$t")s after the floating IP was made"
  else
    log "FAIL: client cannot ping floating IP $fip"
    rc=1
  fi
  if ip netns exec "$CLIENT_NS" ping -c 1 -W 1 "$ip" >/dev/null 2>&1; then
    log "FAIL: client reaches the node address $ip directly"
    rc=1
  else
    log "PASS: client has no way to the node address $ip"
  fi
  # IPv6 has no floating IP: the router routes the node prefix, so the node's own address answers
  t=$(now)
  for _ in $(seq 1 30); do ip netns exec "$CLIENT_NS" ping -6 -c 1 -W 1 "$ip6" >/dev/null 2>&1 && break; done
  if ip netns exec "$CLIENT_NS" ping -6 -c 3 -i 0.2 -W 1 "$ip6" >/dev/null; then
    log "PASS: client $CLIENT_IP6 pings the node's IPv6 address $ip6 through the router ($(since "$t")s)"
  else
    log "FAIL: client cannot ping the node's IPv6 address $ip6 through the router"
    rc=1
  fi
  return $rc
}

pss_kb() { awk '/^Pss:/{s+=$2} END{print s+0}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }

# status: whether each part runs, and its memory (proportional set size, so that the shared
# Python libraries count once).
status() {
  local rc=0 n pid kb total=0 beam
  for n in linuxbridge-agent l3-agent; do
    if pid=$(alive "$DP/run/$n.pid" "$DP/bin/$n"); then
      kb=$(pss_kb "$pid") total=$((total + kb))
      echo "$n: running, $((kb / 1024)) MiB"
    else
      echo "$n: not running"
      rc=1
    fi
  done
  kb=0
  for pid in $(pgrep -f "privsep-helper --config-file $ETC/neutron.conf --config-file $ETC/dataplane.conf"); do kb=$((kb + $(pss_kb "$pid"))); done
  total=$((total + kb))
  echo "privsep daemons: $(pgrep -fc "privsep-helper --config-file $ETC/neutron.conf --config-file $ETC/dataplane.conf"), $((kb / 1024)) MiB"
  if pid=$(alive "$DP/run/rabbit-launcher.pid" rabbitmq-server); then
    kb=0
    for beam in $(ps -o pid= --ppid "$pid"); do kb=$((kb + $(pss_kb "$beam"))); done
    total=$((total + kb))
    echo "rabbitmq: running, $((kb / 1024)) MiB"
  else
    echo "rabbitmq: not running"
    rc=1
  fi
  echo "dataplane total: $((total / 1024)) MiB (on top of Keystone + Neutron)"
  return $rc
}

mkdir -p "$DP"
exec 8>"$DP/.lock"
flock -w 300 8 || die "another hack/dataplane.sh holds $DP/.lock"

case "${1:-}" in
up) up ;;
down) down ;;
smoke) smoke ;;
status) status ;;
*)
  echo "usage: $0 up|down|smoke|status" >&2
  exit 2
  ;;
esac
