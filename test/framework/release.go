// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

// PreviousRelease is the commit of the last landed release, whose agent the version-skew
// test rolls from (a branch name such as main would name this very tree once it lands).
// Move it forward when a release lands.
const PreviousRelease = "dc76af36adbfe2abe22235045fe94125b4e63627"
