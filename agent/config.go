// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package agent is kube-vip-agent: it runs on every control-plane node, takes part in the
// Lease election, and while it leads holds the VIP on the node's interface and announces
// it. It gives the VIP up the moment it stops leading, its local kube-apiserver turns
// unhealthy, its interface goes down, or it is told to stop.
package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// Config is the agent's configuration, filled from flags.
type Config struct {
	// NodeName is the identity in the Lease.
	NodeName string
	// VIP is the virtual IP, or one virtual IP per family separated by a comma (at most one
	// IPv4 and one IPv6 address): the agent holds them all on the same node (see VIPs).
	VIP string
	// Interface carries the VIP; empty means detect it.
	Interface string
	// LeaseName and LeaseNamespace name the Lease.
	LeaseName, LeaseNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod are the election timings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// VIPLifetime is the kernel valid_lft of the VIP, a whole number of seconds.
	VIPLifetime time.Duration
	// ARPInterval is the gratuitous ARP refresh interval after the takeover burst.
	ARPInterval time.Duration
	// APIServerURL is the node's local kube-apiserver.
	APIServerURL string
	// APIServerServerName is the TLS server name used for it.
	APIServerServerName string
	// PeerAPIServerURLs are kube-apiservers to try besides those the agent finds at run time
	// in the `kubernetes` EndpointSlice (same CA, same credentials, APIServerServerName as
	// the TLS name). A leader whose local kube-apiserver died releases the Lease through
	// one of them.
	PeerAPIServerURLs []string
	// Kubeconfig, when set, replaces the service-account token and CA.
	Kubeconfig string
	// TokenFile and CAFile are the service-account credentials.
	TokenFile, CAFile string
	// HealthPeriod, HealthTimeout and HealthFailureThreshold configure the /readyz probe.
	HealthPeriod, HealthTimeout time.Duration
	HealthFailureThreshold      int
	// UnreadyHold is how long the holder keeps the VIP after its kube-apiserver stopped
	// being ready without refusing connections (health.Config.UnreadyHold).
	UnreadyHold time.Duration
	// EtcdMetricsURL is the local etcd member's metrics URL (plain HTTP, no credentials);
	// empty turns the etcd-leader yield off. A node whose etcd member leads leaves the VIP
	// to another node that can take it (election.Config.Yield).
	EtcdMetricsURL string
	// EtcdCheckPeriod is the interval of the reads of EtcdMetricsURL.
	EtcdCheckPeriod time.Duration
	// MetricsAddress serves /metrics, /healthz and /readyz.
	MetricsAddress string
}

// DefaultConfig returns the defaults documented in docs/design.md.
func DefaultConfig() Config {
	t := timing.Defaults()
	return Config{
		LeaseName:              "kube-vip-agent",
		LeaseNamespace:         "kube-system",
		LeaseDuration:          t.LeaseDuration,
		RenewDeadline:          t.RenewDeadline,
		RetryPeriod:            t.RetryPeriod,
		VIPLifetime:            t.VIPLifetime,
		ARPInterval:            5 * time.Second,
		APIServerURL:           "https://127.0.0.1:6443",
		APIServerServerName:    "kubernetes.default.svc",
		TokenFile:              "/var/run/secrets/kubernetes.io/serviceaccount/token",
		CAFile:                 "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
		HealthPeriod:           time.Second,
		HealthTimeout:          500 * time.Millisecond,
		HealthFailureThreshold: 3,
		UnreadyHold:            5 * time.Second,
		EtcdMetricsURL:         "http://127.0.0.1:2381/metrics",
		EtcdCheckPeriod:        20 * time.Second,
		MetricsAddress:         "127.0.0.1:9482",
	}
}

func (c *Config) timings() timing.Timings {
	return timing.Timings{LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline,
		RetryPeriod: c.RetryPeriod, VIPLifetime: c.VIPLifetime}
}

