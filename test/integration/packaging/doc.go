// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package packaging tests the extension's packaging: the Helm chart rendered through
// gardener's chart renderer and applied to a real kube-apiserver (server-side dry run, and
// for real to check its RBAC by impersonating the controller), the registration manifests
// decoded strictly with gardener's own types, the generated ControllerRegistration against
// the chart, the Dockerfiles against the Go packages of the binaries, and hack/e2e/e2e.sh's
// OpenStack steps against the local Keystone + Neutron.
package packaging
