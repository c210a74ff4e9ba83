// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"

	"github.com/gardener/gardener-extension-kube-vip/agent/peers"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// Labels are the labels of every object of the kube-vip-agent, and of its pods.
func Labels() map[string]string { return kubeVIPAgentNames().labels() }

func (o objectNames) labels() map[string]string {
	return map[string]string{
		LabelAppName:   o.name,
		LabelManagedBy: ManagedByValue,
	}
}

// selectorLabels select the pods of one implementation. The DaemonSet selector is
// immutable; keep it small.
func (o objectNames) selectorLabels() map[string]string {
	return map[string]string{LabelAppName: o.name}
}

func (o objectNames) serviceAccount(namespace string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(o.name, namespace).
		WithLabels(o.labels()).
		WithAutomountServiceAccountToken(true)
}

// role allows the agent its Lease and nothing else: no create, which the authorizer cannot
// narrow by name (a create carries none), so the controller creates the Lease (see
// leaseObject). watchLease adds watch, which is allowed by name only when the watch carries
// fieldSelector metadata.name=<lease>; that is how kube-vip-agent watches. Upstream
// kube-vip (client-go's leader election on a LeaseLock) only gets and updates an existing
// Lease.
func (o objectNames) role(namespace string) *rbacv1ac.RoleApplyConfiguration {
	verbs := []string{"get", "update"}
	if o.watchLease {
		verbs = []string{"get", "watch", "update"}
	}
	role := rbacv1ac.Role(o.name, namespace).
		WithLabels(o.labels()).
		WithRules(rbacv1ac.PolicyRule().
			WithAPIGroups(coordinationv1.GroupName).
			WithResources("leases").
			WithResourceNames(o.lease).
			WithVerbs(verbs...))
	if o.watchLease {
		// kube-vip-agent emits one Event per move of the VIP on the Lease, a create each.
		role.WithRules(rbacv1ac.PolicyRule().
			WithAPIGroups(eventsv1.GroupName).
			WithResources("events").
			WithVerbs("create"))
	}
	return role
}

// leaseObject is the implementation's Lease with the extension's labels and no spec: the
// spec is the agents' election record, written with updates, which an apply that sets no
// spec field leaves alone.
func (o objectNames) leaseObject(namespace string) *coordinationv1ac.LeaseApplyConfiguration {
	return coordinationv1ac.Lease(o.lease, namespace).WithLabels(o.labels())
}

// peerRole allows the agent to read the `kubernetes` EndpointSlice of the namespace
// `default`, by name (list and watch carry the metadata.name field selector): the
// kube-apiservers of the current control plane, through which a leader whose own
// kube-apiserver died releases the Lease.
func (o objectNames) peerRole() *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(o.name, PeerNamespace).
		WithLabels(o.labels()).
		WithRules(rbacv1ac.PolicyRule().
			WithAPIGroups(discoveryv1.GroupName).
			WithResources("endpointslices").
			WithResourceNames(peers.Name).
			WithVerbs("get", "list", "watch"))
}

func (o objectNames) roleBinding(namespace string) *rbacv1ac.RoleBindingApplyConfiguration {
	return o.binding(namespace, namespace)
}

// peerRoleBinding binds peerRole to the agent's ServiceAccount in namespace.
func (o objectNames) peerRoleBinding(namespace string) *rbacv1ac.RoleBindingApplyConfiguration {
	return o.binding(PeerNamespace, namespace)
}

// binding binds the Role of the agent's name in namespace to its ServiceAccount in saNamespace.
func (o objectNames) binding(namespace, saNamespace string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(o.name, namespace).
		WithLabels(o.labels()).
		WithRoleRef(rbacv1ac.RoleRef().
			WithAPIGroup(rbacv1.GroupName).
			WithKind("Role").
			WithName(o.name)).
		WithSubjects(rbacv1ac.Subject().
			WithKind(rbacv1.ServiceAccountKind).
			WithName(o.name).
			WithNamespace(saNamespace))
}

