#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# A real OpenStack Neutron (21, Debian package) and Keystone (22) on 127.0.0.1 with sqlite,
# no agents and no message queue, provisioned like a Gardener OpenStack shoot would be.
#
#   hack/openstack.sh up            start (or reuse) Keystone + Neutron and provision project demo
#   hack/openstack.sh down [--purge] stop exactly what `up` started, by PID; --purge deletes the state
#   hack/openstack.sh status        print what runs; exit 0 only if both servers answer
#
# State lives in .local/openstack/ (etc/, run/, bin/); the result is .local/openstack/env.sh,
# see docs/design.md for its variables. `up` is idempotent: servers that already answer are
# reused, databases are kept, and every object is looked up by name before it is created.
# Keystone listens on 127.0.0.1:5000, Neutron on 127.0.0.1:9696 (KEYSTONE_PORT, NEUTRON_PORT);
# KEYSTONE_TLS_PORT (default KEYSTONE_PORT+1) is left to tests that serve Keystone over HTTPS.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${KUBE_VIP_OPENSTACK_DIR:-$ROOT/.local/openstack}
ETC=$DIR/etc RUN=$DIR/run BIN=$DIR/bin
PY=/usr/bin/python3 # Debian's interpreter; a python3 earlier on PATH may not see dist-packages
HOST=127.0.0.1
KEYSTONE_PORT=${KEYSTONE_PORT:-5000}
NEUTRON_PORT=${NEUTRON_PORT:-9696}
# A port for a test's own HTTPS listener of the same Keystone (test/framework's KeystoneTLS).
KEYSTONE_TLS_PORT=${KEYSTONE_TLS_PORT:-$((KEYSTONE_PORT + 1))}
KEYSTONE_URL=http://$HOST:$KEYSTONE_PORT
NEUTRON_URL=http://$HOST:$NEUTRON_PORT
ADMIN_PASSWORD=adminpass
NEUTRON_PASSWORD=neutronpass
DEMO_PASSWORD=demopass
PKGS="python3-neutron python3-keystone uwsgi-core uwsgi-plugin-python3 curl jq sqlite3 iproute2 util-linux procps"

now() { date +%s%N; }
since() { local d=$(($(now) - $1)); printf '%d.%01d' $((d / 1000000000)) $((d / 100000000 % 10)); }
log() { echo "openstack: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=hack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# ------------------------------------------------------------------ process bookkeeping
# Each server is recorded as run/NAME.pid; a PID counts as ours only while its command line
# still contains what we started (protects against PID reuse).
KEYSTONE_CMD="uwsgi --ini $ETC/keystone-uwsgi.ini"
NEUTRON_CMD="$BIN/neutron-server --config-file $ETC/neutron.conf"
cmd_of() { case $1 in keystone) echo "$KEYSTONE_CMD" ;; neutron-server) echo "$NEUTRON_CMD" ;; esac; }

pid_of() { # pid_of NAME -> prints the PID if the recorded process is alive and ours
  local f=$RUN/$1.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$(cmd_of "$1")" || return 1
  echo "$pid"
}

stop_one() { # stop_one NAME: TERM the recorded PID, then KILL it and its recorded children if they linger
  local name=$1 pid
  if ! pid=$(pid_of "$name"); then
    rm -f "$RUN/$name.pid"
    return 0
  fi
  stop_tree "$name" "$pid" 20 'neutron-server|uwsgi'
  rm -f "$RUN/$name.pid"
}

http_code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "$@" 2>/dev/null || true; }
wait_http() { # wait_http URL TIMEOUT-S [curl args...]: until HTTP 200
  local url=$1 to=$2 c="" i
  shift 2
  for i in $(seq 1 $((to * 4))); do
    c=$(http_code "$@" "$url")
    [ "$c" = 200 ] && return 0
    sleep 0.25
  done
  log "timeout waiting for $url (last HTTP $c)"
  return 1
}

