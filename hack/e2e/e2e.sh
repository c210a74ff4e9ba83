#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# End-to-end test of the kube-vip exposure extension against a real OpenStack (devstack with
# ML2/OVN or ML2/OVS) and a kind cluster standing in for the self-hosted shoot.
#
# It cannot run on the development machine of this project (no Docker engine, no devstack);
# it is meant for a host with Docker, kind, kubectl, helm, the `openstack` CLI and a
# devstack on the same host (the CI workflow .github/workflows/e2e.yaml runs it on a
# self-hosted runner).
#
#   hack/e2e/e2e.sh up      # kind cluster, images, fake-VM NIC on the Neutron network, chart, Gardener objects
#   hack/e2e/e2e.sh test    # SelfHostedShootExposure -> floating IP -> https://FIP:6443/readyz; then deletion
#   hack/e2e/e2e.sh down    # removes everything `up` created (also after failures)
#   hack/e2e/e2e.sh all     # up, test, down (down also when up or test fail)
#
# Input (environment): the devstack credentials as the `openstack` CLI takes them
# (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME, OS_USER_DOMAIN_NAME,
# OS_PROJECT_DOMAIN_NAME, OS_REGION_NAME; e.g. `source devstack/openrc demo demo`), and:
#   E2E_NETWORK          tenant network of the "control-plane node"  (default: private)
#   E2E_SUBNET           its subnet                                   (default: private-subnet)
#   E2E_ROUTER           router between it and the external network   (default: router1)
#   E2E_FLOATING_POOL    external network for floating IPs            (default: public)
#   E2E_OVS_BRIDGE       integration bridge of the devstack host      (default: br-int)
#   E2E_NAME             name prefix of everything created            (default: kube-vip-e2e)
#   E2E_TIMEOUT          seconds to wait for ingress and readyz       (default: 300)
#   E2E_BINDING_OPENRC   optional: a file to source (in a subshell) for credentials that may
#                        bind a port to a host, as Nova's service user does on a real cloud.
#
# Everything the extension and this script do runs with the project (non-admin)
# credentials: the node port is created without `--host`, because `binding:host_id` is
# admin-only in Neutron's default policy. ML2/OVN claims the unbound port for the chassis
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
STATE="${REPO_ROOT}/.local/e2e"
KUBECONFIG_FILE="${STATE}/kubeconfig"
NODE="${NAME}-control-plane"
NIC="kvnic0"
TAG="e2e-$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo dev)"
CONTROLLER_IMAGE="localhost/gardener-extension-kube-vip:${TAG}"
AGENT_IMAGE="localhost/kube-vip-agent:${TAG}"
RELEASE_NAMESPACE="extension-kube-vip"

log() { echo "[e2e] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
kc() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }
need() { for c in "$@"; do command -v "$c" >/dev/null || die "$c is required"; done; }

gardener_dir() { (cd "$REPO_ROOT" && go list -m -f '{{.Dir}}' github.com/gardener/gardener); }

up() {
  need docker kind kubectl helm openstack go ovs-vsctl jq
  [[ -n "${OS_AUTH_URL:-}" ]] || die "source the devstack credentials first (OS_AUTH_URL is empty)"
  mkdir -p "$STATE"

  log "kind cluster ${NAME}"
  if ! kind get clusters | grep -qx "$NAME"; then
    kind create cluster --name "$NAME" --kubeconfig "$KUBECONFIG_FILE" --wait 120s
  fi
  kc label node "$NODE" node-role.kubernetes.io/control-plane= --overwrite

  log "images"
  docker build -f "$REPO_ROOT/Dockerfile.controller" -t "$CONTROLLER_IMAGE" "$REPO_ROOT"
  docker build -f "$REPO_ROOT/Dockerfile.agent" --build-arg VERSION="$TAG" -t "$AGENT_IMAGE" "$REPO_ROOT"
  kind load docker-image --name "$NAME" "$CONTROLLER_IMAGE" "$AGENT_IMAGE"

  plug_node
  install_gardener_objects

  log "extension chart"
  helm upgrade --install kube-vip "$REPO_ROOT/charts/gardener-extension-kube-vip" \
    --kubeconfig "$KUBECONFIG_FILE" --namespace "$RELEASE_NAMESPACE" --create-namespace \
    --set image.repository="${CONTROLLER_IMAGE%:*}" --set image.tag="$TAG" --set image.pullPolicy=Never \
    --set agentImage.repository="${AGENT_IMAGE%:*}" --set agentImage.tag="$TAG" \
    --set gardener.selfHostedShootCluster=true --set logLevel=debug --wait --timeout 5m
}

