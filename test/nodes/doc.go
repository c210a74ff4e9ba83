// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package nodes runs a self-hosted-shoot-like cluster of real nodes for the e2e tests and
// the demo: the LAN and the control plane of test/netns (one etcd member and one
// kube-apiserver per node namespace), and on every node its own containerd (Debian's, with
// runc) and a kubelet built from source, registered as a control-plane Node (label and
// NoSchedule taint, as gardenadm registers its nodes). kube-controller-manager and
// kube-scheduler run on the first node (on the next one once it is removed), so the real
// DaemonSet controller creates the agent's pods and the kubelets run them as containers
// from images that hack/tools/imagebuild builds without Docker or a registry. AddNode and
// RemoveNode replace machines while the cluster runs (a NIC provider gives the new one its
// interface).
//
// The machine kind this runs on shapes the set-up (see
// /work/shared/reference/kubelet-containerd in the team's notes): a cgroup v1 host
// (failCgroupV1: false), no CAP_SYS_RESOURCE (containerd restrict_oom_score_adj, kubelet
// oomScoreAdj 0), one kubelet and containerd per network namespace started with
// `nsenter --net` (`ip netns exec` remounts /sys and loses the cgroup v1 mounts), and
// host-wide sysctls that the kubelet sets at start-up and the cluster puts back.
//
// Close stops every process, removes the pods' mounts, the cgroups, the namespaces (and
// with them the kubelets' iptables chains) and restores the sysctls, also after a failed
// start.
package nodes
