// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gardener/gardener-extension-kube-vip/agent"
)

func TestEnvironmentFallbackAndFlagPrecedence(t *testing.T) {
	cfg := agent.DefaultConfig()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	var level string
	var version bool
	bindFlags(fs, &cfg, &level, &version)
	if err := fs.Parse([]string{"--vip=198.18.0.100"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"KUBE_VIP_VIP":            "198.18.0.200", // the flag wins
		"KUBE_VIP_NODE_NAME":      "node-a",
		"KUBE_VIP_LEASE_DURATION": "3s",
	}
	if err := applyEnv(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if cfg.VIP != "198.18.0.100" || cfg.NodeName != "node-a" || cfg.LeaseDuration != 3*time.Second {
		t.Fatalf("got vip=%s node=%s lease=%s", cfg.VIP, cfg.NodeName, cfg.LeaseDuration)
	}
}

func TestBadEnvironmentValueIsAnError(t *testing.T) {
	cfg := agent.DefaultConfig()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	var level string
	var version bool
	bindFlags(fs, &cfg, &level, &version)
	_ = fs.Parse(nil)
	err := applyEnv(fs, func(k string) (string, bool) { return "soon", k == "KUBE_VIP_RETRY_PERIOD" })
	if err == nil {
		t.Fatal("a malformed KUBE_VIP_RETRY_PERIOD was accepted")
	}
}

func TestRunRejectsInvalidConfiguration(t *testing.T) {
	if code := run([]string{"--vip=not-an-ip", "--node-name=n"}); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if code := run([]string{"--version"}); code != 0 {
		t.Fatalf("--version exit code %d, want 0", code)
	}
}
