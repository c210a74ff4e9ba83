// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

// Command demo is what `make demo` runs (through hack/demo.sh): the extension's whole job
// on a laptop-sized self-hosted shoot.
//
// The shoot is the network-namespace harness of test/netns: three control-plane node
// namespaces on one LAN, each with an etcd member and a kube-apiserver, and a client
// namespace. OpenStack is the local Keystone + Neutron of hack/openstack.sh, whose node
// ports carry the same fixed IPs as the harness nodes. The demo runs the real controllers
// (SelfHostedShootExposure and node tracking) in this process against the shoot, creates a
// SelfHostedShootExposure, stands in for the kubelet to run the agent DaemonSet's container
// in each node namespace, shows the floating IP, the VIP and the Neutron resources, proves
// that the API answers through the VIP, performs one live failover, and then keeps
// everything running until SIGTERM or SIGINT. On the way out it deletes the exposure
// through the controller (which releases the Neutron resources), stops every process and
// removes every namespace it created.
//
// It prints its progress on stdout; the line starting with "READY" says that the demo is
// up. The controller's and the harness's logs go to files in --state-dir.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// options are the demo's command line flags.
type options struct {
	stateDir        string
	kubeBinDir      string
	agentBinary     string
	openstackEnv    string
	prefix          string
	vip             string
	technicalID     string
	metricsAddress  string
	failoverProbing time.Duration
	teardownTimeout time.Duration
}

func parseFlags() (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&o.stateDir, "state-dir", ".local/demo", "directory for logs, kubeconfigs and the harness (certificates, etcd data)")
	fs.StringVar(&o.kubeBinDir, "kube-bin-dir", "", "directory with kube-apiserver and etcd (default: what hack/build-kube-binaries.sh prints)")
	fs.StringVar(&o.agentBinary, "agent-binary", "", "the kube-vip-agent binary (go build ./cmd/kube-vip-agent); required")
	fs.StringVar(&o.openstackEnv, "openstack-env", ".local/openstack/env.sh", "env file written by hack/openstack.sh up")
	fs.StringVar(&o.prefix, "prefix", "kvd-", "name prefix of the network namespaces")
	fs.StringVar(&o.vip, "vip", "198.18.0.100", "the virtual IP (in the node subnet 198.18.0.0/24, outside the node IPs)")
	fs.StringVar(&o.technicalID, "technical-id", "kube-vip-demo", "the shoot's technical ID; names and tags the Neutron resources")
	fs.StringVar(&o.metricsAddress, "metrics-address", "127.0.0.1:18480", "where the controller serves /metrics (host namespace)")
	fs.DurationVar(&o.failoverProbing, "failover-probing", 8*time.Second, "how long the prober runs around the live failover")
	fs.DurationVar(&o.teardownTimeout, "teardown-timeout", 3*time.Minute, "bound for the teardown after SIGTERM")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return nil, err
	}
	if o.agentBinary == "" {
		return nil, errors.New("--agent-binary is required")
	}
	if _, err := netip.ParseAddr(o.vip); err != nil {
		return nil, fmt.Errorf("--vip: %w", err)
	}
	for _, p := range []*string{&o.stateDir, &o.agentBinary, &o.openstackEnv} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, err
		}
		*p = abs
	}
	return o, nil
}

func main() {
	os.Exit(run())
}

// run runs the demo and returns the exit code.
func run() int {
	opts, err := parseFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "demo: needs root (network namespaces, the VIP on a NIC, raw ARP)")
		return 1
	}
	// SIGTERM (hack/demo.sh down) or SIGINT ends the demo, also while it still comes up.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	d, err := newDemo(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	code := 0
	if err := d.up(ctx); err != nil {
		if ctx.Err() != nil {
			d.out.Printf("interrupted while coming up: %v", err)
		} else {
			d.out.Printf("FAILED: %v", err)
			code = 1
		}
	} else {
		<-ctx.Done()
		d.out.Printf("received a stop signal")
	}
	stop()

	teardownCtx, cancel := context.WithTimeout(context.Background(), opts.teardownTimeout)
	defer cancel()
	if err := d.down(teardownCtx); err != nil {
		d.out.Printf("TEARDOWN INCOMPLETE: %v", err)
		code = 1
	}
	d.close()
	return code
}
