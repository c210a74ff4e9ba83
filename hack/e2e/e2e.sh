#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# End-to-end test of the kube-vip exposure extension against a real OpenStack (devstack with
# ML2/OVN or ML2/OVS) and a kind cluster of three control-plane nodes standing in for the
# self-hosted shoot, with the extension installed from `make release-artifacts` (the chart
# archive; the images' OCI layouts imported into the nodes' containerd, no registry).
#
# It needs Docker, kind, kubectl, helm, the `openstack` CLI, Open vSwitch, jq, Go and a
# devstack on the same host: .github/workflows/e2e-devstack.yaml runs it on a GitHub-hosted
# runner, devstack installed by the job. The development machine of this project has no
# Docker engine, so the kind part has never run there; the script's OpenStack steps run there
# against the local Keystone + Neutron (below), and the extension's own Neutron work (pairs,
# floating IP) in the integration and dataplane tiers.
#
#   hack/e2e/e2e.sh up      # kind cluster, release images, a Neutron NIC per node, Gardener objects, chart
#   hack/e2e/e2e.sh test    # SelfHostedShootExposure -> floating IP -> https://FIP:6443/readyz;
#                           # failover (the holder node paused); then deletion
#   hack/e2e/e2e.sh logs    # the cluster's and the extension's logs into .local/e2e/logs
#   hack/e2e/e2e.sh down    # removes everything `up` created, then sweeps what the extension
#                           # marked with this cluster's identity (also after failures)
#   hack/e2e/e2e.sh all     # up, test, down (logs and down also when up or test fail)
#
# The OpenStack steps alone, without kind, Docker or the host's OVS (the integration tier runs
# them against the local Keystone + Neutron, test/integration/packaging's
# TestE2EScriptOpenStackSteps); `up` and `down` run the same functions:
#   hack/e2e/e2e.sh openstack-up NODE...  # the nodes' security group, a Neutron port per NODE, the
#                                         # cloudprovider Secret and the Infrastructure status in $E2E_STATE
#   hack/e2e/e2e.sh openstack-down        # the sweep of what the extension marked for this
#                                         # cluster, then the node ports and the security group
#   hack/e2e/e2e.sh kubelet-flags IP      # kind's kubeadm-flags.env (stdin) with the node IP
#                                         # replaced by IP (stdout), as `up` rewrites it
#
# Input (environment): the devstack credentials as the `openstack` CLI takes them
# (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME, OS_REGION_NAME, and the domains as
# OS_USER_DOMAIN_NAME / OS_PROJECT_DOMAIN_NAME, or as the IDs devstack's openrc exports, the
# Secret's domainName then being "Default"; e.g. `source "$GITHUB_WORKSPACE/devstack/openrc" demo demo`,
# where gophercloud/devstack-action checks devstack out), and:
#   E2E_NETWORK          tenant network of the control-plane nodes    (default: private)
#   E2E_SUBNET           its IPv4 subnet                               (default: private-subnet)
#                        (devstack's IPv4 subnet of "private"; the network also carries the IPv6
#                        SLAAC subnet ipv6-private-subnet: devstack's IP_VERSION defaults to 4+6
#                        in lib/neutron_plugins/services/l3, so each port gets an address of both)
#   E2E_ROUTER           router between it and the external network   (default: router1)
#   E2E_FLOATING_POOL    external network for floating IPs            (default: public)
#   E2E_OVS_BRIDGE       integration bridge of the devstack host      (default: br-int)
#   E2E_NAME             name prefix of everything created; also the shoot's technical ID,
#                        which tags the extension's Neutron resources  (default: kube-vip-e2e)
#   E2E_NODES            control-plane nodes                           (default: 3)
#   E2E_POD_CIDR         the kind cluster's pod network                (default: 10.244.0.0/16,
#                        kind's default podSubnet, written into the kind config)
#   E2E_TIMEOUT          seconds to wait for ingress and readyz       (default: 300)
#   E2E_BINDING_OPENRC   optional: a file to source (in a subshell) for credentials that may
#                        bind a port to a host, as Nova's service user does on a real cloud.
#   E2E_STATE            directory of the run's state and logs         (default: .local/e2e)
#
# Everything the extension and this script do runs with the project (non-admin)
# credentials: the node ports are created without `--host`, because `binding:host_id` is
# admin-only in Neutron's default policy. ML2/OVN claims an unbound port for the chassis
# whose OVS interface carries its iface-id, so that is enough there. ML2/OVS wires only
# bound ports; set E2E_BINDING_OPENRC on such a host, and only the binding (the step Nova
# does for a VM) uses those credentials.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NAME="${E2E_NAME:-kube-vip-e2e}"
NETWORK="${E2E_NETWORK:-private}"
SUBNET="${E2E_SUBNET:-private-subnet}"
ROUTER="${E2E_ROUTER:-router1}"
FLOATING_POOL="${E2E_FLOATING_POOL:-public}"
OVS_BRIDGE="${E2E_OVS_BRIDGE:-br-int}"
TIMEOUT="${E2E_TIMEOUT:-300}"
NODES="${E2E_NODES:-3}"
POD_CIDR="${E2E_POD_CIDR:-10.244.0.0/16}"
STATE="${E2E_STATE:-${REPO_ROOT}/.local/e2e}"
KUBECONFIG_FILE="${STATE}/kubeconfig"
RELEASE_DIR="${REPO_ROOT}/bin/release"
# the nodes' interface on the Neutron network, as the exposure's providerConfig names it
NIC="kvnic0"
RELEASE_NAMESPACE="extension-kube-vip"
# the policy-routing table that sends what leaves from the node subnet (the VIP's replies
# included) through the Neutron NIC instead of Docker's default route
ROUTE_TABLE=4242

