// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UsersKubeVIPName is the name of every object of a user's own kube-vip release.
const UsersKubeVIPName = "kube-vip"

// UsersKubeVIP is a user's own upstream kube-vip in kube-system, as the official kube-vip
// Helm chart renders it for `helm install kube-vip kube-vip/kube-vip -n kube-system` in
// services mode (env.svc_enable=true, env.cp_enable=false): the ServiceAccount, ClusterRole,
// ClusterRoleBinding and DaemonSet named kube-vip, with the chart's labels, its pods
// running image. env is added to the container's (what the user's cluster needs besides,
// such as the NIC). The DaemonSet comes last.
func UsersKubeVIP(image string, env ...corev1.EnvVar) []client.Object {
	selector := map[string]string{"app.kubernetes.io/name": UsersKubeVIPName, "app.kubernetes.io/instance": UsersKubeVIPName}
	labels := map[string]string{
		"helm.sh/chart": "kube-vip-0.8.0", "app.kubernetes.io/name": UsersKubeVIPName, "app.kubernetes.io/instance": UsersKubeVIPName,
		"app.kubernetes.io/version": "v1.0.0", "app.kubernetes.io/managed-by": "Helm",
	}
	meta := metav1.ObjectMeta{Name: UsersKubeVIPName, Namespace: Namespace, Labels: labels}
	podSpec := corev1.PodSpec{
		ServiceAccountName: UsersKubeVIPName,
		HostNetwork:        true,
		// The chart's default tolerations, which let its pods onto the control-plane nodes.
		Tolerations: []corev1.Toleration{
			{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		},
		Containers: []corev1.Container{{
			Name: UsersKubeVIPName, Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"manager"},
			Env: append([]corev1.EnvVar{
				{Name: "svc_enable", Value: "true"}, {Name: "cp_enable", Value: "false"}, {Name: "vip_arp", Value: "true"}, {Name: "svc_election", Value: "true"},
			}, env...),
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}}},
		}},
	}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: *meta.DeepCopy()},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: UsersKubeVIPName, Labels: labels, Annotations: map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"}},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"services", "services/status", "nodes", "endpoints"}, Verbs: []string{"list", "get", "watch", "update", "patch"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"list", "get", "watch", "update", "create"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "get", "watch", "update"}},
			}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: UsersKubeVIPName, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: UsersKubeVIPName},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: UsersKubeVIPName, Namespace: Namespace}}},
		&appsv1.DaemonSet{ObjectMeta: *meta.DeepCopy(), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector}, Spec: podSpec},
		}},
	}
}
