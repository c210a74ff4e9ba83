// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package monitoring holds the alerts of docs/operations.md, so that the controller deploys
// the same rules that the manifest ships.
package monitoring

import _ "embed"

// PrometheusRule is prometheusrule.yaml: a monitoring.coreos.com/v1 PrometheusRule.
//
//go:embed prometheusrule.yaml
var PrometheusRule []byte