log() { echo "[e2e] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
kc() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }
need() { for c in "$@"; do command -v "$c" >/dev/null || die "$c is required"; done; }

# nodes prints the cluster's node containers, all control-plane (it has no workers). Not
# `kind get nodes`: that also lists the external load balancer (haproxy, no ctr, no kubelet)
# that kind puts in front of several control-plane nodes (kind v0.29.0: created in
# pkg/cluster/internal/providers/docker/provision.go, listed by pkg/cmd/kind/get/nodes, whose
# provider filters on the cluster label alone); the labels are kind's docker provider's
# (pkg/cluster/internal/providers/docker/constants.go).
nodes() {
  docker ps -a --filter "label=io.x-k8s.kind.cluster=$NAME" --filter "label=io.x-k8s.kind.role=control-plane" \
    --format '{{.Names}}' | sort
}

# gardener_dir prints the module directory of the pinned Gardener; `go list -m` alone does not
# download it, so a fresh runner would get an empty path.
gardener_dir() { (cd "$REPO_ROOT" && go mod download -json github.com/gardener/gardener | jq -er .Dir); }

up() {
  need docker kind kubectl helm openstack go ovs-vsctl jq make
  [[ -n "${OS_AUTH_URL:-}" ]] || die "source the devstack credentials first (OS_AUTH_URL is empty)"
  mkdir -p "$STATE"

  log "kind cluster ${NAME} with ${NODES} control-plane nodes"
  if ! kind get clusters | grep -qx "$NAME"; then
    {
      echo "kind: Cluster"
      echo "apiVersion: kind.x-k8s.io/v1alpha4"
      echo "networking:"
      echo "  podSubnet: ${POD_CIDR}"
      echo "nodes:"
      for _ in $(seq 1 "$NODES"); do echo "- role: control-plane"; done
    } >"$STATE/kind.yaml"
    kind create cluster --name "$NAME" --config "$STATE/kind.yaml" --kubeconfig "$KUBECONFIG_FILE" --wait 180s
  fi
  [[ "$(nodes | wc -l)" == "$NODES" ]] || die "kind cluster ${NAME} has control-plane nodes $(nodes | xargs), want ${NODES}"
  # kind's --wait only logs a warning when the nodes are not Ready in time
  # (pkg/cluster/internal/create/actions/waitforready).
  kc wait --for=condition=Ready node --all --timeout 180s

  log "release artifacts (make release-artifacts) into every node's containerd"
  make -C "$REPO_ROOT" --no-print-directory release-artifacts
  import_release_images

  # shellcheck disable=SC2046 # one argument per node
  openstack_up $(nodes)
  local node
  for node in $(nodes); do plug_node "$node"; done
  # kindnet reads its own node's address (HOST_IP) once, at start (kind v0.29.0,
  # images/kindnetd/cmd/kindnetd/main.go): a running one would now take its own node, at its
  # Neutron address, for a remote one. Started again, each reads the new address.
  kc -n kube-system rollout restart ds/kindnet
  kc -n kube-system rollout status ds/kindnet --timeout 180s
  install_gardener_objects

  # gardenadm creates Gardener's PriorityClasses on a self-hosted shoot before any extension;
  # kind has none, and the chart's pods would be rejected.
  kc create priorityclass gardener-system-900 --value=999998900 \
    --description="PriorityClass for Gardener system components (as gardenadm creates it)" \
    --dry-run=client -o yaml | kc apply -f -

  log "extension chart from the release"
  local chart
  chart="$(ls "$RELEASE_DIR"/gardener-extension-kube-vip-*.tgz)"
  helm upgrade --install kube-vip "$chart" \
    --kubeconfig "$KUBECONFIG_FILE" --namespace "$RELEASE_NAMESPACE" --create-namespace \
    --set gardener.selfHostedShootCluster=true --set logLevel=debug --wait --timeout 5m
}