token() { # token USER PASSWORD PROJECT -> project-scoped token
  curl -fsS -i -m 30 -H 'Content-Type: application/json' "$KEYSTONE_URL/v3/auth/tokens" \
    -d '{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"'"$1"'","domain":{"id":"default"},"password":"'"$2"'"}}},"scope":{"project":{"name":"'"$3"'","domain":{"id":"default"}}}}}' |
    awk -F': ' 'tolower($1)=="x-subject-token"{print $2}' | tr -d '\r'
}

# ------------------------------------------------------------------ packages
install_packages() {
  local t
  t=$(now)
  # shellcheck disable=SC2086 # the package list is split on purpose
  "$ROOT/hack/install-deps.sh" $PKGS
  log "packages checked in $(since "$t")s"
}

# ------------------------------------------------------------------ keystone
write_keystone_config() {
  cat >"$ETC/keystone.conf" <<EOF
[DEFAULT]
log_file = $RUN/keystone.log
[database]
connection = sqlite:///$RUN/keystone.db
[identity]
# bcrypt's cheapest cost: at the default (12) every password or application-credential
# login costs Keystone ~0.3 s of CPU, and the suite logs in hundreds of times on 2 cores.
password_hash_rounds = 4
[token]
provider = fernet
[fernet_tokens]
key_repository = $RUN/fernet-keys
[fernet_receipts]
key_repository = $RUN/fernet-receipts
[credential]
key_repository = $RUN/credential-keys
EOF
  # No uwsgi threads: keystone's sqlite connections must stay in the thread that made them,
  # else they leak and the database locks up.
  # http-socket closes the connection after every response without saying so: a client that
  # reuses it races the close and gets its POST or DELETE reset (Go does not retry those).
  # "Connection: close" tells the clients; keep-alive (http11-socket) would tie a worker of
  # the two to each idle client.
  cat >"$ETC/keystone-uwsgi.ini" <<EOF
[uwsgi]
plugins = python3
http-socket = $HOST:$KEYSTONE_PORT
wsgi-file = /usr/bin/keystone-wsgi-public
env = OS_KEYSTONE_CONFIG_FILES=$ETC/keystone.conf
master = true
processes = 2
lazy-apps = true
die-on-term = true
no-orphans = true
buffer-size = 65535
add-header = Connection: close
need-app = true
EOF
}

init_keystone_db() {
  [ -s "$RUN/keystone.db" ] && return 0
  local km="keystone-manage --config-file $ETC/keystone.conf" t
  t=$(now)
  $km db_sync >"$RUN/keystone-manage.log" 2>&1 || { tail -20 "$RUN/keystone-manage.log"; die "keystone db_sync failed"; }
  # WAL: idle keystone connections hold read locks; without WAL writes fail with "database is locked".
  sqlite3 "$RUN/keystone.db" 'PRAGMA journal_mode=WAL;' >/dev/null
  mkdir -p "$RUN/fernet-keys" "$RUN/fernet-receipts" "$RUN/credential-keys"
  chmod 700 "$RUN/fernet-keys" "$RUN/fernet-receipts" "$RUN/credential-keys"
  {
    $km fernet_setup --keystone-user root --keystone-group root
    $km credential_setup --keystone-user root --keystone-group root
    $km bootstrap --bootstrap-password "$ADMIN_PASSWORD" --bootstrap-username admin \
      --bootstrap-project-name admin --bootstrap-role-name admin \
      --bootstrap-service-name keystone --bootstrap-region-id RegionOne \
      --bootstrap-admin-url "$KEYSTONE_URL/v3/" --bootstrap-internal-url "$KEYSTONE_URL/v3/" \
      --bootstrap-public-url "$KEYSTONE_URL/v3/"
  } >>"$RUN/keystone-manage.log" 2>&1 || { tail -20 "$RUN/keystone-manage.log"; die "keystone bootstrap failed"; }
  log "keystone database created in $(since "$t")s"
}

