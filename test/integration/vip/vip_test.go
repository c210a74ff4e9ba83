// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

// Package vip_test checks the agent's VIP handling against the real kernel, inside a
// network namespace of its own: the address shape, the kernel lifetime that removes the
// VIP when nobody refreshes it, interface detection and link watching.
package vip_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/agent/vip"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

var address = netip.MustParseAddr("198.18.5.100")

// inNamespace runs the test body on a thread that is inside a fresh namespace with one
// interface, dummy0 (one end of a veth pair), holding 198.18.5.2/24.
func inNamespace(t *testing.T, body func(run func(args ...string) string)) {
	framework.RequireRoot(t)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "kvv-" + hex.EncodeToString(b)
	ip := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ip("netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	run := func(args ...string) string { return ip(append([]string{"-n", name}, args...)...) }
	// A veth pair with both ends in the namespace (this kernel has no dummy driver).
	run("link", "add", "dummy0", "type", "veth", "peer", "name", "peer0")
	run("addr", "add", "198.18.5.2/24", "dev", "dummy0")
	run("link", "set", "peer0", "up")
	run("link", "set", "dummy0", "up")

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = netns.Set(orig) }()
	body(run)
}

func TestVIPOnTheKernel(t *testing.T) {
	inNamespace(t, func(run func(args ...string) string) {
		iface, err := vip.DetectInterface(address)
		if err != nil || iface != "dummy0" {
			t.Fatalf("DetectInterface = %q, %v; want dummy0 (its subnet holds the VIP)", iface, err)
		}
		a, err := vip.New(iface, address, time.Second)
		if err != nil {
			t.Fatal(err)
		}

		added, err := a.Ensure()
		if err != nil || !added {
			t.Fatalf("Ensure = %v, %v; want added", added, err)
		}
		shown := run("-o", "addr", "show", "dev", "dummy0")
		for _, want := range []string{"198.18.5.100/32", "valid_lft 1sec", "preferred_lft 0sec"} {
			if !strings.Contains(shown, want) {
				t.Errorf("ip addr shows %q, want it to contain %q", shown, want)
			}
		}
		if added, err := a.Ensure(); err != nil || added {
			t.Fatalf("second Ensure = %v, %v; want a refresh, not an add", added, err)
		}

		// Refreshed every 300ms, the address stays for good.
		for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
			if present, err := a.Present(); err != nil || !present {
				t.Fatalf("the VIP vanished although it was refreshed (err %v)", err)
			}
			if _, err := a.Ensure(); err != nil {
				t.Fatal(err)
			}
		}

		// Left alone, the kernel removes it after about its lifetime: the dead-man's switch.
		last := time.Now()
		time.Sleep(500 * time.Millisecond)
		if present, _ := a.Present(); !present {
			t.Fatal("the VIP vanished before its lifetime was over")
		}
		var gone time.Duration
		for time.Since(last) < 3*time.Second {
			if present, _ := a.Present(); !present {
				gone = time.Since(last)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if gone == 0 {
			t.Fatal("the kernel did not remove the VIP within 3s of its last refresh")
		}
		t.Logf("the kernel removed the VIP %s after its last refresh (valid_lft 1s)", gone.Round(time.Millisecond))
		if gone > time.Second+timing.KernelExpiryLateness+20*time.Millisecond {
			t.Errorf("removed after %s; the agent's timings budget 1s plus timing.KernelExpiryLateness (%s), plus this test's 10 ms polling",
				gone, timing.KernelExpiryLateness)
		}

		if _, err := a.Ensure(); err != nil {
			t.Fatal(err)
		}
		if removed, err := a.Remove(); err != nil || !removed {
			t.Fatalf("Remove = %v, %v; want removed", removed, err)
		}
		if removed, err := a.Remove(); err != nil || removed {
			t.Fatalf("second Remove = %v, %v; want nothing to remove and no error", removed, err)
		}
	})
}

func TestLinkWatch(t *testing.T) {
	inNamespace(t, func(run func(args ...string) string) {
		a, err := vip.New("dummy0", address, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if up, err := a.LinkUp(); err != nil || !up {
			t.Fatalf("LinkUp = %v, %v; want up", up, err)
		}
		changes := make(chan bool, 8)
		done := make(chan struct{})
		defer close(done)
		if err := a.WatchLink(done, func(up bool) { changes <- up }); err != nil {
			t.Fatal(err)
		}
		run("link", "set", "dummy0", "down")
		select {
		case up := <-changes:
			if up {
				t.Fatal("link down reported as up")
			}
		case <-time.After(3 * time.Second):
			t.Fatal("no report of the link going down")
		}
		run("link", "set", "dummy0", "up")
		select {
		case up := <-changes:
			if !up {
				t.Fatal("link up reported as down")
			}
		case <-time.After(3 * time.Second):
			t.Fatal("no report of the link coming up")
		}
	})
}

func TestDetectInterfaceFailsClearly(t *testing.T) {
	inNamespace(t, func(func(args ...string) string) {
		_, err := vip.DetectInterface(netip.MustParseAddr("198.19.9.9"))
		if err == nil || !strings.Contains(err.Error(), "set the interface explicitly") {
			t.Fatalf("DetectInterface for an address in no local subnet = %v; want a clear error", err)
		}
	})
}
