// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package agent holds the integration tests of kube-vip-agent: the real binary on the
// nodes of a test/netns harness with a real etcd cluster and kube-apiservers. Cluster, the
// helper they use, is exported for the other test packages that run the agent.
package agent

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// LeaseNamespace and LeaseName are the agent's default Lease.
const (
	LeaseNamespace = "kube-system"
	LeaseName      = "kube-vip-agent"
)

// BuildAgent builds cmd/kube-vip-agent into dir and returns the binary's path.
func BuildAgent(ctx context.Context, dir string) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kube-vip-agent")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kube-vip-agent")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kube-vip-agent: %w: %s", err, out)
	}
	return bin, nil
}

// Cluster runs one agent per node of a harness with a control plane.
type Cluster struct {
	H   *netns.Harness
	Bin string
	// ExtraArgs are appended to every agent's command line.
	ExtraArgs []string
	// Kubeconfig gives the --kubeconfig of the agent on a node; nil: the node's admin
	// kubeconfig.
	Kubeconfig func(*netns.Node) string

	mu     sync.Mutex
	agents map[string]*netns.Process
}

// NewCluster wraps a harness (with ControlPlane) and the agent binary.
func NewCluster(h *netns.Harness, bin string) *Cluster {
	return &Cluster{H: h, Bin: bin, agents: map[string]*netns.Process{}}
}

// Start starts the agent on n; it is an error while one runs there.
func (c *Cluster) Start(ctx context.Context, n *netns.Node) (*netns.Process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.agents[n.Name()]; p != nil && !p.Exited() {
		return nil, fmt.Errorf("agent on %s runs already", n)
	}
	kubeconfig := n.Kubeconfig()
	if c.Kubeconfig != nil {
		kubeconfig = c.Kubeconfig(n)
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--node-name=" + n.Name(),
		"--vip=" + vipFlag(c.H.VIPs()),
		// As the controller's DaemonSet passes it ([$(KUBE_VIP_HOST_IP)]:9482): the node's
		// address in brackets, not loopback (metric reads it there).
		"--metrics-address=[" + n.IP().String() + "]:9482",
	}, c.ExtraArgs...)
	p, err := n.Start(ctx, netns.ProcessOptions{Name: "agent", Path: c.Bin, Args: args})
	if err != nil {
		return nil, err
	}
	c.agents[n.Name()] = p
	return p, nil
}

// vipFlag is the value of --vip: the VIPs separated by commas.
func vipFlag(vips []netip.Addr) string {
	s := make([]string, len(vips))
	for i, v := range vips {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}

// StartAll starts the agent on every node where none runs.
func (c *Cluster) StartAll(ctx context.Context) error {
	for _, n := range c.H.Nodes() {
		if p := c.Agent(n); p != nil && !p.Exited() {
			continue
		}
		if _, err := c.Start(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// Agent is the last agent process started on n, or nil.
func (c *Cluster) Agent(n *netns.Node) *netns.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agents[n.Name()]
}

// LeaseHolder reads the Lease through node via's kube-apiserver.
func (c *Cluster) LeaseHolder(ctx context.Context, via *netns.Node) (string, error) {
	read, err := LeaseReader(via)
	if err != nil {
		return "", err
	}
	lease, err := read(ctx)
	if err != nil {
		return "", fmt.Errorf("reading Lease via %s: %w", via, err)
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// LeaseReader reads the agents' Lease through the kube-apiserver of via, with one client
// for all its reads.
func LeaseReader(via *netns.Node) (func(context.Context) (*coordinationv1.Lease, error), error) {
	cs, err := kubernetes.NewForConfig(via.RESTConfig())
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", via, err)
	}
	return func(ctx context.Context) (*coordinationv1.Lease, error) {
		return cs.CoordinationV1().Leases(LeaseNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
	}, nil
}

// WaitStable waits until exactly one node holds the VIP, the Lease names that node, and
// both stay so for hold. It returns the leader.
func (c *Cluster) WaitStable(ctx context.Context, hold time.Duration) (*netns.Node, error) {
	for {
		leader, err := c.H.WaitSingleHolder(ctx, nil)
		if err != nil {
			return nil, err
		}
		stable := true
		deadline := time.Now().Add(hold)
		for time.Now().Before(deadline) {
			holders, err := c.H.Holders()
			if err != nil {
				return nil, err
			}
			if len(holders) != 1 || holders[0] != leader {
				stable = false
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if stable {
			// Any reachable apiserver will do: the Lease lives in the shared etcd.
			var holder string
			for _, via := range c.H.Nodes() {
				if holder, err = c.LeaseHolder(ctx, via); err == nil {
					break
				}
			}
			if err != nil {
				return nil, err
			}
			if holder == leader.Name() {
				return leader, nil
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("VIP holder and Lease not stable: %w", ctx.Err())
		}
	}
}
