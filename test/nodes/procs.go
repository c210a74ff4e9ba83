// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcStatus is what /proc/PID/status says about a process.
type ProcStatus struct {
	PID    int
	PPID   int
	Name   string
	CapEff uint64
	RSS    uint64 // bytes
}

// ReadProcStatus parses /proc/PID/status.
func ReadProcStatus(pid int) (ProcStatus, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return ProcStatus{}, err
	}
	st := ProcStatus{PID: pid}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Name":
			st.Name = v
		case "PPid":
			st.PPID, _ = strconv.Atoi(v)
		case "CapEff":
			st.CapEff, err = strconv.ParseUint(v, 16, 64)
			if err != nil {
				return st, fmt.Errorf("CapEff %q: %w", v, err)
			}
		case "VmRSS":
			kb, _ := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
			st.RSS = kb * 1024
		}
	}
	return st, nil
}

// Processes returns the processes running in the node's network namespace whose name
// (comm: the executable's name cut at 15 characters) is name, cut the same way.
func (n *Node) Processes(name string) ([]ProcStatus, error) {
	if len(name) > maxComm {
		name = name[:maxComm]
	}
	pids, err := n.pids()
	if err != nil {
		return nil, err
	}
	var out []ProcStatus
	for _, pid := range pids {
		st, err := ReadProcStatus(pid)
		if err == nil && st.Name == name {
			out = append(out, st)
		}
	}
	return out, nil
}

// maxComm is the length of a process's comm in the kernel (TASK_COMM_LEN 16, with NUL).
const maxComm = 15

// pids are the processes in the node's network namespace.
func (n *Node) pids() ([]int, error) {
	// /run/netns/<name> is a bind mount of the namespace: same device and inode as the
	// /proc/PID/ns/net of every process inside.
	want, err := os.Stat(filepath.Join("/run/netns", n.Namespace()))
	if err != nil {
		return nil, err
	}
	return allPIDs(func(pid int) bool {
		fi, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"))
		return err == nil && os.SameFile(fi, want)
	})
}

// allPIDs lists the processes for which match is true.
func allPIDs(match func(pid int) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && match(pid) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Memory sums the resident memory of every process in each node's namespace (etcd,
// kube-apiserver, containerd, kubelet, shims, host-network containers, and on the first
// node kube-controller-manager and kube-scheduler), by node.
func (c *Cluster) Memory() (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, n := range c.nodes {
		pids, err := n.pids()
		if err != nil {
			return nil, err
		}
		for _, pid := range pids {
			if st, err := ReadProcStatus(pid); err == nil {
				out[n.Name()] += st.RSS
			}
		}
	}
	return out, nil
}
