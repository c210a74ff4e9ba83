// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package sut describes the systems under test of the failover benchmark: this project's
// kube-vip-agent, upstream kube-vip in ARP control-plane mode and keepalived as the kubeadm
// HA guide sets it up. Each system turns a node's facts into the command line, environment
// and files that start its daemon on that node; the benchmark runs the command inside the
// node's network namespace.
package sut

import (
	"fmt"
	"net/netip"
	"os"
	"time"
)

// Node is what a system needs to know about one control-plane node.
type Node struct {
	// Name is the node's identity (Lease holder identity, VRRP router id).
	Name string
	// IP is the node's address on the LAN.
	IP netip.Addr
	// Interface is the node's LAN interface inside its namespace.
	Interface string
	// Kubeconfig reaches the node's own kube-apiserver.
	Kubeconfig string
}

// Cluster is the set of nodes that share the VIP.
type Cluster struct {
	VIP   netip.Addr
	Nodes []Node
}

// Command is how to start a system's daemon on one node.
type Command struct {
	Path string
	Args []string
	// Env is added to the benchmark's environment.
	Env []string
	// Stale lists files to delete before every (re)start, as a container restart starts
	// with a fresh /run: keepalived refuses to start while its pid files name a process
	// that still exists, and the child of a killed keepalived may not be reaped yet.
	Stale []string
}

// System is one system under test.
type System interface {
	// Name is short and unique, used in tables and file names.
	Name() string
	// Describe says how the system is set up, in a few words.
	Describe() string
	// Binary is the executable whose size the benchmark reports.
	Binary() string
	// Prepare writes what node i needs into dir (an empty directory owned by this node)
	// and returns the command that starts the daemon there.
	Prepare(c Cluster, i int, dir string) (Command, error)
	// ScenarioTimeout bounds how long the benchmark waits for a failover; past it the run
	// counts as "no failover".
	ScenarioTimeout() time.Duration
	// Settle is how long a (re)started daemon, or one whose fault was just reverted,
	// needs before it takes part in failover again; the benchmark waits that long after
	// the last start or revert before the next run.
	Settle() time.Duration
	// Preferred is the index of the node that holds the VIP whenever all nodes are
	// healthy (keepalived's highest priority with preemption), or -1 if any node may.
	Preferred() int
}

// Rollable is a system the benchmark can roll from its previous release to this one, node
// by node, as a DaemonSet's rolling update does.
type Rollable interface {
	// Previous is the command of the previous release on node i (see Prepare).
	Previous(c Cluster, i int, dir string) (Command, error)
}

// EtcdAware is a system that keeps the VIP off the node whose etcd member leads (ours with
// the etcd-leader yield on).
type EtcdAware interface {
	// KeepsOffEtcdLeader reports whether the system does so in this setup.
	KeepsOffEtcdLeader() bool
}

func writeFile(path, content string, mode os.FileMode) error {
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%g", d.Seconds())
}