# plug_node gives the kind node a NIC on the Neutron network, the way devstack plugs a VM:
# a Neutron port of device_owner compute:nova bound to this host, an OVS internal interface
# on the integration bridge with iface-id = the port's ID and the port's MAC, moved into the
# kind node's network namespace with the port's fixed IP. For Neutron the node is then a VM
# on that network, so the VIP (an allowed address pair of this port) and its floating IP
# work as on a real cloud.
plug_node() {
  log "Neutron port for ${NODE}"
  local port_id mac ip prefix pid
  port_id="$(openstack port show "${NAME}-node" -f value -c id 2>/dev/null || true)"
  if [[ -z "$port_id" ]]; then
    port_id="$(openstack port create "${NAME}-node" --network "$NETWORK" --fixed-ip subnet="$SUBNET" \
      --device-owner compute:nova -f value -c id)"
  fi
  if [[ -n "${E2E_BINDING_OPENRC:-}" ]]; then
    log "binding the port to $(hostname) with the credentials of ${E2E_BINDING_OPENRC}"
    (set +u; source "$E2E_BINDING_OPENRC"; openstack port set --host "$(hostname)" "$port_id")
  fi
  mac="$(openstack port show "$port_id" -f json | jq -r .mac_address)"
  ip="$(openstack port show "$port_id" -f json | jq -r '.fixed_ips[0].ip_address')"
  prefix="$(openstack subnet show "$SUBNET" -f value -c cidr | cut -d/ -f2)"
  echo "$port_id" >"$STATE/node-port-id"

  pid="$(docker inspect -f '{{.State.Pid}}' "$NODE")"
  if ! nsenter -t "$pid" -n ip link show "$NIC" >/dev/null 2>&1; then
    sudo ovs-vsctl --may-exist add-port "$OVS_BRIDGE" "$NIC" -- set Interface "$NIC" type=internal \
      external-ids:iface-id="$port_id" external-ids:iface-status=active external-ids:attached-mac="$mac"
    sudo ip link set "$NIC" address "$mac"
    sudo ip link set "$NIC" netns "$pid"
    sudo nsenter -t "$pid" -n ip addr add "${ip}/${prefix}" dev "$NIC"
    sudo nsenter -t "$pid" -n ip link set "$NIC" up
  fi
  # The controller finds a control-plane node's Neutron port by the Node's InternalIP, so
  # make the kubelet report the port's address (kind's default is the Docker bridge's).
  docker exec "$NODE" sh -c "grep -q -- '--node-ip=${ip}' /var/lib/kubelet/kubeadm-flags.env || \
    sed -i 's|^KUBELET_KUBEADM_ARGS=\"|KUBELET_KUBEADM_ARGS=\"--node-ip=${ip} |' /var/lib/kubelet/kubeadm-flags.env"
  docker exec "$NODE" systemctl restart kubelet
  local deadline=$((SECONDS + 120))
  until kc get node "$NODE" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}' | grep -qw "$ip"; do
    (( SECONDS < deadline )) || die "node ${NODE} does not report InternalIP ${ip}"
    sleep 2
  done
  echo "$ip" >"$STATE/node-ip"
}

