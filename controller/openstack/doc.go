// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package openstack is the extension's access to OpenStack: the credentials read from the
// cloudprovider Secret, a factory of authenticated Neutron clients that caches them per
// credentials, an instrumented HTTP transport that counts and times every call, idempotent
// Neutron operations for the virtual IP, and the classification of OpenStack errors into
// Gardener error codes.
package openstack