start_keystone() {
  local t
  if pid_of keystone >/dev/null && [ "$(http_code "$KEYSTONE_URL/v3")" = 200 ]; then
    log "keystone already runs (pid $(pid_of keystone))"
    return 0
  fi
  stop_one keystone
  port_free "$KEYSTONE_PORT"
  t=$(now)
  setsid uwsgi --ini "$ETC/keystone-uwsgi.ini" >"$RUN/keystone-uwsgi.log" 2>&1 </dev/null 9>&- &
  echo $! >"$RUN/keystone.pid"
  wait_http "$KEYSTONE_URL/v3" 60 || { tail -20 "$RUN/keystone-uwsgi.log"; die "keystone did not start"; }
  log "keystone answers after $(since "$t")s (pid $(cat "$RUN/keystone.pid"))"
}

port_free() {
  if ss -Hltn "sport = :$1" | grep -q .; then
    die "port $1 is in use by a process this script did not start: $(ss -Hltnp "sport = :$1" | awk '{print $6}')"
  fi
}

# Keystone objects (as admin): service project/user for Neutron, project and user demo,
# the network endpoint in the catalog, and demo's application credential.
provision_keystone() {
  local t tok svc itf demo_tok ac_id ac_secret
  t=$(now)
  ADMIN_TOKEN=$(token admin "$ADMIN_PASSWORD" admin)
  [ -n "$ADMIN_TOKEN" ] || die "no admin token from keystone"
  tok=$ADMIN_TOKEN
  ks() { # ks METHOD PATH [BODY]
    if [ -n "${3:-}" ]; then
      curl -fsS -m 30 -X "$1" -H "X-Auth-Token: $tok" -H 'Content-Type: application/json' -d "$3" "$KEYSTONE_URL$2"
    else
      curl -fsS -m 30 -X "$1" -H "X-Auth-Token: $tok" "$KEYSTONE_URL$2"
    fi
  }
  ks_ensure() { # ks_ensure COLLECTION NAME BODY -> id
    local id
    id=$(ks GET "/v3/$1?name=$2" | jq -r ".$1[0].id // empty")
    [ -n "$id" ] || id=$(ks POST "/v3/$1" "$3" | jq -r ".${1%s}.id")
    echo "$id"
  }
  role_id() { ks GET "/v3/roles?name=$1" | jq -r '.roles[0].id'; }
  ks_ensure roles service '{"role":{"name":"service"}}' >/dev/null
  SERVICE_PROJECT_ID=$(ks_ensure projects service '{"project":{"name":"service","domain_id":"default"}}')
  DEMO_PROJECT_ID=$(ks_ensure projects demo '{"project":{"name":"demo","domain_id":"default"}}')
  local neutron_user demo_user
  neutron_user=$(ks_ensure users neutron '{"user":{"name":"neutron","domain_id":"default","password":"'"$NEUTRON_PASSWORD"'"}}')
  demo_user=$(ks_ensure users demo '{"user":{"name":"demo","domain_id":"default","password":"'"$DEMO_PASSWORD"'"}}')
  ks PUT "/v3/projects/$SERVICE_PROJECT_ID/users/$neutron_user/roles/$(role_id admin)" >/dev/null
  ks PUT "/v3/projects/$SERVICE_PROJECT_ID/users/$neutron_user/roles/$(role_id service)" >/dev/null
  ks PUT "/v3/projects/$DEMO_PROJECT_ID/users/$demo_user/roles/$(role_id member)" >/dev/null
  svc=$(ks GET "/v3/services?type=network" | jq -r '.services[0].id // empty')
  [ -n "$svc" ] || svc=$(ks POST /v3/services '{"service":{"name":"neutron","type":"network"}}' | jq -r .service.id)
  for itf in public internal admin; do
    [ "$(ks GET "/v3/endpoints?service_id=$svc&interface=$itf" | jq '.endpoints|length')" -gt 0 ] ||
      ks POST /v3/endpoints '{"endpoint":{"service_id":"'"$svc"'","interface":"'"$itf"'","region_id":"RegionOne","url":"'"$NEUTRON_URL"'"}}' >/dev/null
  done

  # The application credential's secret is only shown at creation: keep it in run/, and
  # re-create the credential if the secret got lost.
  DEMO_TOKEN=$(token demo "$DEMO_PASSWORD" demo)
  [ -n "$DEMO_TOKEN" ] || die "no demo token from keystone"
  demo_tok=$DEMO_TOKEN
  ac_id=$(curl -fsS -m 30 -H "X-Auth-Token: $demo_tok" "$KEYSTONE_URL/v3/users/$demo_user/application_credentials?name=kube-vip" |
    jq -r '.application_credentials[0].id // empty')
  ac_secret=$(cat "$RUN/appcred-secret" 2>/dev/null || true)
  if [ -z "$ac_id" ] || [ -z "$ac_secret" ]; then
    [ -z "$ac_id" ] || curl -fsS -m 30 -X DELETE -H "X-Auth-Token: $demo_tok" "$KEYSTONE_URL/v3/users/$demo_user/application_credentials/$ac_id"
    ac_secret=kv-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    ac_id=$(curl -fsS -m 30 -H "X-Auth-Token: $demo_tok" -H 'Content-Type: application/json' \
      -d '{"application_credential":{"name":"kube-vip","secret":"'"$ac_secret"'","description":"gardener-extension-kube-vip local environment"}}' \
      "$KEYSTONE_URL/v3/users/$demo_user/application_credentials" | jq -r .application_credential.id)
    (umask 077 && echo "$ac_secret" >"$RUN/appcred-secret")
  fi
  APPCRED_ID=$ac_id APPCRED_SECRET=$ac_secret
  log "keystone provisioned in $(since "$t")s"
}

