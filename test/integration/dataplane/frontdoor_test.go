// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package dataplane_test walks the front door through the real Neutron dataplane of
// `hack/dataplane.sh up`: external client -> floating IP -> qrouter DNAT -> VIP on a node whose
// NIC is a Neutron port with port security.
package dataplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gardener/gardener-extension-kube-vip/test/dataplane"
)

const vip = "198.18.0.50"

// TestFrontDoorFollowsPairsAndGARP shows what the product relies on in Neutron: traffic to the
// VIP's floating IP reaches a node only while the VIP is in that node port's allowed address
// pairs (anti-spoofing), and after the VIP moves to another node, a gratuitous ARP is enough
// for the router's DNAT to follow it.
func TestFrontDoorFollowsPairsAndGARP(t *testing.T) {
	env := dataplane.Load(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	osEnv := env.OpenStack
	if len(osEnv.NodePortIDs) < 2 {
		t.Fatalf("need two node ports, have %d", len(osEnv.NodePortIDs))
	}

	fd, err := env.OpenFrontDoor(ctx, vip, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fd.Close(context.Background(), env); err != nil {
			t.Error(err)
		}
	})
	setPairs := func(portID string, addrs ...string) {
		t.Helper()
		if err := env.SetPairs(ctx, portID, addrs...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, id := range osEnv.NodePortIDs[:2] {
			if err := env.SetPairs(context.Background(), id); err != nil {
				t.Error(err)
			}
		}
	})

	a := env.Plug(ctx, t, "kvdp-test-a", osEnv.NodePortIDs[0])
	b := env.Plug(ctx, t, "kvdp-test-b", osEnv.NodePortIDs[1])
	holdVIP := func(n dataplane.Node) {
		t.Helper()
		if err := dataplane.IP("-n", n.NS, "addr", "add", vip+"/32", "dev", "eth0"); err != nil {
			t.Fatal(err)
		}
		// Habets' arping (Debian package arping): -U unsolicited, -S source address
		// arping exits 1 because nobody answers a gratuitous ARP; the reachability checks judge it
		_, _ = dataplane.Exec(ctx, n.NS, "arping", "-U", "-S", vip, "-i", "eth0", "-c", "3", "-W", "0.2", vip)
	}
	reachable := func(want bool, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
			return dataplane.Ping(ctx, env.ClientNS, fd.FloatingIP, time.Second) == want, nil
		})
		if err != nil {
			t.Fatalf("floating IP %s reachable from the client: want %v within %v, it was not", fd.FloatingIP, want, within)
		}
		return time.Since(start)
	}

	if dataplane.Ping(ctx, env.ClientNS, a.IP, time.Second) {
		t.Fatalf("the client reaches node address %s directly; its only way in must be the floating IP", a.IP)
	}
	holdVIP(a)
	// anti-spoofing: node a holds the VIP, but it is not in a's allowed address pairs
	for i := 0; i < 3; i++ {
		if dataplane.Ping(ctx, env.ClientNS, fd.FloatingIP, time.Second) {
			t.Fatal("the floating IP answered although the VIP is in no allowed address pair")
		}
	}
	setPairs(a.PortID, vip)
	setPairs(b.PortID, vip)
	t.Logf("pairs set: the floating IP answers after %v", reachable(true, 30*time.Second).Round(time.Millisecond))

	setPairs(a.PortID)
	t.Logf("pair removed from the holder's port: the floating IP is dead after %v", reachable(false, 30*time.Second).Round(time.Millisecond))
	setPairs(a.PortID, vip)
	reachable(true, 30*time.Second)

	// handover: a drops the VIP, b takes it and announces it; the router's neighbour entry follows
	if err := dataplane.IP("-n", a.NS, "addr", "del", vip+"/32", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	holdVIP(b)
	reachable(true, 10*time.Second)
	t.Logf("handover a -> b with gratuitous ARP: the floating IP answers %v after b took the VIP", time.Since(start).Round(time.Millisecond))
	out, err := dataplane.Exec(ctx, env.RouterNS, "ip", "neigh", "show", vip)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, b.MAC) {
		t.Fatalf("the router's neighbour entry for %s is %q, want b's MAC %s", vip, out, b.MAC)
	}
}
