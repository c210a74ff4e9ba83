// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command gardener-extension-kube-vip runs the controller of the kube-vip exposure extension:
// it serves SelfHostedShootExposure resources of type kube-vip in a self-hosted shoot.
package main

import (
	"os"

	"github.com/gardener/gardener/cmd/utils"
	"github.com/gardener/gardener/pkg/logger"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/gardener/gardener-extension-kube-vip/cmd/gardener-extension-kube-vip/app"
)

// version is set at build time with -ldflags "-X main.version=…" (VERSION).
var version = "dev"

func main() {
	utils.DeduplicateWarnings()
	// Replaced by the logger of --log-level/--log-format once the flags are parsed.
	logf.SetLogger(logger.MustNewZapLogger(logger.InfoLevel, logger.FormatJSON))

	cmd := app.NewControllerManagerCommand(signals.SetupSignalHandler())
	// cobra adds --version, which prints this and exits.
	cmd.Version = version
	if err := cmd.Execute(); err != nil {
		logf.Log.Error(err, "Error executing the main controller command")
		os.Exit(1)
	}
}