# ------------------------------------------------------------------ neutron
write_neutron_config() {
  cat >"$BIN/neutron-server" <<'EOF'
#!/usr/bin/python3
import os
import sys
# hack/dataplane.sh drops its server patch here (agents + RPC on sqlite); absent otherwise
if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dataplane_server_patch.py')):
    import dataplane_server_patch  # noqa: F401
from neutron.cmd.eventlet.server import main
sys.exit(main())
EOF
  cat >"$BIN/neutron-db-manage" <<'EOF'
#!/usr/bin/python3
import sys
from neutron.db.migration.cli import main
sys.exit(main())
EOF
  chmod +x "$BIN/neutron-server" "$BIN/neutron-db-manage"
  cat >"$ETC/neutron.conf" <<EOF
[DEFAULT]
bind_host = $HOST
bind_port = $NEUTRON_PORT
auth_strategy = keystone
core_plugin = ml2
# tags, quotas, revisions and timestamps are default service plugins; router is added
service_plugins = router
api_paste_config = $ETC/api-paste.ini
api_workers = 0
rpc_workers = 0
rpc_state_report_workers = 0
# no message queue: no agents run, so an in-process fake transport is enough
transport_url = fake://
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
# no DHCP agent runs in any tier (the subnets have DHCP off or none to serve): scheduling a
# network to one costs every port write ~35 ms of CPU for a warning
dhcp_agent_notification = false
allow_overlapping_ips = true
log_file = $RUN/neutron-server.log
state_path = $RUN/state
[database]
connection = sqlite:///$RUN/neutron.db
[oslo_concurrency]
lock_path = $RUN/lock
[keystone_authtoken]
www_authenticate_uri = $KEYSTONE_URL
auth_url = $KEYSTONE_URL
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = neutron
password = $NEUTRON_PASSWORD
region_name = RegionOne
# Neutron trusts a validated token for this long (default 300 s): a token Keystone revoked
# (a password change) must be refused soon, as a production cloud with a short cache does,
# so that re-authentication can be tested (TestPasswordChangedInKeystoneIsUnauthenticated).
token_cache_time = 5
EOF
  cat >"$ETC/ml2_conf.ini" <<EOF
[ml2]
type_drivers = flat,vxlan
tenant_network_types = vxlan
mechanism_drivers = openvswitch
extension_drivers = port_security,tag_ports_during_bulk_creation
[ml2_type_flat]
flat_networks = external
[ml2_type_vxlan]
vni_ranges = 1:1000
[securitygroup]
enable_security_group = true
EOF
  cat >"$ETC/api-paste.ini" <<'EOF'
[composite:neutron]
use = egg:Paste#urlmap
/: neutronversions_composite
/healthcheck: healthcheck
/v2.0: neutronapi_v2_0

[composite:neutronapi_v2_0]
use = call:neutron.auth:pipeline_factory
keystone = cors http_proxy_to_wsgi request_id catch_errors authtoken keystonecontext extensions neutronapiapp_v2_0

[composite:neutronversions_composite]
use = call:neutron.auth:pipeline_factory
keystone = cors http_proxy_to_wsgi neutronversions

[filter:request_id]
paste.filter_factory = oslo_middleware:RequestId.factory

[filter:catch_errors]
paste.filter_factory = oslo_middleware:CatchErrors.factory

[filter:cors]
paste.filter_factory = oslo_middleware.cors:filter_factory
oslo_config_project = neutron

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory

[filter:keystonecontext]
paste.filter_factory = neutron.auth:NeutronKeystoneContext.factory

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory

[filter:extensions]
paste.filter_factory = neutron.api.extensions:plugin_aware_extension_middleware_factory

[app:neutronversions]
paste.app_factory = neutron.pecan_wsgi.app:versions_factory

[app:neutronapiapp_v2_0]
paste.app_factory = neutron.api.v2.router:APIRouter.factory

[app:healthcheck]
paste.app_factory = oslo_middleware:Healthcheck.app_factory
backends = disable_by_file
disable_by_file_path = /nonexistent/neutron-healthcheck-disable
EOF
}

