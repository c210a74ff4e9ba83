// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
)

func agentDaemonSet(container corev1.Container) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{}
	ds.Spec.Template.Spec.Containers = []corev1.Container{container}
	ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: exposure.LabelControlPlane, Operator: corev1.NodeSelectorOpExists}},
		}}},
	}}
	return ds
}

// TestCommandLine checks how the stand-in turns the DaemonSet's container into the agent's
// command line: args kept, the image's entrypoint dropped, the downward API resolved and
// the service account replaced by the node's kubeconfig.
func TestCommandLine(t *testing.T) {
	ds := agentDaemonSet(corev1.Container{
		Name:    "kube-vip-agent",
		Command: []string{"/kube-vip-agent", "--log-level=debug"},
		Args:    []string{"--vip=198.18.0.100", "--metrics-address=127.0.0.1:9482"},
		Env: []corev1.EnvVar{
			{Name: "KUBE_VIP_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "PLAIN", Value: "x"},
		},
	})
	k := &kubelet{}
	n := shootNode{name: "node-1", kubeconfig: "/state/node2.kubeconfig"}
	args, env, err := k.commandLine(ds, n)
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"--log-level=debug", "--vip=198.18.0.100", "--metrics-address=127.0.0.1:9482", "--kubeconfig=/state/node2.kubeconfig"}
	if !slices.Equal(args, wantArgs) {
		t.Errorf("args = %q, want %q", args, wantArgs)
	}
	if want := []string{"KUBE_VIP_NODE_NAME=node-1", "PLAIN=x"}; !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	if !selectsControlPlane(ds) {
		t.Error("the DaemonSet selects control-plane nodes, but selectsControlPlane says no")
	}
}

func TestCommandLineRefusesWhatItCannotResolve(t *testing.T) {
	ds := agentDaemonSet(corev1.Container{
		Name: "kube-vip-agent",
		Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"},
		}}},
	})
	if _, _, err := (&kubelet{}).commandLine(ds, shootNode{name: "node-0"}); err == nil {
		t.Error("want an error for a fieldRef other than spec.nodeName")
	}
	ds.Spec.Template.Spec.Containers[0].Name = "other"
	if _, _, err := (&kubelet{}).commandLine(ds, shootNode{name: "node-0"}); err == nil {
		t.Error("want an error without a kube-vip-agent container")
	}
	ds.Spec.Template.Spec.Affinity = nil
	if selectsControlPlane(ds) {
		t.Error("a DaemonSet without node affinity does not select control-plane nodes")
	}
}
