// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package e2e runs the extension as an operator installs it on the real cluster of
// test/nodes (kubelets and containerd in node namespaces, the DaemonSet controller of
// kube-controller-manager): the controller is a pod from its chart, rendered through
// gardener's chartrenderer with the values of a self-hosted shoot, and it talks to the
// local Keystone + Neutron (hack/openstack.sh) through a forwarder on each node's loopback.
// The install is test/extension's, which `make demo` shares. The exposure it reconciles
// deploys the agents as a DaemonSet. Each scenario is its own test; a client in its own
// namespace connects to the VIP every 10 ms and the longest outage is checked against the
// bounds that follow from the agent's documented timings (docs/agent.md).
//
// The tests need root, containerd and runc (hack/install-deps.sh) and the local OpenStack,
// and run with `make e2e`.
package e2e
