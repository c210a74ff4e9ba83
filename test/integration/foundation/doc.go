// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package foundation checks the real parts that every other integration test builds on:
// kube-apiserver and etcd with Gardener's CRDs, the Gardener objects of test/framework,
// Keystone and Neutron of hack/openstack.sh, and network namespaces.
package foundation