# import_release_images loads each release image's OCI layout into every node's containerd
# under the reference its index names, as a pull from the registry would: the chart's defaults
# and the controller's image vector (tags, pulled IfNotPresent) then resolve without a registry.
# (ctr's --digests adds an @digest name only to images the archive leaves unnamed: containerd
# v2.1 core/transfer/image/imagestore.go, SkipNamedDigest.)
# It runs the ctr command kind's own `kind load image-archive` runs in each node
# (pkg/cluster/nodeutils LoadImageArchive: `ctr --namespace=k8s.io images import
# --all-platforms --digests --snapshotter=<the CRI's>`), plus --base-name, which imports only
# names under the image's repository (ref.name is the full reference, which containerd v2.1
# keeps as it is: core/images/archive/reference.go). Without --snapshotter, ctr uses the
# transfer service's default, overlayfs, as the node's CRI does on the runner's ext4 disk
# (kind's entrypoint switches only on zfs, fuseblk, rootless or a host
# KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER, which the workflow does not set).
import_release_images() {
  local layout ref node
  for layout in "$RELEASE_DIR"/*/index.json; do
    layout="$(dirname "$layout")"
    ref="$(jq -er '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$layout/index.json")"
    for node in $(nodes); do
      tar -C "$layout" -cf - . | docker exec -i "$node" ctr --namespace=k8s.io images import --all-platforms --base-name "${ref%:*}" --digests -
    done
    log "imported ${ref}@$(jq -r '.manifests[0].digest' "$layout/index.json")"
  done
}

# openstack_up NODE... is every OpenStack step of `up`, in the project of the OS_* variables
# and nothing else (no kind, Docker or host): the nodes' security group, a Neutron port per
# node (in $STATE/node-ports: node, port ID, MAC, IP, subnet CIDR, gateway, MTU), and the
# cloudprovider Secret and the Infrastructure's providerStatus that name them
# ($STATE/cloudprovider.json, $STATE/infrastructure-status.json).
openstack_up() {
  need openstack jq
  [[ -n "${OS_AUTH_URL:-}" ]] || die "source the devstack credentials first (OS_AUTH_URL is empty)"
  mkdir -p "$STATE"
  security_group
  # read once: every node's port is in the same network and subnet (CLI calls are slow)
  local network subnet node
  network="$(openstack network show "$NETWORK" -f json)"
  subnet="$(openstack subnet show "$SUBNET" -f json)"
  : >"$STATE/node-ports.tmp"
  for node in "$@"; do node_port "$node" "$network" "$subnet" >>"$STATE/node-ports.tmp"; done
  mv "$STATE/node-ports.tmp" "$STATE/node-ports"
  cloud_objects "$network" "$subnet"
}

# security_group opens the nodes' ports as a shoot's security group does: the API port and
# ICMP from anywhere, everything between the nodes (etcd, kubelet). The project's default
# group admits only its own members, and the floating IP's traffic comes from the router.
security_group() {
  local sg="${NAME}-nodes"
  if ! openstack security group show "$sg" >/dev/null 2>&1; then
    log "security group ${sg}"
    openstack security group create "$sg" --description "kube-vip e2e nodes" >/dev/null
    openstack security group rule create "$sg" --ingress --protocol tcp --dst-port 6443 --remote-ip 0.0.0.0/0 >/dev/null
    openstack security group rule create "$sg" --ingress --protocol icmp --remote-ip 0.0.0.0/0 >/dev/null
    openstack security group rule create "$sg" --ingress --protocol any --remote-group "$sg" >/dev/null
    # The pods' own addresses (the nodes' allowed address pair): ML2/OVN's remote-group
    # match holds the ports' fixed IPs only (neutron common/ovn/acl.py, OVN northd's port
    # group address sets), so without this rule pod-to-pod traffic between nodes is dropped.
    openstack security group rule create "$sg" --ingress --protocol any --remote-ip "$POD_CIDR" >/dev/null
  fi
}

# node_port NODE NETWORK-JSON SUBNET-JSON creates (or finds) the node's Neutron port as Nova
# would for a VM: device_owner compute:nova, in the nodes' security group, an address of the
# subnet; binds it with E2E_BINDING_OPENRC's credentials if set. The pod network is an
# allowed address pair: once the node's InternalIP is this port's address, kindnet routes
# the other nodes' pod ranges through it, with pod source addresses that port security
# would otherwise drop. Prints "NODE PORT-ID MAC IP CIDR GATEWAY MTU", IP being the port's
# address in the IPv4 subnet (Neutron also gives it one of every IPv6 SLAAC subnet of the
# network, in no promised order).
node_port() {
  local node=$1 network=$2 subnet=$3 port port_id subnet_id
  subnet_id="$(jq -er .id <<<"$subnet")"
  [[ "$(jq -er .ip_version <<<"$subnet")" == 4 ]] || die "subnet ${SUBNET} is not an IPv4 subnet"
  log "Neutron port for ${node}"
  port="$(openstack port show "${node}" -f json 2>/dev/null || true)"
  if [[ -z "$port" ]]; then
    port="$(openstack port create "${node}" --network "$(jq -r .id <<<"$network")" \
      --fixed-ip subnet="$subnet_id" --allowed-address ip-address="$POD_CIDR" \
      --security-group "${NAME}-nodes" --device-owner compute:nova -f json)"
  fi
  port_id="$(jq -er .id <<<"$port")"
  if [[ -n "${E2E_BINDING_OPENRC:-}" ]]; then
    log "binding the port to $(hostname) with the credentials of ${E2E_BINDING_OPENRC}"
    (set +u; source "$E2E_BINDING_OPENRC"; openstack port set --host "$(hostname)" "$port_id")
  fi
  echo "$node $port_id $(jq -er .mac_address <<<"$port")" \
    "$(jq -er --arg s "$subnet_id" 'first(.fixed_ips[] | select(.subnet_id == $s) | .ip_address)' <<<"$port")" \
    "$(jq -er .cidr <<<"$subnet") $(jq -er .gateway_ip <<<"$subnet") $(jq -er .mtu <<<"$network")"
}

# kubelet_flags IP rewrites kubeadm's kubelet flags file (/var/lib/kubelet/kubeadm-flags.env,
# stdin to stdout) so that the kubelet's one --node-ip is IP. kind passes the node's Docker
# address as kubeletExtraArgs node-ip (its kubeadm config template, pkg/cluster/internal/
# kubeadm/config.go), and kubeadm writes it into KUBELET_KUBEADM_ARGS; kind's kubelet drop-in
# (images/base/files/etc/systemd/system/kubelet.service.d/10-kubeadm.conf) passes it before
# $KUBELET_EXTRA_ARGS. kind's own value is replaced in place, so that the kubelet gets exactly
# one --node-ip, whatever else sets extra arguments. (A kubeadmConfigPatches
# node-ip cannot be used: the address is on no interface while kind creates the cluster, and
# the kubelet then reports no address at all, which leaves kindnet's pods without
# status.hostIP.)
kubelet_flags() {
  local ip=$1 out
  out="$(sed -E "s/--node-ip=[^ \"]*/--node-ip=${ip}/g")"
  [[ "$(grep -o -- '--node-ip=[^ "]*' <<<"$out")" == "--node-ip=${ip}" ]] ||
    die "kubeadm-flags.env does not carry exactly one --node-ip (kind's): ${out}"
  echo "$out"
}

# plug_node NODE gives the kind node a NIC on the Neutron network, the way devstack plugs a VM:
# the node's port of $STATE/node-ports, a veth whose host end sits on the integration bridge
# with iface-id = the port's ID and whose other end, named $NIC, carries the port's MAC, fixed
# IP and the network's MTU in the node's namespace. For Neutron the node is then a VM on that
# network, so the VIP (an allowed address pair of this port) and its floating IP work as on a
# real cloud. Replies from the node subnet (the VIP's too) leave by $NIC: a policy route,
# since the node's default route is Docker's eth0.
plug_node() {
  local node=$1 port_id mac ip cidr prefix gw mtu pid host_if
  read -r _ port_id mac ip cidr gw mtu < <(awk -v n="$node" '$1 == n' "$STATE/node-ports") || true
  [[ -n "$port_id" ]] || die "no Neutron port of ${node} in ${STATE}/node-ports"
  prefix="${cidr#*/}"

  pid="$(docker inspect -f '{{.State.Pid}}' "$node")"
  host_if="kv${port_id:0:11}"
  # sudo: the runner's user is not root, and without it the NIC would never be seen, so a
  # second `up` would fail to add it again.
  if ! sudo nsenter -t "$pid" -n ip link show "$NIC" >/dev/null 2>&1; then
    sudo ip link add "$host_if" mtu "$mtu" type veth peer name "${host_if}c" mtu "$mtu"
    sudo ovs-vsctl --may-exist add-port "$OVS_BRIDGE" "$host_if" -- set Interface "$host_if" \
      external-ids:iface-id="$port_id" external-ids:iface-status=active external-ids:attached-mac="$mac"
    sudo ip link set "$host_if" up
    sudo ip link set "${host_if}c" netns "$pid"
    sudo nsenter -t "$pid" -n ip link set "${host_if}c" name "$NIC"
    sudo nsenter -t "$pid" -n ip link set "$NIC" address "$mac" mtu "$mtu"
    sudo nsenter -t "$pid" -n ip addr add "${ip}/${prefix}" dev "$NIC"
    sudo nsenter -t "$pid" -n ip link set "$NIC" up
    sudo nsenter -t "$pid" -n ip route replace "$cidr" dev "$NIC" table "$ROUTE_TABLE"
    sudo nsenter -t "$pid" -n ip route replace default via "$gw" dev "$NIC" table "$ROUTE_TABLE"
    sudo nsenter -t "$pid" -n ip rule add from "$cidr" lookup "$ROUTE_TABLE" priority 100
    # loose reverse-path filtering: the clients behind the router are, for the main table,
    # reached through eth0
    sudo nsenter -t "$pid" -n sysctl -qw "net.ipv4.conf.${NIC}.rp_filter=2"
  fi
  # The controller finds a control-plane node's Neutron port by the Node's InternalIP, so
  # make the kubelet report the port's address (kind's default is the Docker bridge's).
  local flags=/var/lib/kubelet/kubeadm-flags.env
  docker exec "$node" cat "$flags" | kubelet_flags "$ip" >"$STATE/${node}-kubeadm-flags.env"
  docker exec -i "$node" sh -c "cat >${flags}.new && mv ${flags}.new ${flags}" <"$STATE/${node}-kubeadm-flags.env"
  docker exec "$node" systemctl restart kubelet
  local deadline=$((SECONDS + 120))
  until kc get node "$node" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}' | grep -qw "$ip"; do
    (( SECONDS < deadline )) || die "node ${node} does not report InternalIP ${ip}"
    sleep 2
  done
}

