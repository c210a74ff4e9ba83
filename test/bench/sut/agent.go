// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package sut

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Agent runs this project's kube-vip-agent with its defaults (docs/design.md, "Agent
// CLI"), reaching the node's own kube-apiserver through the node's kubeconfig.
type Agent struct {
	// Path is the kube-vip-agent binary.
	Path string
	// Timeout overrides the scenario timeout; zero means 15s.
	Timeout time.Duration
	// NoEtcdYield turns the etcd-leader yield off (--etcd-metrics-url=""), to show what it
	// changes. With it on, the agent reads the harness's etcd member at
	// http://127.0.0.1:2379/metrics: the harness's etcd serves its metrics on the plain-HTTP
	// client listener, gardenadm's on a metrics listener of its own (localhost:2381, the
	// agent's default).
	NoEtcdYield bool
	// PreviousPath is the agent of the previous release (the last landed commit), for the
	// rolling update; without it the agent does not roll.
	PreviousPath string
}

// AgentRolling is the agent that rolls from PreviousPath to Path.
type AgentRolling struct{ Agent }

// Previous implements Rollable: the same flags, the previous release's binary.
func (a AgentRolling) Previous(c Cluster, i int, dir string) (Command, error) {
	cmd, err := a.Prepare(c, i, dir)
	cmd.Path = a.PreviousPath
	return cmd, err
}

// EtcdMetricsURL is where the harness's etcd members serve their metrics.
const EtcdMetricsURL = "http://127.0.0.1:2379/metrics"

// Name implements System.
func (a Agent) Name() string { return "ours" }

// Describe implements System.
func (a Agent) Describe() string {
	d := "kube-vip-agent, defaults (docs/design.md), etcd-leader yield on"
	if a.NoEtcdYield {
		d = "kube-vip-agent, defaults (docs/design.md), etcd-leader yield off"
	}
	return d
}

// Binary implements System.
func (a Agent) Binary() string { return a.Path }

// ScenarioTimeout implements System.
func (a Agent) ScenarioTimeout() time.Duration { return orDefault(a.Timeout, 15*time.Second) }

// Settle implements System.
func (a Agent) Settle() time.Duration { return time.Second }

// KeepsOffEtcdLeader implements EtcdAware: with the yield on, a holder whose etcd member
// leads offers the Lease to a node that has been eligible for 5 minutes (docs/agent.md).
func (a Agent) KeepsOffEtcdLeader() bool { return !a.NoEtcdYield }

// Preferred implements System: any node may lead.
func (a Agent) Preferred() int { return -1 }

// Prepare implements System.
func (a Agent) Prepare(c Cluster, i int, _ string) (Command, error) {
	if i < 0 || i >= len(c.Nodes) {
		return Command{}, fmt.Errorf("node %d out of range", i)
	}
	n := c.Nodes[i]
	// As the extension deploys it: every control-plane node's kube-apiserver (the
	// extension passes all of them; the agent's own is among them).
	var peers []string
	for _, p := range c.Nodes {
		peers = append(peers, "https://"+netip.AddrPortFrom(p.IP, 6443).String())
	}
	etcd := EtcdMetricsURL
	if a.NoEtcdYield {
		etcd = ""
	}
	return Command{
		Path: a.Path,
		Args: []string{
			"--node-name=" + n.Name,
			"--vip=" + c.VIP.String(),
			"--interface=" + n.Interface,
			"--kubeconfig=" + n.Kubeconfig,
			"--peer-apiserver-urls=" + strings.Join(peers, ","),
			"--etcd-metrics-url=" + etcd,
		},
	}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