install_gardener_objects() {
  log "Gardener CRDs and objects"
  local crds
  crds="$(gardener_dir)/pkg/component/extensions/crds/assets"
  for kind in clusters infrastructures selfhostedshootexposures; do
    kc apply --server-side -f "${crds}/crd-extensions.gardener.cloud_${kind}.yaml"
  done
  kc wait --for condition=established --timeout 60s \
    crd/clusters.extensions.gardener.cloud crd/infrastructures.extensions.gardener.cloud \
    crd/selfhostedshootexposures.extensions.gardener.cloud

  local network_id subnet_id subnet_cidr router_id pool_id
  network_id="$(openstack network show "$NETWORK" -f value -c id)"
  subnet_id="$(openstack subnet show "$SUBNET" -f value -c id)"
  subnet_cidr="$(openstack subnet show "$SUBNET" -f value -c cidr)"
  router_id="$(openstack router show "$ROUTER" -f value -c id)"
  pool_id="$(openstack network show "$FLOATING_POOL" -f value -c id)"

  kc -n kube-system create secret generic cloudprovider --dry-run=client -o yaml \
    --from-literal=domainName="${OS_USER_DOMAIN_NAME:-Default}" \
    --from-literal=tenantName="$OS_PROJECT_NAME" \
    --from-literal=username="$OS_USERNAME" \
    --from-literal=password="$OS_PASSWORD" \
    --from-literal=authURL="$OS_AUTH_URL" | kc apply -f -

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
      kubernetes: {versions: [{version: 1.34.0}]}
      machineImages: []
      machineTypes: []
      regions: [{name: ${OS_REGION_NAME:-RegionOne}}]
  seed:
    apiVersion: core.gardener.cloud/v1beta1
    kind: Seed
    metadata: {name: ${NAME}}
    spec:
      provider: {type: openstack, region: ${OS_REGION_NAME:-RegionOne}}
      networks: {nodes: ${subnet_cidr}, pods: 10.244.0.0/16, services: 10.96.0.0/16}
  shoot:
    apiVersion: core.gardener.cloud/v1beta1
    kind: Shoot
    metadata: {name: ${NAME}, namespace: garden}
    spec:
      region: ${OS_REGION_NAME:-RegionOne}
      kubernetes: {version: 1.34.0}
      provider:
        type: openstack
        workers:
        - name: control-plane
          minimum: 1
          maximum: 1
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
  kc -n kube-system patch infrastructure "$NAME" --subresource=status --type=merge -p "$(cat <<JSON
{"status":{"providerStatus":{
  "apiVersion":"openstack.provider.extensions.gardener.cloud/v1alpha1","kind":"InfrastructureStatus",
  "networks":{"id":"${network_id}","floatingPool":{"id":"${pool_id}","name":"${FLOATING_POOL}"},
    "router":{"id":"${router_id}"},
    "subnets":[{"purpose":"nodes","id":"${subnet_id}","cidr":"${subnet_cidr}"}]},
  "securityGroups":[]}}}
JSON
)"
}

test_exposure() {
  need kubectl curl jq
  local ip
  ip="$(cat "$STATE/node-ip")"
  log "SelfHostedShootExposure"
  kc apply -f - <<YAML
apiVersion: extensions.gardener.cloud/v1alpha1
kind: SelfHostedShootExposure
metadata: {name: ${NAME}, namespace: kube-system}
spec:
  type: kube-vip
  port: 6443
  credentialsRef: {apiVersion: v1, kind: Secret, name: cloudprovider, namespace: kube-system}
  endpoints:
  - nodeName: ${NODE}
    addresses: [{type: InternalIP, address: ${ip}}]
YAML

  log "waiting for status.ingress"
  local fip="" deadline=$((SECONDS + TIMEOUT))
  while [[ -z "$fip" ]]; do
    (( SECONDS < deadline )) || { kc -n kube-system get selfhostedshootexposure "$NAME" -o yaml; die "no ingress within ${TIMEOUT}s"; }
    fip="$(kc -n kube-system get selfhostedshootexposure "$NAME" -o jsonpath='{.status.ingress[0].ip}' 2>/dev/null || true)"
    sleep 3
  done
  log "ingress ${fip}; probing https://${fip}:6443/readyz"
  until [[ "$(curl -ks --max-time 3 "https://${fip}:6443/readyz" || true)" == "ok" ]]; do
    (( SECONDS < deadline )) || { kc -n kube-system get pods -l app.kubernetes.io/name=kube-vip-agent -o wide; die "https://${fip}:6443/readyz does not answer ok"; }
    sleep 2
  done
  log "the kube-apiserver answers on the floating IP"

  log "deleting the exposure"
  kc -n kube-system delete selfhostedshootexposure "$NAME" --wait --timeout "${TIMEOUT}s"
  if openstack floating ip show "$fip" >/dev/null 2>&1; then
    die "floating IP ${fip} still exists after deletion"
  fi
  log "PASS"
}

down() {
  log "cleaning up"
  if [[ -f "$KUBECONFIG_FILE" ]] && kind get clusters 2>/dev/null | grep -qx "$NAME"; then
    kc -n kube-system delete selfhostedshootexposure "$NAME" --ignore-not-found --wait --timeout "${TIMEOUT}s" || \
      log "exposure deletion did not finish; Neutron resources tagged by the extension may remain"
    helm uninstall kube-vip --kubeconfig "$KUBECONFIG_FILE" --namespace "$RELEASE_NAMESPACE" --wait || true
  fi
  kind delete cluster --name "$NAME" || true
  sudo ovs-vsctl --if-exists del-port "$OVS_BRIDGE" "$NIC" || true
  if [[ -f "$STATE/node-port-id" ]]; then
    openstack port delete "$(cat "$STATE/node-port-id")" || true
  fi
  rm -rf "$STATE"
}

case "${1:-}" in
  up) up ;;
  test) test_exposure ;;
  down) down ;;
  all)
    trap down EXIT
    up
    test_exposure
    ;;
  *) echo "usage: $0 up|test|down|all" >&2; exit 2 ;;
esac
