// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package sut

import (
	"strings"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/test/integration/kubevip"
)

// KubeVIPDeployed runs upstream kube-vip with the environment of the container of the
// DaemonSet that controller/agentrollout renders for agent.implementation kube-vip with
// default settings (timings 3/2/1 s mapped from kube-vip-agent's, Lease gardener-kube-vip,
// metrics on 127.0.0.1). Only the API access differs: the bench has no ServiceAccounts,
// so kube-vip reads the node's kubeconfig from $HOME (which it prefers over the in-cluster
// config that the DaemonSet's KUBERNETES_SERVICE_HOST/PORT set up); it reaches the same
// node-local kube-apiserver either way. test/integration/kubevip runs the in-cluster path.
type KubeVIPDeployed struct {
	// Path is the kube-vip binary.
	Path string
}

// Name implements System.
func (k KubeVIPDeployed) Name() string { return "kube-vip as deployed" }

// Describe implements System.
func (k KubeVIPDeployed) Describe() string {
	return "kube-vip v1.0.0 with the env of this extension's DaemonSet (lease 3/2/1 s, Lease gardener-kube-vip)"
}

// base is the plain kube-vip system this one reuses for HOME, kubeconfig and timeouts.
func (k KubeVIPDeployed) base() KubeVIP {
	return KubeVIP{Path: k.Path, Variant: "as deployed", LeaseDuration: 3, RenewDeadline: 2, RetryPeriod: 1}
}

// Binary implements System.
func (k KubeVIPDeployed) Binary() string { return k.Path }

// ScenarioTimeout implements System.
func (k KubeVIPDeployed) ScenarioTimeout() time.Duration { return k.base().ScenarioTimeout() }

// Settle implements System.
func (k KubeVIPDeployed) Settle() time.Duration { return k.base().Settle() }

// Preferred implements System: any node may lead.
func (k KubeVIPDeployed) Preferred() int { return -1 }

// Prepare implements System.
func (k KubeVIPDeployed) Prepare(c Cluster, i int, dir string) (Command, error) {
	cmd, err := k.base().Prepare(c, i, dir)
	if err != nil {
		return Command{}, err
	}
	n := c.Nodes[i]
	ds, err := agentrollout.RenderDaemonSet(agentrollout.Spec{
		Namespace:      "kube-system",
		Implementation: v1alpha1.AgentImplementationKubeVIP,
		Image:          "kube-vip",
		VIP:            c.VIP.String(),
		Interface:      n.Interface,
		APIServerPort:  6443,
	})
	if err != nil {
		return Command{}, err
	}
	ctr := ds.Spec.Template.Spec.Containers[0]
	env, err := kubevip.ResolveEnv(ctr, n.Name)
	if err != nil {
		return Command{}, err
	}
	for _, e := range cmd.Env {
		if strings.HasPrefix(e, "HOME=") {
			env = append(env, e)
		}
	}
	cmd.Args, cmd.Env = ctr.Args, env
	return cmd, nil
}

// Previous implements Rollable. Only one release is built here, so the roll restarts
// the same one node by node: what any DaemonSet roll costs it.
func (k KubeVIPDeployed) Previous(c Cluster, i int, dir string) (Command, error) {
	return k.Prepare(c, i, dir)
}