// tolerations keep the agent on control-plane nodes whatever their condition: the agent's
// own health gate decides whether a node may hold the VIP, not the scheduler.
func tolerations() []*corev1ac.TolerationApplyConfiguration {
	noSchedule := []string{
		v1beta1constants.LabelNodeRoleControlPlane,
		corev1.TaintNodeUnschedulable,
		corev1.TaintNodeDiskPressure,
		corev1.TaintNodeMemoryPressure,
		corev1.TaintNodePIDPressure,
		corev1.TaintNodeNetworkUnavailable,
	}
	noExecute := []string{
		corev1.TaintNodeNotReady,
		corev1.TaintNodeUnreachable,
	}
	var out []*corev1ac.TolerationApplyConfiguration
	for _, key := range noSchedule {
		out = append(out, corev1ac.Toleration().
			WithKey(key).WithOperator(corev1.TolerationOpExists).WithEffect(corev1.TaintEffectNoSchedule))
	}
	for _, key := range noExecute {
		out = append(out, corev1ac.Toleration().
			WithKey(key).WithOperator(corev1.TolerationOpExists).WithEffect(corev1.TaintEffectNoExecute))
	}
	return out
}

// probe asks the agent's metrics listener on the node's address: with no host set, the
// kubelet probes the pod's IP, which in the host network is the node's (status.hostIP).
func probe(path string) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().
			WithPath(path).
			WithPort(intstr.FromInt32(MetricsPort)).
			WithScheme(corev1.URISchemeHTTP)).
		WithPeriodSeconds(5).
		WithTimeoutSeconds(2).
		WithFailureThreshold(3)
}

// The agent's resources. Its safety margins (docs/agent.md) assume that the agent runs
// within about 100 ms of its timer: the leader removes the VIP itself at the end of its
// term. Under contention the kernel shares the CPU by cpu.weight, which Kubernetes derives
// from the CPU request (10m gave weight 1, the least there is), so the request is set for
// the weight, well above what the agent uses (make bench's steady-state CPU column), and
// there is no CPU limit, whose CFS throttling could stall the agent for a whole period.
// The memory request covers the measured resident set with room; GOMEMLIMIT keeps the
// heap below the limit.
const (
	agentCPURequest    = "100m"
	agentMemoryRequest = "32Mi"
	agentMemoryLimit   = "64Mi"
	agentGoMemLimit    = "48MiB"
)

// container runs the agent as root with only NET_ADMIN (the VIP on the NIC) and NET_RAW
// (gratuitous ARP). A non-root process would not have these capabilities in its effective
// set: Kubernetes does not set ambient capabilities, and file capabilities are not granted
// under no_new_privs (allowPrivilegeEscalation: false).
func container(spec Spec) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(Name).
		WithImage(spec.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithArgs(spec.args()...).
		WithEnv(corev1ac.EnvVar().
			WithName("KUBE_VIP_NODE_NAME").
			WithValueFrom(corev1ac.EnvVarSource().
				WithFieldRef(corev1ac.ObjectFieldSelector().
					WithAPIVersion("v1").
					WithFieldPath("spec.nodeName"))),
			// The address --metrics-address listens on, see metricsAddress.
			corev1ac.EnvVar().
				WithName(hostIPEnv).
				WithValueFrom(corev1ac.EnvVarSource().
					WithFieldRef(corev1ac.ObjectFieldSelector().
						WithAPIVersion("v1").
						WithFieldPath("status.hostIP"))),
			// The Go runtime collects harder before the memory limit, rather than being
			// OOM-killed at it (an OOM kill takes the slower crash path of a failover).
			corev1ac.EnvVar().WithName("GOMEMLIMIT").WithValue(agentGoMemLimit)).
		WithPorts(corev1ac.ContainerPort().
			WithName("metrics").
			WithContainerPort(MetricsPort).
			WithHostPort(MetricsPort).
			WithProtocol(corev1.ProtocolTCP)).
		WithLivenessProbe(probe("/healthz")).
		WithReadinessProbe(probe("/readyz")).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(agentCPURequest),
				corev1.ResourceMemory: resource.MustParse(agentMemoryRequest),
			}).
			WithLimits(corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse(agentMemoryLimit),
			})).
		WithSecurityContext(netAdminSecurityContext())
}