install_gardener_objects() {
  log "Gardener CRDs and objects"
  local crds
  crds="$(gardener_dir)/pkg/component/extensions/crds/assets"
  for kind in clusters infrastructures selfhostedshootexposures; do
    kc apply --server-side -f "${crds}/crd-extensions.gardener.cloud_${kind}.yaml"
  done
  # gardenadm installs the prometheus-operator CRDs on a self-hosted shoot before any
  # extension (gardener's botanist, ReconcileCustomResourceDefinitionsTaskGroup); the chart
  # renders its ServiceMonitor and PrometheusRule for a self-hosted shoot.
  local monitoring
  monitoring="$(gardener_dir)/pkg/component/observability/monitoring/prometheusoperator/templates"
  for kind in servicemonitors prometheusrules; do
    kc apply --server-side -f "${monitoring}/crd-monitoring.coreos.com_${kind}.yaml"
  done
  kc wait --for condition=established --timeout 60s \
    crd/clusters.extensions.gardener.cloud crd/infrastructures.extensions.gardener.cloud \
    crd/selfhostedshootexposures.extensions.gardener.cloud \
    crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com

  local subnet_cidr version
  subnet_cidr="$(jq -er '.status.providerStatus.networks.subnets[0].cidr' "$STATE/infrastructure-status.json")"
  # The version the kind nodes run (kind's default node image), as Gardener would record it.
  version="$(kc version -o json | jq -er '.serverVersion.gitVersion | ltrimstr("v") | split("-")[0]')"
  kc apply -f "$STATE/cloudprovider.json"

  kc apply -f - <<YAML
apiVersion: extensions.gardener.cloud/v1alpha1
kind: Cluster
metadata:
  name: kube-system
spec:
  cloudProfile:
    apiVersion: core.gardener.cloud/v1beta1
    kind: CloudProfile
    metadata: {name: devstack}
    spec:
      type: openstack
      kubernetes: {versions: [{version: ${version}}]}
      machineImages: []
      machineTypes: []
      regions: [{name: ${OS_REGION_NAME:-RegionOne}}]
  seed:
    apiVersion: core.gardener.cloud/v1beta1
    kind: Seed
    metadata: {name: ${NAME}}
    spec:
      provider: {type: openstack, region: ${OS_REGION_NAME:-RegionOne}}
      networks: {nodes: ${subnet_cidr}, pods: ${POD_CIDR}, services: 10.96.0.0/16}
  shoot:
    apiVersion: core.gardener.cloud/v1beta1
    kind: Shoot
    metadata: {name: ${NAME}, namespace: garden}
    status: {technicalID: ${NAME}}
    spec:
      region: ${OS_REGION_NAME:-RegionOne}
      kubernetes: {version: ${version}}
      provider:
        type: openstack
        workers:
        - name: control-plane
          minimum: ${NODES}
          maximum: ${NODES}
          machine: {type: m1.small}
          controlPlane:
            exposure:
              extension:
                type: kube-vip
                providerConfig:
                  apiVersion: kube-vip.extensions.gardener.cloud/v1alpha1
                  kind: ExposureConfig
                  agent: {interface: ${NIC}}
YAML

  kc apply -f - <<YAML
apiVersion: extensions.gardener.cloud/v1alpha1
kind: Infrastructure
metadata: {name: ${NAME}, namespace: kube-system}
spec:
  type: openstack
  region: ${OS_REGION_NAME:-RegionOne}
  secretRef: {name: cloudprovider, namespace: kube-system}
YAML
  kc -n kube-system patch infrastructure "$NAME" --subresource=status --type=merge \
    -p "$(cat "$STATE/infrastructure-status.json")"
}

