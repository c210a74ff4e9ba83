// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command kube-vip-agent holds the virtual IP of a self-hosted shoot's kube-apiserver on
// the control-plane node that leads the Lease election. See package agent.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"

	"github.com/gardener/gardener-extension-kube-vip/agent"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg := agent.DefaultConfig()
	fs := pflag.NewFlagSet("kube-vip-agent", pflag.ContinueOnError)
	var logLevel string
	var showVersion bool
	bindFlags(fs, &cfg, &logLevel, &showVersion)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "kube-vip-agent holds the kube-apiserver's virtual IP on the control-plane node that leads the Lease election.\n\n")
		fmt.Fprintf(os.Stderr, "Every flag can also be set through the environment as KUBE_VIP_<FLAG> (for example KUBE_VIP_NODE_NAME); flags win.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := applyEnv(fs, os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if showVersion {
		fmt.Println(version)
		return 0
	}
	log, err := newLogger(logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "invalid configuration:\n%s\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	klog.SetLogger(log) // client-go logs through the same structured logger
	log.Info("Starting kube-vip-agent", "version", version)
	if err := agent.Run(ctx, log, cfg); err != nil {
		log.Error(err, "Agent failed")
		return 1
	}
	return 0
}

func bindFlags(fs *pflag.FlagSet, cfg *agent.Config, logLevel *string, showVersion *bool) {
	fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "Name of this node; the identity in the Lease (from the downward API).")
	fs.StringVar(&cfg.VIP, "vip", cfg.VIP, "The virtual IP (IPv4 or IPv6), or one per family separated by a comma (198.18.0.200,2001:2::c8): the node that leads holds them all.")
	fs.StringVar(&cfg.Interface, "interface", cfg.Interface, "Interface for the VIP. Empty: the one with an address in the VIP's subnet, else the one of the default route.")
	fs.StringVar(&cfg.LeaseName, "lease-name", cfg.LeaseName, "Name of the Lease.")
	fs.StringVar(&cfg.LeaseNamespace, "lease-namespace", cfg.LeaseNamespace, "Namespace of the Lease.")
	fs.DurationVar(&cfg.LeaseDuration, "lease-duration", cfg.LeaseDuration, "Followers take over this long after the last renewal they saw.")
	fs.DurationVar(&cfg.RenewDeadline, "renew-deadline", cfg.RenewDeadline, "The leader drops the VIP this long after the start of its last successful renewal.")
	fs.DurationVar(&cfg.RetryPeriod, "retry-period", cfg.RetryPeriod, "Interval of the leader's renewals.")
	fs.DurationVar(&cfg.VIPLifetime, "vip-lifetime", cfg.VIPLifetime, "Kernel lifetime (valid_lft) of the VIP, whole seconds; refreshed while leading, so a dead agent's VIP vanishes by itself.")
	fs.DurationVar(&cfg.ARPInterval, "arp-interval", cfg.ARPInterval, "Gratuitous ARP refresh interval after the takeover burst.")
	fs.StringVar(&cfg.APIServerURL, "apiserver-url", cfg.APIServerURL, "URL of this node's local kube-apiserver.")
	fs.StringVar(&cfg.APIServerServerName, "apiserver-server-name", cfg.APIServerServerName, "TLS server name for the local kube-apiserver.")
	fs.StringSliceVar(&cfg.PeerAPIServerURLs, "peer-apiserver-urls", cfg.PeerAPIServerURLs, "Kube-apiservers to try besides the other control-plane nodes' that the agent reads from the kubernetes EndpointSlice in default (comma-separated https URLs; same CA and credentials, --apiserver-server-name as the TLS name). A leader whose local kube-apiserver died releases the Lease through one of them, so that a follower takes over at once.")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", cfg.Kubeconfig, "Kubeconfig to use instead of the service-account token and CA (tests).")
	fs.StringVar(&cfg.TokenFile, "token-file", cfg.TokenFile, "Service-account token file.")
	fs.StringVar(&cfg.CAFile, "ca-file", cfg.CAFile, "CA bundle of the kube-apiserver.")
	fs.DurationVar(&cfg.HealthPeriod, "health-period", cfg.HealthPeriod, "Interval of the /readyz probes of the local kube-apiserver.")
	fs.DurationVar(&cfg.HealthTimeout, "health-timeout", cfg.HealthTimeout, "Timeout of one probe.")
	fs.IntVar(&cfg.HealthFailureThreshold, "health-failure-threshold", cfg.HealthFailureThreshold, "Consecutive failed probes after which the node gives up the VIP.")
	fs.DurationVar(&cfg.UnreadyHold, "unready-hold", cfg.UnreadyHold, "How long the VIP holder keeps the VIP after its kube-apiserver stopped being ready without refusing connections (0: give it up at once).")
	fs.StringVar(&cfg.EtcdMetricsURL, "etcd-metrics-url", cfg.EtcdMetricsURL, "Metrics URL of this node's etcd member (plain HTTP, no credentials; gardenadm's etcd serves it on localhost:2381). While that member leads the etcd cluster, this node leaves the VIP to another node that can take it. Empty: off.")
	fs.DurationVar(&cfg.EtcdCheckPeriod, "etcd-check-period", cfg.EtcdCheckPeriod, "Interval of the reads of --etcd-metrics-url (one more read 5s after one that found the member leading).")
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", cfg.MetricsAddress, "Address for /metrics, /healthz and /readyz.")
	fs.StringVar(logLevel, "log-level", "info", "Log level: debug, info or error.")
	fs.BoolVar(showVersion, "version", false, "Print the version and exit.")
}

// applyEnv sets every flag that was not given on the command line from KUBE_VIP_<FLAG>.
func applyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := "KUBE_VIP_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookup(name); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment %s=%q: %w", name, v, serr)
			}
		}
	})
	return err
}

func newLogger(level string) (logr.Logger, error) {
	var lvl zapcore.Level
	switch level {
	case "debug":
		lvl = zapcore.DebugLevel
	case "info", "":
		lvl = zapcore.InfoLevel
	case "error":
		lvl = zapcore.ErrorLevel
	default:
		return logr.Logger{}, fmt.Errorf("--log-level %q: want debug, info or error", level)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	zc.Sampling = nil
	z, err := zc.Build()
	if err != nil {
		return logr.Logger{}, err
	}
	return zapr.NewLogger(z), nil
}