// netAdminSecurityContext runs a container as root with only NET_ADMIN and NET_RAW, see
// container.
func netAdminSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithRunAsUser(0).
		WithRunAsNonRoot(false).
		WithAllowPrivilegeEscalation(false).
		WithPrivileged(false).
		WithReadOnlyRootFilesystem(true).
		WithCapabilities(corev1ac.Capabilities().
			WithDrop("ALL").
			WithAdd("NET_ADMIN", "NET_RAW")).
		WithSeccompProfile(corev1ac.SeccompProfile().
			WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// daemonSet is the DaemonSet of the chosen implementation.
func (s Spec) daemonSet() *appsv1ac.DaemonSetApplyConfiguration {
	if s.implementation() == v1alpha1.AgentImplementationKubeVIP {
		return kubeVIPNames().daemonSet(s.Namespace, s.VIP, kubeVIPContainer(s))
	}
	return kubeVIPAgentNames().daemonSet(s.Namespace, s.VIP, container(s))
}

// daemonSet runs ctr on every control-plane node whose Neutron port carries the VIP pair
// (the controller's PairLabel), in the host's network namespace, with the
// implementation's ServiceAccount.
func (o objectNames) daemonSet(namespace, vip string, ctr *corev1ac.ContainerApplyConfiguration) *appsv1ac.DaemonSetApplyConfiguration {
	return appsv1ac.DaemonSet(o.name, namespace).
		WithLabels(o.labels()).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(o.selectorLabels())).
			WithUpdateStrategy(appsv1ac.DaemonSetUpdateStrategy().
				WithType(appsv1.RollingUpdateDaemonSetStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDaemonSet().
					WithMaxUnavailable(intstr.FromInt32(1)).
					WithMaxSurge(intstr.FromInt32(0)))).
			WithRevisionHistoryLimit(5).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(o.labels()).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(o.name).
					WithAutomountServiceAccountToken(true).
					WithHostNetwork(true).
					WithDNSPolicy(corev1.DNSClusterFirstWithHostNet).
					WithPriorityClassName("system-node-critical").
					WithTerminationGracePeriodSeconds(5).
					WithEnableServiceLinks(false).
					WithAffinity(corev1ac.Affinity().
						WithNodeAffinity(corev1ac.NodeAffinity().
							WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.NodeSelector().
								WithNodeSelectorTerms(corev1ac.NodeSelectorTerm().
									WithMatchExpressions(
										corev1ac.NodeSelectorRequirement().
											WithKey(v1beta1constants.LabelNodeRoleControlPlane).
											WithOperator(corev1.NodeSelectorOpExists),
										// No agent before the pair: see PairLabel.
										corev1ac.NodeSelectorRequirement().
											WithKey(PairLabel).
											WithOperator(corev1.NodeSelectorOpIn).
											WithValues(PairLabelValue(vip))))))).
					WithTolerations(tolerations()...).
					WithContainers(ctr))))
}

// hostIPEnv holds the node's primary address (downward API, status.hostIP).
const hostIPEnv = "KUBE_VIP_HOST_IP"

// metricsAddress is the --metrics-address the agent is given: the node's primary address,
// so that a Prometheus in the cluster can scrape it through the metrics Service, and not
// every address of the host (the VIP, a floating IP's NIC). The kubelet expands $(VAR) in
// args; the brackets make an IPv6 address a valid host:port, and net.Listen accepts them
// around an IPv4 address too.
func metricsAddress() string {
	return "[$(" + hostIPEnv + ")]:" + strconv.Itoa(MetricsPort)
}

// metricsService is a headless Service over the agent pods' metrics port: a Prometheus
// (a ServiceMonitor, or a role: endpoints scrape config) finds every agent, holder or not,
// through its EndpointSlices. Headless, since nobody should load-balance over the agents.
func (o objectNames) metricsService(namespace string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(o.name, namespace).
		WithLabels(o.labels()).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(o.selectorLabels()).
			// An agent that is not ready (its node's kube-apiserver down) is the one to watch.
			WithPublishNotReadyAddresses(true).
			WithPorts(corev1ac.ServicePort().
				WithName("metrics").
				WithPort(MetricsPort).
				WithTargetPort(intstr.FromString("metrics")).
				WithProtocol(corev1.ProtocolTCP)))
}