# cloud_objects NETWORK-JSON SUBNET-JSON renders what the cluster learns of OpenStack: the cloudprovider Secret with the
# OS_* credentials (provider-openstack's keys) and the Infrastructure's providerStatus with the
# IDs of the network, subnet, router and floating pool, as provider-openstack would record them.
cloud_objects() {
  local network_id subnet_id subnet_cidr router_id pool_id
  network_id="$(jq -er .id <<<"$1")"
  subnet_id="$(jq -er .id <<<"$2")"
  subnet_cidr="$(jq -er .cidr <<<"$2")"
  router_id="$(openstack router show "$ROUTER" -f value -c id)"
  pool_id="$(openstack network show "$FLOATING_POOL" -f value -c id)"

  (umask 077 && jq -n \
    --arg domain "${OS_USER_DOMAIN_NAME:-Default}" --arg tenant "$OS_PROJECT_NAME" \
    --arg user "$OS_USERNAME" --arg password "$OS_PASSWORD" --arg url "$OS_AUTH_URL" \
    '{apiVersion: "v1", kind: "Secret", metadata: {name: "cloudprovider", namespace: "kube-system"},
      stringData: {domainName: $domain, tenantName: $tenant, username: $user, password: $password, authURL: $url}}' \
    >"$STATE/cloudprovider.json")
  jq -n --arg network "$network_id" --arg subnet "$subnet_id" --arg cidr "$subnet_cidr" \
    --arg router "$router_id" --arg pool "$pool_id" --arg poolName "$FLOATING_POOL" \
    '{status: {providerStatus: {
      apiVersion: "openstack.provider.extensions.gardener.cloud/v1alpha1", kind: "InfrastructureStatus",
      networks: {id: $network, floatingPool: {id: $pool, name: $poolName}, router: {id: $router},
        subnets: [{purpose: "nodes", id: $subnet, cidr: $cidr}]},
      securityGroups: []}}}' >"$STATE/infrastructure-status.json"
}

