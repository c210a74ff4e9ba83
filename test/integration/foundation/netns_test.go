// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package foundation

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestNetnsSmoke builds two hosts in network namespaces, joined by a bridge in a third
// namespace (the host's network is not touched), lets them ping each other over
// 198.18.0.0/15, and checks that every namespace is gone afterwards.
func TestNetnsSmoke(t *testing.T) {
	framework.RequireRoot(t)
	if _, err := exec.LookPath("ping"); err != nil {
		framework.Unavailable(t, "ping is missing; run hack/install-deps.sh")
	}
	prefix := fmt.Sprintf("kvs-%d-", os.Getpid())
	bridgeNS, hostA, hostB := prefix+"br", prefix+"a", prefix+"b"

	// Registered first, so it runs last: after the namespaces' own cleanups.
	t.Cleanup(func() {
		out, err := exec.Command("ip", "netns", "list").CombinedOutput()
		if err != nil {
			t.Errorf("ip netns list: %v: %s", err, out)
			return
		}
		if strings.Contains(string(out), prefix) {
			t.Errorf("namespaces with prefix %s left behind:\n%s", prefix, out)
		}
	})
	for _, ns := range []string{bridgeNS, hostA, hostB} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("deleting namespace %s: %v: %s", ns, err, out)
			}
		})
	}

	run(t, "ip", "-n", bridgeNS, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", bridgeNS, "link", "set", "br0", "up")
	for i, host := range []struct{ ns, addr string }{{hostA, "198.18.1.1/24"}, {hostB, "198.18.1.2/24"}} {
		port := fmt.Sprintf("p%d", i)
		// Created inside the bridge namespace with the peer moved straight to the host:
		// no interface ever appears in the root namespace.
		run(t, "ip", "-n", bridgeNS, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", host.ns)
		run(t, "ip", "-n", bridgeNS, "link", "set", port, "master", "br0", "up")
		run(t, "ip", "-n", host.ns, "addr", "add", host.addr, "dev", "eth0")
		run(t, "ip", "-n", host.ns, "link", "set", "eth0", "up")
		run(t, "ip", "-n", host.ns, "link", "set", "lo", "up")
	}

	run(t, "ip", "netns", "exec", hostA, "ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.1.2")
	run(t, "ip", "netns", "exec", hostB, "ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.1.1")

	// No route out: an address outside the bridge's subnet is unreachable.
	if out, err := exec.Command("ip", "netns", "exec", hostA, "ping", "-c", "1", "-W", "1", "198.19.0.1").CombinedOutput(); err == nil {
		t.Errorf("host %s reached 198.19.0.1, but it must have no route out:\n%s", hostA, out)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
}