// kebab turns a timing's field name into its flag name (renewDeadline → renew-deadline).
func kebab(f timing.Field) string {
	var b strings.Builder
	for _, r := range string(f) {
		if unicode.IsUpper(r) {
			b.WriteByte('-')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// VIPs returns the configured virtual IPs, IPv4 first; nil if --vip is not valid.
func (c *Config) VIPs() []netip.Addr {
	vips, _ := ParseVIPs(c.VIP)
	return vips
}

// ParseVIPs parses the value of --vip: one unicast address, or one per family separated by
// a comma. It returns them IPv4 first, so that the first names the exposure the same way
// whichever order the flag gave.
func ParseVIPs(value string) ([]netip.Addr, error) {
	var v4, v6 []netip.Addr
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		vip, err := netip.ParseAddr(entry)
		switch {
		case entry == "" && value != "":
			return nil, fmt.Errorf("--vip %q has an empty entry: give one address, or one per family separated by a comma", value)
		case err != nil:
			return nil, fmt.Errorf("--vip %q is not an IP address", entry)
		case vip.Zone() != "":
			return nil, fmt.Errorf("--vip %s must not carry a zone", entry)
		case vip.Is4In6():
			return nil, fmt.Errorf("--vip %s is an IPv4-mapped IPv6 address: write the IPv4 address as such", entry)
		case vip.IsUnspecified() || vip.IsLoopback() || vip.IsMulticast():
			return nil, fmt.Errorf("--vip %s must be a unicast address", entry)
		case vip.Is4():
			v4 = append(v4, vip)
		default:
			v6 = append(v6, vip)
		}
	}
	if len(v4) > 1 {
		return nil, fmt.Errorf("--vip %q has %d IPv4 addresses: at most one per family", value, len(v4))
	}
	if len(v6) > 1 {
		return nil, fmt.Errorf("--vip %q has %d IPv6 addresses: at most one per family", value, len(v6))
	}
	return append(v4, v6...), nil
}

// Validate checks the configuration and explains every problem it finds.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.NodeName == "" {
		add("--node-name is required (the DaemonSet passes spec.nodeName)")
	}
	if _, err := ParseVIPs(c.VIP); err != nil {
		errs = append(errs, err)
	}
	if c.LeaseName == "" || c.LeaseNamespace == "" {
		add("--lease-name and --lease-namespace must not be empty")
	}
	for _, p := range c.timings().Problems() {
		add("--%s (%s) %s", kebab(p.Field), p.Value, p.Message)
	}
	if c.ARPInterval < 100*time.Millisecond {
		add("--arp-interval (%s) must be at least 100ms", c.ARPInterval)
	}
	if u, err := url.Parse(c.APIServerURL); err != nil || u.Scheme != "https" || u.Host == "" {
		add("--apiserver-url %q must be an https URL", c.APIServerURL)
	}
	for _, peer := range c.PeerAPIServerURLs {
		if u, err := url.Parse(peer); err != nil || u.Scheme != "https" || u.Host == "" {
			add("--peer-apiserver-urls: %q must be an https URL", peer)
		}
	}
	if c.HealthPeriod <= 0 || c.HealthTimeout <= 0 || c.HealthFailureThreshold < 1 {
		add("--health-period and --health-timeout must be positive and --health-failure-threshold at least 1")
	}
	if c.UnreadyHold < 0 {
		add("--unready-hold (%s) must not be negative", c.UnreadyHold)
	}
	if c.EtcdMetricsURL != "" {
		if u, err := url.Parse(c.EtcdMetricsURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("--etcd-metrics-url %q must be an http(s) URL, or empty to turn the etcd-leader yield off", c.EtcdMetricsURL)
		}
		if c.EtcdCheckPeriod < time.Second {
			add("--etcd-check-period (%s) must be at least 1s", c.EtcdCheckPeriod)
		}
	}
	if c.MetricsAddress == "" {
		add("--metrics-address must not be empty")
	}
	return errors.Join(errs...)
}