test_exposure() {
  need kubectl curl jq docker
  local endpoints="" node ip
  while read -r node ip; do
    endpoints+="
  - nodeName: ${node}
    addresses: [{type: InternalIP, address: ${ip}}]"
  done < <(awk '{print $1, $4}' "$STATE/node-ports")
  log "SelfHostedShootExposure"
  kc apply -f - <<YAML
apiVersion: extensions.gardener.cloud/v1alpha1
kind: SelfHostedShootExposure
metadata: {name: ${NAME}, namespace: kube-system}
spec:
  type: kube-vip
  port: 6443
  credentialsRef: {apiVersion: v1, kind: Secret, name: cloudprovider, namespace: kube-system}
  endpoints:${endpoints}
YAML

  log "waiting for VIPHeld and status.ingress"
  kc -n kube-system wait --for=condition=VIPHeld --timeout "${TIMEOUT}s" "selfhostedshootexposure/${NAME}" ||
    { kc -n kube-system get selfhostedshootexposure "$NAME" -o yaml; die "no VIPHeld within ${TIMEOUT}s"; }
  local fip="" deadline=$((SECONDS + TIMEOUT))
  while [[ -z "$fip" ]]; do
    (( SECONDS < deadline )) || { kc -n kube-system get selfhostedshootexposure "$NAME" -o yaml; die "no ingress within ${TIMEOUT}s"; }
    fip="$(kc -n kube-system get selfhostedshootexposure "$NAME" -o jsonpath='{.status.ingress[0].ip}' 2>/dev/null || true)"
    sleep 3
  done
  readyz "$fip"
  log "the kube-apiserver answers on the floating IP ${fip}"

  local holder
  holder="$(vip_holder)"
  [[ -n "$holder" ]] || die "no node holds a second address on ${NIC}"
  log "failover: pausing ${holder}, the node that holds the VIP"
  docker pause "$holder"
  readyz "$fip"
  local new
  new="$(vip_holder)"
  docker unpause "$holder"
  [[ -n "$new" && "$new" != "$holder" ]] || die "after pausing ${holder} the VIP is held by '${new}'"
  log "${new} took the VIP over; the kube-apiserver answers on ${fip} again"

  log "deleting the exposure"
  kc -n kube-system delete selfhostedshootexposure "$NAME" --wait --timeout "${TIMEOUT}s"
  if openstack floating ip show "$fip" >/dev/null 2>&1; then
    die "floating IP ${fip} still exists after deletion"
  fi
  log "PASS"
}

