// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 holds the provider-specific API of the kube-vip exposure extension:
// ExposureConfig, read from the SelfHostedShootExposure's providerConfig (or the shoot's
// control-plane exposure), and ExposureStatus, written to its status.providerStatus.
//
// +k8s:deepcopy-gen=package
// +groupName=kube-vip.extensions.gardener.cloud
package v1alpha1
