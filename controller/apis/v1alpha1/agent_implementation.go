// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// AgentImplementation names the node agent that holds the virtual IP.
type AgentImplementation string

const (
	// AgentImplementationKubeVIPAgent is this extension's own agent, kube-vip-agent.
	AgentImplementationKubeVIPAgent AgentImplementation = "kube-vip-agent"
	// AgentImplementationKubeVIP is upstream kube-vip (github.com/kube-vip/kube-vip) in ARP
	// control-plane mode.
	AgentImplementationKubeVIP AgentImplementation = "kube-vip"
)

// AgentImplementations lists the supported implementations.
func AgentImplementations() []AgentImplementation {
	return []AgentImplementation{AgentImplementationKubeVIPAgent, AgentImplementationKubeVIP}
}

// ImplementationOf returns the implementation an agent config chooses, with the default.
func ImplementationOf(agent *AgentConfig) AgentImplementation {
	if agent == nil || agent.Implementation == nil || *agent.Implementation == "" {
		return AgentImplementationKubeVIPAgent
	}
	return *agent.Implementation
}
