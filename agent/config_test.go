// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	c := DefaultConfig()
	c.NodeName = "node-1"
	c.VIP = "198.18.0.100"
	return c
}

func TestDefaultsAreValid(t *testing.T) {
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
}

func TestValidateExplainsEveryProblem(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"no node name":                    {func(c *Config) { c.NodeName = "" }, "--node-name is required"},
		"bad vip":                         {func(c *Config) { c.VIP = "198.18.0.300" }, `--vip "198.18.0.300" is not an IP address`},
		"loopback vip":                    {func(c *Config) { c.VIP = "127.0.0.1" }, "must be a unicast address"},
		"empty vip":                       {func(c *Config) { c.VIP = "" }, `--vip "" is not an IP address`},
		"two ipv4 vips":                   {func(c *Config) { c.VIP = "198.18.0.200,198.18.0.201" }, `--vip "198.18.0.200,198.18.0.201" has 2 IPv4 addresses: at most one per family`},
		"two ipv6 vips":                   {func(c *Config) { c.VIP = "2001:2:0:10::c8,198.18.0.200,2001:2:0:10::c9" }, "has 2 IPv6 addresses: at most one per family"},
		"bad second vip":                  {func(c *Config) { c.VIP = "198.18.0.200,2001:2::10::c8" }, `--vip "2001:2::10::c8" is not an IP address`},
		"empty vip entry":                 {func(c *Config) { c.VIP = "198.18.0.200," }, `--vip "198.18.0.200," has an empty entry`},
		"multicast ipv6 vip":              {func(c *Config) { c.VIP = "198.18.0.200,ff02::1" }, "--vip ff02::1 must be a unicast address"},
		"vip with a zone":                 {func(c *Config) { c.VIP = "fe80::1%eth0" }, "must not carry a zone"},
		"ipv4-mapped vip":                 {func(c *Config) { c.VIP = "::ffff:198.18.0.200" }, "IPv4-mapped"},
		"timings out of order":            {func(c *Config) { c.RenewDeadline = 2 * time.Second }, "--lease-duration (1.47s) must exceed the renew deadline (2s)"},
		"fractional lifetime":             {func(c *Config) { c.VIPLifetime = 1500 * time.Millisecond }, "whole number of seconds"},
		"lifetime too short for renewals": {func(c *Config) { c.VIPLifetime, c.RetryPeriod = time.Second, 1300*time.Millisecond }, "--retry-period (1.3s) must be at most 1.25s"},
		"http url":                        {func(c *Config) { c.APIServerURL = "http://127.0.0.1:6443" }, "must be an https URL"},
		"zero threshold":                  {func(c *Config) { c.HealthFailureThreshold = 0 }, "--health-failure-threshold at least 1"},
		"tiny arp interval":               {func(c *Config) { c.ARPInterval = time.Millisecond }, "--arp-interval"},
		"etcd metrics url not http":       {func(c *Config) { c.EtcdMetricsURL = "127.0.0.1:2381" }, `--etcd-metrics-url "127.0.0.1:2381" must be an http(s) URL`},
		"etcd check period too short":     {func(c *Config) { c.EtcdCheckPeriod = 100 * time.Millisecond }, "--etcd-check-period (100ms) must be at least 1s"},
	} {
		t.Run(name, func(t *testing.T) {
			c := validConfig()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// --vip takes one address, as before, or one per family in either order; the agent holds
// them IPv4 first.
func TestVIPsOnePerFamily(t *testing.T) {
	for value, want := range map[string][]netip.Addr{
		"198.18.0.200":                  {netip.MustParseAddr("198.18.0.200")},
		"2001:2:0:10::c8":               {netip.MustParseAddr("2001:2:0:10::c8")},
		"198.18.0.200,2001:2:0:10::c8":  {netip.MustParseAddr("198.18.0.200"), netip.MustParseAddr("2001:2:0:10::c8")},
		"2001:2:0:10::c8, 198.18.0.200": {netip.MustParseAddr("198.18.0.200"), netip.MustParseAddr("2001:2:0:10::c8")},
	} {
		c := validConfig()
		c.VIP = value
		if err := c.Validate(); err != nil {
			t.Errorf("Validate() with --vip=%s = %v, want nil", value, err)
		}
		if got := c.VIPs(); !slices.Equal(got, want) {
			t.Errorf("VIPs() with --vip=%s = %v, want %v", value, got, want)
		}
	}
}

func TestReadyzURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://127.0.0.1:6443":  "https://127.0.0.1:6443/readyz",
		"https://127.0.0.1:6443/": "https://127.0.0.1:6443/readyz",
	} {
		if got := readyzURL(in); got != want {
			t.Errorf("readyzURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// An empty --etcd-metrics-url turns the etcd-leader yield off; its period then does not
// matter.
func TestEmptyEtcdMetricsURLIsValid(t *testing.T) {
	c := validConfig()
	c.EtcdMetricsURL, c.EtcdCheckPeriod = "", 0
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
}
