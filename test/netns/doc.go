// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package netns builds a small LAN out of Linux network namespaces for the tests and the
// benchmark: a bridge in its own namespace, N node namespaces and one client namespace,
// each attached by a veth pair, addresses from 198.18.0.0/15 and no route out of the LAN.
//
// On request every node also runs a self-hosted control plane: an etcd member (the members
// form one cluster) and a kube-apiserver listening on 0.0.0.0:6443 (Options.APIServerPort) inside the node's
// namespace, so the VIP reaches it once the VIP sits on that node.
//
// Around it the package offers what VIP failover tests observe: processes per node (in
// their own process group, signalled as a group), link and address operations, the set of
// nodes that hold the VIP (one-off and sampled every few milliseconds), an ARP capture on
// the bridge, and a bounded prober that connects from the client to the VIP and records
// outage windows.
//
// The harness needs root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN) and iproute2. Close
// removes every namespace and stops every process it started, also after a failure.
package netns