init_neutron_db() {
  [ -s "$RUN/neutron.db" ] && return 0
  local t
  t=$(now)
  # `neutron-db-manage upgrade heads` cannot ALTER constraints on sqlite: create the schema
  # from the models (as neutron's unit tests do) and stamp the alembic heads.
  $PY - "sqlite:///$RUN/neutron.db" <<'EOF'
import sys
import sqlalchemy as sa
from neutron.db.migration.models import head
head.get_metadata().create_all(sa.create_engine(sys.argv[1]))
EOF
  "$BIN/neutron-db-manage" --config-file "$ETC/neutron.conf" --config-file "$ETC/ml2_conf.ini" stamp heads \
    >"$RUN/neutron-db-manage.log" 2>&1 || { tail -20 "$RUN/neutron-db-manage.log"; die "neutron stamp failed"; }
  sqlite3 "$RUN/neutron.db" 'PRAGMA journal_mode=WAL;' >/dev/null
  log "neutron database created in $(since "$t")s"
}

start_neutron() {
  local t tok=$ADMIN_TOKEN
  if pid_of neutron-server >/dev/null && [ "$(http_code -H "X-Auth-Token: $tok" "$NEUTRON_URL/v2.0/networks")" = 200 ]; then
    log "neutron already runs (pid $(pid_of neutron-server))"
    return 0
  fi
  stop_one neutron-server
  port_free "$NEUTRON_PORT"
  t=$(now)
  local extra=() # hack/dataplane.sh's overrides (message queue, linuxbridge), when it is up
  [ ! -f "$ETC/dataplane.conf" ] || extra=(--config-file "$ETC/dataplane.conf")
  setsid "$BIN/neutron-server" --config-file "$ETC/neutron.conf" --config-file "$ETC/ml2_conf.ini" "${extra[@]}" \
    >"$RUN/neutron-server.stdout" 2>&1 </dev/null 9>&- &
  echo $! >"$RUN/neutron-server.pid"
  wait_http "$NEUTRON_URL/v2.0/networks" 90 -H "X-Auth-Token: $tok" ||
    { tail -30 "$RUN/neutron-server.log" "$RUN/neutron-server.stdout"; die "neutron did not start"; }
  log "neutron answers after $(since "$t")s (pid $(cat "$RUN/neutron-server.pid"))"
}