# readyz FIP waits until the kube-apiserver answers ok through the floating IP.
readyz() {
  local deadline=$((SECONDS + TIMEOUT))
  log "probing https://$1:6443/readyz"
  until [[ "$(curl -ks --max-time 3 "https://$1:6443/readyz" || true)" == "ok" ]]; do
    (( SECONDS < deadline )) || { kc -n kube-system get pods -l app.kubernetes.io/name=kube-vip-agent -o wide || true; die "https://$1:6443/readyz does not answer ok"; }
    sleep 2
  done
}

# vip_holder prints the running node whose $NIC carries a second IPv4 address (the VIP).
vip_holder() {
  local node
  for node in $(nodes); do
    [[ "$(docker inspect -f '{{.State.Status}}' "$node")" == running ]] || continue
    if [[ "$(docker exec "$node" ip -4 -o addr show dev "$NIC" | wc -l)" -gt 1 ]]; then echo "$node"; return 0; fi
  done
}

logs() {
  local dir="$STATE/logs" node
  mkdir -p "$dir"
  kc -n "$RELEASE_NAMESPACE" logs deploy/gardener-extension-kube-vip --tail=-1 >"$dir/controller.log" 2>&1 || true
  kc -n kube-system logs -l app.kubernetes.io/name=kube-vip-agent --prefix --tail=-1 >"$dir/agents.log" 2>&1 || true
  kc -n kube-system get selfhostedshootexposures -o yaml >"$dir/exposures.yaml" 2>&1 || true
  kc get pods -A -o wide >"$dir/pods.txt" 2>&1 || true
  kc get events -A >"$dir/events.txt" 2>&1 || true
  for node in $(nodes 2>/dev/null); do
    docker exec "$node" sh -c "ip addr; ip rule; ip route show table all" >"$dir/${node}-net.txt" 2>&1 || true
  done
  openstack port list --long -f yaml >"$dir/neutron-ports.yaml" 2>&1 || true
  openstack floating ip list --long -f yaml >"$dir/neutron-fips.yaml" 2>&1 || true
  log "logs in ${dir}"
}

down() {
  log "cleaning up"
  local node port_id host_if
  if [[ -f "$KUBECONFIG_FILE" ]] && kind get clusters 2>/dev/null | grep -qx "$NAME"; then
    for node in $(nodes); do docker unpause "$node" >/dev/null 2>&1 || true; done
    kc -n kube-system delete selfhostedshootexposure "$NAME" --ignore-not-found --wait --timeout "${TIMEOUT}s" || \
      log "exposure deletion did not finish; sweeping the Neutron resources tagged by the extension"
    helm uninstall kube-vip --kubeconfig "$KUBECONFIG_FILE" --namespace "$RELEASE_NAMESPACE" --wait || true
  fi
  kind delete cluster --name "$NAME" --kubeconfig "$KUBECONFIG_FILE" || true
  if [[ -f "$STATE/node-ports" ]]; then
    while read -r node port_id _; do
      host_if="kv${port_id:0:11}"
      sudo ovs-vsctl --if-exists del-port "$OVS_BRIDGE" "$host_if" || true
      sudo ip link del "$host_if" 2>/dev/null || true
    done <"$STATE/node-ports"
  fi
  openstack_down
  rm -rf "$STATE/kubeconfig" "$STATE/kind.yaml"
}

# openstack_down is every OpenStack step of `down`: the sweep of what the extension made for
# this cluster (its identity is the technical ID, E2E_NAME), then the node ports and the
# nodes' security group that openstack_up made. The sweep takes only what carries the
# extension's own mark: ports with both its tags, and floating IPs with its description for
# this cluster (the extension marks floating IPs by description, not by tag); a user's
# floating IP the extension only associated, or a port with a look-alike tag, stays.
openstack_down() {
  need openstack jq
  local ids
  ids="$(openstack floating ip list --long -f json | jq -r --arg c "$NAME" '
    "Virtual IP of the kube-apiserver of cluster \($c)" as $p | " (gardener-extension-kube-vip); do not delete" as $s |
    .[] | select(.Description == $p + $s or
      (.Description | startswith($p + ", owner ") and endswith($s))) | .ID')" ||
    { log "listing the floating IPs failed"; ids=""; }
  if [[ -n "$ids" ]]; then
    log "sweeping floating IPs" $ids
    # shellcheck disable=SC2086 # one argument per ID
    openstack floating ip delete $ids || true
  fi
  ids="$(openstack port list --tags "kube-vip.extensions.gardener.cloud,kube-vip-cluster=${NAME}" -f value -c ID)" ||
    { log "listing the tagged ports failed"; ids=""; }
  if [[ -n "$ids" ]]; then
    log "sweeping ports" $ids
    # shellcheck disable=SC2086 # one argument per ID
    openstack port delete $ids || true
  fi
  if [[ -f "$STATE/node-ports" ]]; then
    ids="$(awk '{print $2}' "$STATE/node-ports")"
    log "deleting the nodes' Neutron ports" $ids
    # shellcheck disable=SC2086 # one argument per ID
    [[ -z "$ids" ]] || openstack port delete $ids || true
  fi
  openstack security group delete "${NAME}-nodes" 2>/dev/null || true
  rm -f "$STATE/node-ports" "$STATE/cloudprovider.json" "$STATE/infrastructure-status.json"
}

case "${1:-}" in
  up) up ;;
  test) test_exposure ;;
  logs) logs ;;
  down) down ;;
  openstack-up) shift; openstack_up "$@" ;;
  openstack-down) openstack_down ;;
  kubelet-flags) kubelet_flags "$2" ;;
  all)
    trap 'rc=$?; [[ $rc = 0 ]] || logs; down; exit $rc' EXIT
    up
    test_exposure
    ;;
  *) echo "usage: $0 up|test|logs|down|all|openstack-up NODE...|openstack-down|kubelet-flags IP" >&2; exit 2 ;;
esac
