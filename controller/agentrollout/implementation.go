// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// objectNames names the objects of one agent implementation: its ServiceAccount, Role,
// RoleBinding, DaemonSet and container share name; lease is the Lease its pods elect their
// leader with.
type objectNames struct {
	implementation v1alpha1.AgentImplementation
	name           string
	lease          string
	// watchLease tells whether the agent watches its Lease (and so needs the verb).
	watchLease bool
	// readsPeers tells whether the agent reads the kube-apiservers' EndpointSlice (and so
	// needs a Role and RoleBinding in its namespace, see peerRole).
	readsPeers bool
	// hasMetricsService tells whether the agent's metrics are reachable from the cluster (on
	// the node's address) and get a Service; upstream kube-vip serves its own on loopback.
	hasMetricsService bool
	// takesReleases tells whether the agents take a Lease without a holder only when it is
	// a release record (election.ReleasedByAnnotation), see createFreeLease.
	takesReleases bool
}

// kubeVIPAgentNames and kubeVIPNames name the two implementations' objects; they differ,
// so that both can be told apart while one hands over to the other. Upstream kube-vip's
// carry a prefix of their own, as a user's own kube-vip (its Helm chart's release
// `kube-vip`) may live in the same namespace.
func kubeVIPAgentNames() objectNames {
	return objectNames{implementation: v1alpha1.AgentImplementationKubeVIPAgent, name: Name, lease: LeaseName, watchLease: true, readsPeers: true, hasMetricsService: true, takesReleases: true}
}

func kubeVIPNames() objectNames {
	return objectNames{implementation: v1alpha1.AgentImplementationKubeVIP, name: KubeVIPName, lease: KubeVIPLeaseName}
}

// legacyKubeVIPNames are the names earlier releases gave upstream kube-vip's objects. They
// are only ever removed, and only those that carry the extension's label: the same names
// may be a user's.
func legacyKubeVIPNames() objectNames {
	return objectNames{implementation: v1alpha1.AgentImplementationKubeVIP, name: LegacyKubeVIPName, lease: LegacyKubeVIPLeaseName}
}

// allNames are every set of names an agent of the extension may have run under.
func allNames() []objectNames {
	return []objectNames{kubeVIPAgentNames(), kubeVIPNames(), legacyKubeVIPNames()}
}

// namesOf returns the object names of an implementation; unknown ones get ours (the
// spec's validation refuses them before).
func namesOf(impl v1alpha1.AgentImplementation) objectNames {
	if impl == v1alpha1.AgentImplementationKubeVIP {
		return kubeVIPNames()
	}
	return kubeVIPAgentNames()
}

// others returns the agents other than impl's current one: those that must be gone before
// impl starts.
func others(impl v1alpha1.AgentImplementation) []objectNames {
	var out []objectNames
	for _, o := range allNames() {
		if o.name != namesOf(impl).name {
			out = append(out, o)
		}
	}
	return out
}

// Holder names one implementation's pods and Lease, for callers that must know every node
// that may hold the virtual IP.
type Holder struct {
	// PodLabels select the implementation's pods.
	PodLabels map[string]string
	// LeaseName is the Lease its leader holds.
	LeaseName string
}

// LeaseNameOf is the Lease the agents of the implementation elect their holder with.
func LeaseNameOf(impl v1alpha1.AgentImplementation) string { return namesOf(impl).lease }

// Holders lists the pods and Leases of every agent the extension may have run.
func Holders() []Holder {
	var out []Holder
	for _, o := range allNames() {
		out = append(out, Holder{PodLabels: o.labels(), LeaseName: o.lease})
	}
	return out
}

// Owned tells whether obj carries the extension's managed-by label: only such objects are
// read as the agent's, changed or deleted.
func Owned(obj metav1.Object) bool {
	return obj.GetLabels()[LabelManagedBy] == ManagedByValue
}
