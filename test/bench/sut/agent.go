// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
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
}

// Name implements System.
func (a Agent) Name() string { return "ours" }

// Describe implements System.
func (a Agent) Describe() string {
	return "kube-vip-agent, defaults: lease 1.5s/renew 1.3s/retry 0.9s, VIP lifetime 1s, /readyz probe 250ms x3"
}

// Binary implements System.
func (a Agent) Binary() string { return a.Path }

// ScenarioTimeout implements System.
func (a Agent) ScenarioTimeout() time.Duration { return orDefault(a.Timeout, 15*time.Second) }

// Settle implements System.
func (a Agent) Settle() time.Duration { return time.Second }

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
	return Command{
		Path: a.Path,
		Args: []string{
			"--node-name=" + n.Name,
			"--vip=" + c.VIP.String(),
			"--interface=" + n.Interface,
			"--kubeconfig=" + n.Kubeconfig,
			"--peer-apiserver-urls=" + strings.Join(peers, ","),
		},
	}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
