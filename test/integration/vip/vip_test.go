// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package vip_test checks the agent's VIP handling against the real kernel, inside a
// network namespace of its own: the address shape, the kernel lifetime that removes the
// VIP when nobody refreshes it, interface detection, and the watches of the link and of the
// VIP's removal.
package vip_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/gardener/gardener-extension-kube-vip/agent/vip"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

var address = netip.MustParseAddr("198.18.5.100")

// inNamespace runs the test body on a thread that is inside a fresh namespace with one
// interface, dummy0 (one end of a veth pair), holding 198.18.5.2/24.
func inNamespace(t testing.TB, body func(run func(args ...string) string)) {
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

// threadNamespace is the namespace of the calling thread, which inNamespace has entered
// alone: the watch's renewed subscriptions run on other threads and must be told.
func threadNamespace(t *testing.T) *netns.NsHandle {
	t.Helper()
	ns, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return &ns
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
		defer a.Close()

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
		// The kernel's lifetime check runs at least once a second: the address is gone
		// within its lifetime plus that second (plus this test's polling).
		if gone > 2*time.Second+20*time.Millisecond {
			t.Errorf("removed after %s; want within the 1s lifetime plus the kernel's one-second lifetime check", gone)
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

// Refresh resets the lifetime of a VIP that is there and never adds a missing one: a leader
// whose VIP was removed must take it back through the guard.
func TestRefreshNeverAdds(t *testing.T) {
	inNamespace(t, func(run func(args ...string) string) {
		a, err := vip.New("dummy0", address, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if present, err := a.Refresh(); err != nil || present {
			t.Fatalf("Refresh of a missing VIP = %v, %v; want not present", present, err)
		}
		if shown := run("-o", "addr", "show", "dev", "dummy0"); strings.Contains(shown, "198.18.5.100/32") {
			t.Fatalf("Refresh added the missing VIP: %q", shown)
		}
		if _, err := a.Ensure(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		if present, err := a.Refresh(); err != nil || !present {
			t.Fatalf("Refresh of a VIP that is there = %v, %v; want present", present, err)
		}
		if shown := run("-o", "addr", "show", "dev", "dummy0"); !strings.Contains(shown, "valid_lft 2sec") {
			t.Errorf("after Refresh ip addr shows %q, want valid_lft 2sec again", shown)
		}
	})
}

func TestLinkWatch(t *testing.T) {
	inNamespace(t, func(run func(args ...string) string) {
		a, err := vip.New("dummy0", address, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if up, err := a.LinkUp(); err != nil || !up {
			t.Fatalf("LinkUp = %v, %v; want up", up, err)
		}
		changes := make(chan bool, 8)
		done := make(chan struct{})
		defer close(done)
		if err := a.WatchLink(done, vip.LinkWatch{OnChange: func(up bool) { changes <- up }, Namespace: threadNamespace(t)}); err != nil {
			t.Fatal(err)
		}
		expectLink(t, changes, true, "the link's state when the watch started")
		run("link", "set", "dummy0", "down")
		expectLink(t, changes, false, "the link going down")
		run("link", "set", "dummy0", "up")
		expectLink(t, changes, true, "the link coming up")
	})
}

// expectLink waits up to 5 s for the next report of the link watch and checks it.
func expectLink(t *testing.T, changes <-chan bool, want bool, what string) {
	t.Helper()
	select {
	case up := <-changes:
		if up != want {
			t.Fatalf("%s: reported up=%v, want %v", what, up, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no report of %s", what)
	}
}

// M4: a burst of link messages that overflows the watch's socket (ENOBUFS) must not end
// the watch: a consumer that is busy during the burst must not make the kernel drop
// messages, and a subscription the kernel ends anyway is renewed and lists the links again,
// so later changes are still reported.
func TestLinkWatchSurvivesABurst(t *testing.T) {
	for _, tc := range []struct {
		name        string
		buffer      int // 0: the default
		wantRestart bool
	}{
		{"default buffer, consumer busy", 0, false},
		{"smallest buffer: the kernel ends the subscription", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inNamespace(t, func(run func(args ...string) string) {
				a, err := vip.New("dummy0", address, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				changes := make(chan bool, 64)
				busy := make(chan struct{})
				var mu sync.Mutex
				var restarts []error
				done := make(chan struct{})
				defer close(done)
				err = a.WatchLink(done, vip.LinkWatch{
					OnChange: func(up bool) {
						<-busy // the consumer (the keeper, busy with netlink) stalls during the burst
						changes <- up
					},
					OnRestart: func(err error) {
						mu.Lock()
						restarts = append(restarts, err)
						mu.Unlock()
					},
					ReceiveBuffer: tc.buffer,
					Namespace:     threadNamespace(t),
				})
				if err != nil {
					t.Fatal(err)
				}
				run("link", "set", "dummy0", "down") // a change the consumer is busy with
				// A burst of link messages: 300 veth pairs created at once, as when many
				// pods are set up or torn down together. One request removes them again:
				// left to the namespace's asynchronous teardown they delay the kernel's
				// link events (operstate) in the next test by seconds.
				var batch strings.Builder
				for i := range 300 {
					fmt.Fprintf(&batch, "link add b%d group 7 type veth peer name c%d group 7\n", i, i)
				}
				defer run("link", "del", "group", "7")
				file := filepath.Join(t.TempDir(), "burst")
				if err := os.WriteFile(file, []byte(batch.String()), 0o600); err != nil {
					t.Fatal(err)
				}
				run("-batch", file)
				close(busy)
				time.Sleep(500 * time.Millisecond)
				for len(changes) > 0 {
					<-changes
				}
				run("link", "set", "dummy0", "up")
				// After the burst the kernel may defer the operational state's change
				// (linkwatch) by seconds; reading the link makes it apply it now.
				run("link", "show", "dummy0")
				expectLink(t, changes, true, "the link coming up after a burst of link messages (the watch died?)")
				mu.Lock()
				defer mu.Unlock()
				t.Logf("%d subscription(s) renewed: %v", len(restarts), restarts)
				if tc.wantRestart && len(restarts) == 0 {
					t.Error("the kernel never ended the subscription; the test did not exercise the renewal")
				}
			})
		})
	}
}

func TestDetectInterfaceFailsClearly(t *testing.T) {
	inNamespace(t, func(func(args ...string) string) {
		_, err := vip.DetectInterface(netip.MustParseAddr("198.19.9.9"))
		if err == nil || !strings.Contains(err.Error(), "set the interface explicitly") {
			t.Fatalf("DetectInterface for an address in no local subnet = %v; want a clear error", err)
		}
	})
}

// BenchmarkEnsureOnABusyHost measures one refresh of the VIP on a host with 5000 other
// addresses (kube-proxy in IPVS mode puts every ClusterIP on kube-ipvs0): the leader
// refreshes on every keeper tick of its refresh window, so the cost must not grow with
// the host's addresses.
func BenchmarkEnsureOnABusyHost(b *testing.B) {
	inNamespace(b, func(run func(args ...string) string) {
		var batch strings.Builder
		for i := range 5000 {
			fmt.Fprintf(&batch, "addr add 198.19.%d.%d/32 dev peer0\n", i/250, i%250+1)
		}
		file := filepath.Join(b.TempDir(), "addrs")
		if err := os.WriteFile(file, []byte(batch.String()), 0o600); err != nil {
			b.Fatal(err)
		}
		run("-batch", file)
		a, err := vip.New("dummy0", address, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		if _, err := a.Ensure(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := a.Ensure(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
