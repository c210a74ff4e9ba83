// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command demo is what `make demo` runs (through hack/demo.sh): the extension's whole job
// on a laptop-sized self-hosted shoot, installed as an operator installs it.
//
// The shoot is the real-node cluster of test/nodes: three control-plane nodes, each a
// network namespace on one LAN with its own containerd, kubelet, etcd member and
// kube-apiserver, kube-controller-manager and kube-scheduler, and a client namespace.
// OpenStack is the local Keystone + Neutron of hack/openstack.sh, whose machine ports carry
// the nodes' fixed IPs. The kube-apiservers listen on 443, as in gardenadm's layout. The
// demo creates the Gardener objects as gardenadm would, installs the extension's Helm chart
// (the controller runs as a pod from the locally built image, the agents as pods of the
// DaemonSet it deploys), runs gardenadm init's step with Gardener v1.150.0's own code
// (test/framework.Gardenadm: the SelfHostedShootExposure, and the DNS value that
// DNSValuesFromIngress computes from its status), shows the DNS value, the VIP and the
// Neutron resources, proves that the API answers at the DNS value, performs one live failover (the leader's agent pod is deleted) and then
// keeps everything running until SIGTERM or SIGINT. On the way out it deletes the exposure
// through the controller (which releases the Neutron resources), stops every process and
// removes every namespace, mount and cgroup it created.
//
// It prints its progress on stdout; the line starting with "READY" says that the demo is
// up. The cluster's and the test harness's logs go to files in --state-dir.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// options are the demo's command line flags.
type options struct {
	stateDir        string
	openstackEnv    string
	prefix          string
	technicalID     string
	release         string
	frontDoor       bool
	failoverProbing time.Duration
	teardownTimeout time.Duration
}

func parseFlags() (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&o.stateDir, "state-dir", ".local/demo", "directory for logs, env.sh and the cluster (certificates, etcd data, containerd state)")
	fs.StringVar(&o.openstackEnv, "openstack-env", ".local/openstack/env.sh", "env file written by hack/openstack.sh up")
	fs.StringVar(&o.prefix, "prefix", "kvd-", "name prefix of the network namespaces")
	fs.StringVar(&o.technicalID, "technical-id", "kube-vip-demo", "the shoot's technical ID; names and tags the Neutron resources")
	fs.StringVar(&o.release, "release", "bin/release", "what make release-artifacts wrote: the chart archive and the images' OCI layouts the extension is installed from")
	fs.BoolVar(&o.frontDoor, "front-door", false, "plug the nodes into their Neutron ports of hack/dataplane.sh and walk the front door: the floating IP from the external client namespace, through the Neutron router")
	fs.DurationVar(&o.failoverProbing, "failover-probing", 8*time.Second, "how long the prober runs around the live failover")
	fs.DurationVar(&o.teardownTimeout, "teardown-timeout", 4*time.Minute, "bound for the teardown after SIGTERM")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return nil, err
	}
	for _, p := range []*string{&o.stateDir, &o.openstackEnv, &o.release} {
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
		fmt.Fprintln(os.Stderr, "demo: needs root (network namespaces, containerd, kubelets, the VIP on a NIC, raw ARP)")
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