# Neutron objects: the external network (admin), and in project demo what Gardener's
# infrastructure and machine controllers would have made: network, node subnet, router,
# security group, and the three control-plane machines' ports.
provision_neutron() {
  local t admin_tok demo_tok
  t=$(now)
  admin_tok=$ADMIN_TOKEN demo_tok=$DEMO_TOKEN
  nt() { # nt TOKEN METHOD PATH [BODY]
    if [ -n "${4:-}" ]; then
      curl -fsS -m 60 -X "$2" -H "X-Auth-Token: $1" -H 'Content-Type: application/json' -d "$4" "$NEUTRON_URL/v2.0$3"
    else
      curl -fsS -m 60 -X "$2" -H "X-Auth-Token: $1" "$NEUTRON_URL/v2.0$3"
    fi
  }
  nt_ensure() { # nt_ensure TOKEN COLLECTION NAME EXTRA-FILTER BODY -> id (find by name in the token's project, else create)
    local id
    id=$(nt "$1" GET "/$2?name=$3$4" | jq -r ".$2[0].id // empty")
    [ -n "$id" ] || id=$(nt "$1" POST "/$2" "$5" | jq -r ".${2%s}.id")
    [ -n "$id" ] && [ "$id" != null ] || die "could not create $2 $3"
    echo "$id"
  }
  EXTERNAL_NETWORK_ID=$(nt_ensure "$admin_tok" networks public "&router:external=true" \
    '{"network":{"name":"public","router:external":true,"provider:network_type":"flat","provider:physical_network":"external","shared":false}}')
  EXTERNAL_SUBNET_ID=$(nt_ensure "$admin_tok" subnets public-subnet "&network_id=$EXTERNAL_NETWORK_ID" \
    '{"subnet":{"name":"public-subnet","network_id":"'"$EXTERNAL_NETWORK_ID"'","ip_version":4,"cidr":"198.19.0.0/24","gateway_ip":"198.19.0.1","enable_dhcp":false}}')
  # IPv6 (benchmarking range 2001:2::/48 only): addresses are static (no ipv6_ra_mode or
  # ipv6_address_mode, no DHCP): nodes configure their port's address themselves. Made before
  # the router so its gateway port gets an address of each family.
  EXTERNAL_SUBNET6_ID=$(nt_ensure "$admin_tok" subnets public-subnet-v6 "&network_id=$EXTERNAL_NETWORK_ID" \
    '{"subnet":{"name":"public-subnet-v6","network_id":"'"$EXTERNAL_NETWORK_ID"'","ip_version":6,"cidr":"2001:2:0:1::/64","gateway_ip":"2001:2:0:1::1","enable_dhcp":false}}')
  local p="&project_id=$DEMO_PROJECT_ID"
  NETWORK_ID=$(nt_ensure "$demo_tok" networks nodes "$p" '{"network":{"name":"nodes"}}')
  SUBNET_ID=$(nt_ensure "$demo_tok" subnets nodes "$p&network_id=$NETWORK_ID" \
    '{"subnet":{"name":"nodes","network_id":"'"$NETWORK_ID"'","ip_version":4,"cidr":"198.18.0.0/24","gateway_ip":"198.18.0.1","allocation_pools":[{"start":"198.18.0.100","end":"198.18.0.250"}]}}')
  SUBNET6_ID=$(nt_ensure "$demo_tok" subnets nodes-v6 "$p&network_id=$NETWORK_ID" \
    '{"subnet":{"name":"nodes-v6","network_id":"'"$NETWORK_ID"'","ip_version":6,"cidr":"2001:2:0:10::/64","gateway_ip":"2001:2:0:10::1","enable_dhcp":false,"allocation_pools":[{"start":"2001:2:0:10::100","end":"2001:2:0:10::250"}]}}')
  ROUTER_ID=$(nt_ensure "$demo_tok" routers nodes "$p" \
    '{"router":{"name":"nodes","external_gateway_info":{"network_id":"'"$EXTERNAL_NETWORK_ID"'"}}}')
  # one router interface per node subnet; IPv6 is routed, not NATed (Neutron has no IPv6 NAT)
  local sn
  for sn in "$SUBNET_ID" "$SUBNET6_ID"; do
    if [ "$(nt "$demo_tok" GET "/ports?device_id=$ROUTER_ID&network_id=$NETWORK_ID&fixed_ips=subnet_id%3D$sn" | jq '.ports|length')" = 0 ]; then
      nt "$demo_tok" PUT "/routers/$ROUTER_ID/add_router_interface" '{"subnet_id":"'"$sn"'"}' >/dev/null
    fi
  done
  # the external client routes the node prefix to the router's IPv6 gateway address
  ROUTER_GATEWAY_IP6=$(nt "$admin_tok" GET "/ports?device_id=$ROUTER_ID&network_id=$EXTERNAL_NETWORK_ID" |
    jq -r --arg s "$EXTERNAL_SUBNET6_ID" '[.ports[].fixed_ips[] | select(.subnet_id==$s) | .ip_address][0] // empty')
  if [ -z "$ROUTER_GATEWAY_IP6" ]; then
    # a router of an older state directory (made before the external IPv6 subnet): add it
    nt "$admin_tok" PUT "/routers/$ROUTER_ID" '{"router":{"external_gateway_info":{"network_id":"'"$EXTERNAL_NETWORK_ID"'","external_fixed_ips":[{"subnet_id":"'"$EXTERNAL_SUBNET_ID"'"},{"subnet_id":"'"$EXTERNAL_SUBNET6_ID"'"}]}}}' >/dev/null
    ROUTER_GATEWAY_IP6=$(nt "$admin_tok" GET "/ports?device_id=$ROUTER_ID&network_id=$EXTERNAL_NETWORK_ID" |
      jq -r --arg s "$EXTERNAL_SUBNET6_ID" '[.ports[].fixed_ips[] | select(.subnet_id==$s) | .ip_address][0] // empty')
  fi
  [ -n "$ROUTER_GATEWAY_IP6" ] || die "the router's gateway port has no address on $EXTERNAL_SUBNET6_ID"
  SECURITY_GROUP_ID=$(nt "$demo_tok" GET "/security-groups?name=nodes$p" | jq -r '.security_groups[0].id // empty')
  [ -n "$SECURITY_GROUP_ID" ] || SECURITY_GROUP_ID=$(nt "$demo_tok" POST /security-groups \
    '{"security_group":{"name":"nodes","description":"control-plane nodes"}}' | jq -r .security_group.id)
  NODE_IPS="198.18.0.11 198.18.0.12 198.18.0.13"
  NODE_IPS6="2001:2:0:10::11 2001:2:0:10::12 2001:2:0:10::13"
  NODE_PORT_IDS=""
  local i=0 ip ip6 id
  local -a ips6
  read -r -a ips6 <<<"$NODE_IPS6"
  for ip in $NODE_IPS; do
    ip6=${ips6[$i]}
    # dual-stack machines: one fixed IP per node subnet
    id=$(nt_ensure "$demo_tok" ports "control-plane-$i" "$p&network_id=$NETWORK_ID" \
      '{"port":{"name":"control-plane-'"$i"'","network_id":"'"$NETWORK_ID"'","device_owner":"compute:nova","device_id":"machine-control-plane-'"$i"'","fixed_ips":[{"subnet_id":"'"$SUBNET_ID"'","ip_address":"'"$ip"'"},{"subnet_id":"'"$SUBNET6_ID"'","ip_address":"'"$ip6"'"}],"security_groups":["'"$SECURITY_GROUP_ID"'"]}}')
    NODE_PORT_IDS="$NODE_PORT_IDS $id"
    i=$((i + 1))
  done
  NODE_PORT_IDS=${NODE_PORT_IDS# }
  log "neutron provisioned in $(since "$t")s"
}

write_env() {
  local f=$DIR/env.sh
  (
    umask 077
    cat >"$f.tmp" <<EOF
# Written by hack/openstack.sh up: the local Keystone + Neutron and what is provisioned in them.
export OS_AUTH_URL=$KEYSTONE_URL/v3
export OS_REGION_NAME=RegionOne
# The local cloud's admin, for tests that need what only an admin may (a second external network).
export OS_ADMIN_USERNAME=admin
export OS_ADMIN_PASSWORD=$ADMIN_PASSWORD
export OS_ADMIN_PROJECT_NAME=admin
export OS_DOMAIN_NAME=Default
export OS_PROJECT_NAME=demo
export OS_PROJECT_ID=$DEMO_PROJECT_ID
export OS_USERNAME=demo
export OS_PASSWORD=$DEMO_PASSWORD
export OS_APPLICATION_CREDENTIAL_ID=$APPCRED_ID
export OS_APPLICATION_CREDENTIAL_SECRET=$APPCRED_SECRET
export NEUTRON_URL=$NEUTRON_URL
export EXTERNAL_NETWORK_ID=$EXTERNAL_NETWORK_ID
export EXTERNAL_NETWORK_NAME=public
export EXTERNAL_SUBNET_ID=$EXTERNAL_SUBNET_ID
export NETWORK_ID=$NETWORK_ID
export SUBNET_ID=$SUBNET_ID
export ROUTER_ID=$ROUTER_ID
export SECURITY_GROUP_ID=$SECURITY_GROUP_ID
export NODE_PORT_IDS="$NODE_PORT_IDS"
export NODE_IPS="$NODE_IPS"
# IPv6 (static addresses, no RA or DHCPv6): the node subnet's and the external network's
# subnets, the node ports' addresses (in NODE_PORT_IDS' order) and the router's gateway address
export SUBNET6_ID=$SUBNET6_ID
export EXTERNAL_SUBNET6_ID=$EXTERNAL_SUBNET6_ID
export NODE_IPS6="$NODE_IPS6"
export ROUTER_GATEWAY_IP6=$ROUTER_GATEWAY_IP6
# Keystone's uwsgi configuration and the port on which a test may serve it over HTTPS with a
# certificate of its own CA (test/framework's KeystoneTLS).
export KEYSTONE_UWSGI_INI=$ETC/keystone-uwsgi.ini
export KEYSTONE_TLS_PORT=$KEYSTONE_TLS_PORT
EOF
    mv "$f.tmp" "$f"
  )
}

check_loopback() {
  local pids pid bad=""
  pids="$(pid_of keystone || true) $(pid_of neutron-server || true)"
  for pid in $pids; do
    pids="$pids $(ps -o pid= --ppid "$pid" | tr -s ' \n' ' ' || true)"
  done
  for pid in $pids; do
    bad="$bad$(ss -Hltnp | grep "pid=$pid," | awk '{print $4}' | grep -vE '^(127\.|\[::1\])' || true)"
  done
  [ -z "$bad" ] || die "a started server listens on a non-loopback address: $bad"
}

# ------------------------------------------------------------------ commands
up() {
  local t0
  t0=$(now)
  install_packages
  mkdir -p "$ETC" "$RUN" "$BIN" "$RUN/lock" "$RUN/state"
  write_keystone_config
  write_neutron_config
  init_keystone_db
  start_keystone
  provision_keystone
  init_neutron_db
  start_neutron
  provision_neutron
  check_loopback
  write_env
  log "up in $(since "$t0")s: keystone $KEYSTONE_URL, neutron $NEUTRON_URL; env in $DIR/env.sh"
}

down() {
  stop_one neutron-server
  stop_one keystone
  if [ "${1:-}" = --purge ]; then
    rm -rf "$RUN" "$DIR/env.sh"
    log "state removed"
  fi
}

status() {
  local rc=0 name pid
  for name in keystone neutron-server; do
    if pid=$(pid_of "$name"); then
      echo "$name: running, pid $pid"
    else
      echo "$name: not running"
      rc=1
    fi
  done
  echo "keystone $KEYSTONE_URL/v3: HTTP $(http_code "$KEYSTONE_URL/v3")"
  echo "neutron $NEUTRON_URL/: HTTP $(http_code "$NEUTRON_URL/")"
  if [ -f "$DIR/env.sh" ]; then echo "env: $DIR/env.sh"; else echo "env: none"; fi
  return $rc
}

# Serialise concurrent invocations (several tests or engineers may call `up` at once). The
# servers are started with fd 9 closed, so that they do not hold the lock.
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock -w 300 9 || die "another hack/openstack.sh holds $DIR/.lock"

case "${1:-}" in
up) up ;;
down) down "${2:-}" ;;
status) status ;;
*)
  echo "usage: $0 up|down [--purge]|status" >&2
  exit 2
  ;;
esac
