// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package framework holds the helpers that the tests under test/ share: a real
// kube-apiserver and etcd through envtest (StartControlPlane), the Gardener objects an
// extension expects in a self-hosted shoot (Bootstrap), the local Keystone and Neutron of
// hack/openstack.sh (OpenStack), and guards for tests that need root (RequireRoot).
//
// A test that needs a real component and cannot get it fails when the environment variable
// CI is set and is skipped otherwise, with the command that provides the component.
package framework
