// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
)

// Labels are the labels of every object of the agent, and of its pods.
func Labels() map[string]string {
	return map[string]string{
		LabelAppName:   Name,
		LabelManagedBy: ManagedByValue,
	}
}

// selectorLabels select the agent pods. The DaemonSet selector is immutable; keep it small.
func selectorLabels() map[string]string {
	return map[string]string{LabelAppName: Name}
}

func serviceAccount(namespace string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(Name, namespace).
		WithLabels(Labels()).
		WithAutomountServiceAccountToken(true)
}

// role allows the agent its Lease and nothing else. create cannot be narrowed by name
// (the authorizer sees no name on a create). A watch is allowed by name only when it
// carries fieldSelector metadata.name=<lease>, which is how the agent watches.
func role(namespace string) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(Name, namespace).
		WithLabels(Labels()).
		WithRules(
			rbacv1ac.PolicyRule().
				WithAPIGroups(coordinationv1.GroupName).
				WithResources("leases").
				WithResourceNames(LeaseName).
				WithVerbs("get", "watch", "update"),
			rbacv1ac.PolicyRule().
				WithAPIGroups(coordinationv1.GroupName).
				WithResources("leases").
				WithVerbs("create"),
		)
}

func roleBinding(namespace string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(Name, namespace).
		WithLabels(Labels()).
		WithRoleRef(rbacv1ac.RoleRef().
			WithAPIGroup(rbacv1.GroupName).
			WithKind("Role").
			WithName(Name)).
		WithSubjects(rbacv1ac.Subject().
			WithKind(rbacv1.ServiceAccountKind).
			WithName(Name).
			WithNamespace(namespace))
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

func probe(path string) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().
			WithHost("127.0.0.1").
			WithPath(path).
			WithPort(intstr.FromInt32(MetricsPort)).
			WithScheme(corev1.URISchemeHTTP)).
		WithPeriodSeconds(5).
		WithTimeoutSeconds(2).
		WithFailureThreshold(3)
}

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
					WithFieldPath("spec.nodeName")))).
		WithPorts(corev1ac.ContainerPort().
			WithName("metrics").
			WithContainerPort(MetricsPort).
			WithHostPort(MetricsPort).
			WithProtocol(corev1.ProtocolTCP)).
		WithLivenessProbe(probe("/healthz")).
		WithReadinessProbe(probe("/readyz")).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("32Mi"),
			}).
			WithLimits(corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("64Mi"),
			})).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsUser(0).
			WithRunAsNonRoot(false).
			WithAllowPrivilegeEscalation(false).
			WithPrivileged(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().
				WithDrop("ALL").
				WithAdd("NET_ADMIN", "NET_RAW")).
			WithSeccompProfile(corev1ac.SeccompProfile().
				WithType(corev1.SeccompProfileTypeRuntimeDefault)))
}

func daemonSet(spec Spec) *appsv1ac.DaemonSetApplyConfiguration {
	return appsv1ac.DaemonSet(Name, spec.Namespace).
		WithLabels(Labels()).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels())).
			WithUpdateStrategy(appsv1ac.DaemonSetUpdateStrategy().
				WithType(appsv1.RollingUpdateDaemonSetStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDaemonSet().
					WithMaxUnavailable(intstr.FromInt32(1)).
					WithMaxSurge(intstr.FromInt32(0)))).
			WithRevisionHistoryLimit(5).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(Labels()).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(Name).
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
									WithMatchExpressions(corev1ac.NodeSelectorRequirement().
										WithKey(v1beta1constants.LabelNodeRoleControlPlane).
										WithOperator(corev1.NodeSelectorOpExists)))))).
					WithTolerations(tolerations()...).
					WithContainers(container(spec)))))
}

// metricsAddress is the --metrics-address the agent is given.
func metricsAddress() string {
	return "127.0.0.1:" + strconv.Itoa(MetricsPort)
}
