// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener/gardener-extension-kube-vip/agent"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// cluster is shared by the scenarios; each leaves it with 3/3 agents Ready.
var cluster *nodes.Cluster

// Bounds on the client's longest outage, from the default timings (docs/agent.md).
var (
	defaults = timing.Defaults()
	// A graceful handover (SIGTERM: pod deleted, rolled) releases the Lease after removing
	// the VIP, and a follower takes it at once; if the release is lost, the Lease expires.
	gracefulBound = defaults.LeaseDuration
	// A crash leaves the VIP to its kernel lifetime (gone at the end of the term) and the
	// Lease to expire: a follower takes over lease-duration after the last renewal.
	crashBound = defaults.LeaseDuration + time.Second
	// A dead local kube-apiserver: the gate closes after the failure threshold of probes
	// (one per period, each failing at the latest at its timeout: 3 × 1 s + 500 ms with the
	// defaults), and the Lease cannot be renewed; followers take over at the latest at
	// lease expiry plus one write.
	apiserverBound = defaults.LeaseDuration + gateCloses(agent.DefaultConfig()) + time.Second
)

// gateCloses is the longest time from the local kube-apiserver's death until the health
// gate closes: the first failing probe starts within a period, the last one fails at its
// timeout.
func gateCloses(c agent.Config) time.Duration {
	return time.Duration(c.HealthFailureThreshold)*c.HealthPeriod + c.HealthTimeout
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		if framework.InCI() {
			fmt.Fprintln(os.Stderr, "e2e: needs root")
			return 1
		}
		fmt.Fprintln(os.Stderr, "e2e: skipped, needs root")
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(log)
	start := time.Now()
	// gardenadm's layout: the kube-apiservers on 443, the port Gardener gives the exposure.
	c, err := nodes.New(ctx, nodes.Options{Log: log, APIServerPort: 443})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cluster:", err)
		return 1
	}
	cluster = c
	fmt.Fprintf(os.Stderr, "e2e: cluster up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if ext != nil {
		tctx, tcancel := context.WithTimeout(context.Background(), 3*time.Minute)
		if err := ext.Teardown(tctx); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: removing the exposure:", err)
			code = 1
		}
		tcancel()
	}
	if mem, err := c.Memory(); err == nil {
		var total uint64
		for _, b := range mem {
			total += b
		}
		fmt.Fprintf(os.Stderr, "e2e: memory of the node namespaces at the end: %d MiB\n", total>>20)
	}
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: closing the cluster:", err)
		code = 1
	}
	if left := c.Leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: left behind: %q\n", left)
		code = 1
	}
	return code
}

// deployed creates the exposure through the controller if it is not there and waits until
// it has Succeeded, all agents are Ready, the rollout is complete and exactly one node
// holds the VIP, which it returns.
func deployed(t *testing.T, ctx context.Context) *netns.Node {
	t.Helper()
	exposed(t, ctx)
	waitReady(t, ctx)
	return settledHolder(t, ctx)
}

// settleTimeout bounds settledHolder's wait: longer than the agent's etcd check period
// (20 s), after which a pending etcd-leader yield has happened.
const settleTimeout = 30 * time.Second

// settledHolder returns the single VIP holder once its etcd member does not lead. A holder
// whose member leads hands the VIP on within an etcd check period (the agent's etcd-leader
// yield, an outage of about 0.1 s), which a scenario starting then would count as its own;
// where the yield is held down after a burst of failures, it goes on after settleTimeout.
func settledHolder(t *testing.T, ctx context.Context) *netns.Node {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		holder, err := cluster.Net().WaitSingleHolder(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if leads, err := holder.EtcdLeads(ctx); (err == nil && !leads) || time.Now().After(deadline) {
			return holder
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitReady waits until the DaemonSet is rolled out with every pod Ready.
func waitReady(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := ext.WaitAgentsReady(ctx, 3*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, agentsReport(ctx))
	}
}

// leaderPod is the agent pod on the node. Without one, the controller's log says whether
// it took the node's pair label away, which has the DaemonSet delete the pod.
func leaderPod(t *testing.T, ctx context.Context, node string) *corev1.Pod {
	t.Helper()
	pod, err := ext.AgentPod(ctx, node)
	if err != nil {
		t.Fatalf("%v\nthe controller's log:\n%s", err, controllerLog(ctx))
	}
	return pod
}

// probe connects from the client namespace to the VIP's port 443 every 10 ms for d.
func probe(t *testing.T, ctx context.Context, d time.Duration) *netns.Prober {
	t.Helper()
	p, err := cluster.Net().Client().StartProber(ctx, netns.ProbeOptions{Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkOutage fails the test if an outage did not end or the longest exceeded bound.
func checkOutage(t *testing.T, scenario string, res netns.ProbeResult, bound time.Duration) {
	t.Helper()
	netns.CheckOutage(t, scenario, res, bound)
}

func nodeOf(n *netns.Node) *nodes.Node { return cluster.Node(n.Name()) }
