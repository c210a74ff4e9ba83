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
	"time"
)

// Config is the agent's configuration, filled from flags.
type Config struct {
	// NodeName is the identity in the Lease.
	NodeName string
	// VIP is the virtual IP.
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
	// Kubeconfig, when set, replaces the service-account token and CA.
	Kubeconfig string
	// TokenFile and CAFile are the service-account credentials.
	TokenFile, CAFile string
	// HealthPeriod, HealthTimeout and HealthFailureThreshold configure the /readyz probe.
	HealthPeriod, HealthTimeout time.Duration
	HealthFailureThreshold      int
	// MetricsAddress serves /metrics, /healthz and /readyz.
	MetricsAddress string
}

// DefaultConfig returns the defaults documented in docs/design.md.
func DefaultConfig() Config {
	return Config{
		LeaseName:              "kube-vip-agent",
		LeaseNamespace:         "kube-system",
		LeaseDuration:          1500 * time.Millisecond,
		RenewDeadline:          1300 * time.Millisecond,
		RetryPeriod:            900 * time.Millisecond,
		VIPLifetime:            time.Second,
		ARPInterval:            5 * time.Second,
		APIServerURL:           "https://127.0.0.1:6443",
		APIServerServerName:    "kubernetes.default.svc",
		TokenFile:              "/var/run/secrets/kubernetes.io/serviceaccount/token",
		CAFile:                 "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
		HealthPeriod:           250 * time.Millisecond,
		HealthTimeout:          500 * time.Millisecond,
		HealthFailureThreshold: 2,
		MetricsAddress:         "127.0.0.1:9482",
	}
}

// minRefreshWindow is the least time a leader must have, after the start of a renewal, to
// refresh the VIP's lifetime within its term.
const minRefreshWindow = 100 * time.Millisecond

// Validate checks the configuration and explains every problem it finds.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.NodeName == "" {
		add("--node-name is required (the DaemonSet passes spec.nodeName)")
	}
	if vip, err := netip.ParseAddr(c.VIP); err != nil {
		add("--vip %q is not an IP address", c.VIP)
	} else if vip.IsUnspecified() || vip.IsLoopback() || vip.IsMulticast() {
		add("--vip %s must be a unicast address", c.VIP)
	}
	if c.LeaseName == "" || c.LeaseNamespace == "" {
		add("--lease-name and --lease-namespace must not be empty")
	}
	if c.RetryPeriod <= 0 || c.RenewDeadline <= c.RetryPeriod || c.LeaseDuration <= c.RenewDeadline {
		add("need 0 < --retry-period (%s) < --renew-deadline (%s) < --lease-duration (%s)",
			c.RetryPeriod, c.RenewDeadline, c.LeaseDuration)
	}
	if c.VIPLifetime < time.Second || c.VIPLifetime%time.Second != 0 {
		add("--vip-lifetime (%s) must be a whole number of seconds, at least 1s", c.VIPLifetime)
	} else if c.RenewDeadline-c.VIPLifetime-lifetimeSlack < minRefreshWindow {
		add("--renew-deadline (%s) must exceed --vip-lifetime (%s) by at least %s, so that the leader can refresh the VIP within its term",
			c.RenewDeadline, c.VIPLifetime, lifetimeSlack+minRefreshWindow)
	}
	if c.ARPInterval < 100*time.Millisecond {
		add("--arp-interval (%s) must be at least 100ms", c.ARPInterval)
	}
	if u, err := url.Parse(c.APIServerURL); err != nil || u.Scheme != "https" || u.Host == "" {
		add("--apiserver-url %q must be an https URL", c.APIServerURL)
	}
	if c.HealthPeriod <= 0 || c.HealthTimeout <= 0 || c.HealthFailureThreshold < 1 {
		add("--health-period and --health-timeout must be positive and --health-failure-threshold at least 1")
	}
	if c.MetricsAddress == "" {
		add("--metrics-address must not be empty")
	}
	return errors.Join(errs...)
}
