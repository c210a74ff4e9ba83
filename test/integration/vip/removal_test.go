// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package vip_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/agent/vip"
)

// The address watch tells the keeper when the VIP goes, at once and only then: adding or
// refreshing it, or changing another address, is no removal. A subscription the kernel ends
// (ENOBUFS in a burst of address changes) is renewed, and the renewal is reported as a
// possible removal, since one may have been missed meanwhile.
func TestRemovalWatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		buffer int // 0: the default
	}{
		{"default buffer", 0},
		{"smallest buffer: the kernel ends the subscription", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inNamespace(t, func(run func(args ...string) string) {
				a, err := vip.New("dummy0", address, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				removed := make(chan time.Time, 64)
				var restarts atomic.Int32
				done := make(chan struct{})
				defer close(done)
				err = a.WatchRemoval(done, vip.AddressWatch{
					OnRemoved:     func() { removed <- time.Now() },
					OnRestart:     func(error) { restarts.Add(1) },
					ReceiveBuffer: tc.buffer,
					Namespace:     threadNamespace(t),
				})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.Ensure(); err != nil {
					t.Fatal(err)
				}
				if _, err := a.Refresh(); err != nil {
					t.Fatal(err)
				}
				run("addr", "add", "198.18.5.101/32", "dev", "dummy0")
				run("addr", "del", "198.18.5.101/32", "dev", "dummy0")
				if tc.buffer == 0 {
					expectNoRemoval(t, removed, "adding and refreshing the VIP, and changing another address")
				} else { // the smallest buffer may overflow already: a renewal is reported
					time.Sleep(300 * time.Millisecond)
					for len(removed) > 0 {
						<-removed
					}
				}

				deleted := time.Now()
				run("addr", "del", address.String()+"/32", "dev", "dummy0")
				select {
				case at := <-removed:
					t.Logf("removal reported %s after `ip addr del` started", at.Sub(deleted).Round(time.Microsecond))
				case <-time.After(5 * time.Second):
					t.Fatal("the VIP's removal by hand was not reported")
				}
				if tc.buffer == 0 {
					return
				}
				// A burst of address changes overflows the smallest buffer: the kernel ends
				// the subscription, and the renewed one is reported as a possible removal.
				// Whether the reader keeps up with one burst is up to the scheduler, so the
				// burst is repeated until the kernel ended a subscription.
				file := filepath.Join(t.TempDir(), "burst")
				if err := os.WriteFile(file, []byte(addressBurst()), 0o600); err != nil {
					t.Fatal(err)
				}
				for i := 0; restarts.Load() == 0; i++ {
					if i == 5 {
						t.Fatal("the kernel never ended the subscription in 5 bursts; the test did not exercise the renewal")
					}
					run("-batch", file)
					time.Sleep(200 * time.Millisecond)
				}
				select {
				case <-removed:
				case <-time.After(5 * time.Second):
					t.Fatalf("after the kernel ended the subscription (%d renewed) nothing was reported", restarts.Load())
				}
			})
		})
	}
}

// expectNoRemoval fails if a removal is reported within 300 ms.
func expectNoRemoval(t *testing.T, removed <-chan time.Time, what string) {
	t.Helper()
	select {
	case <-removed:
		t.Fatalf("%s was reported as a removal", what)
	case <-time.After(300 * time.Millisecond):
	}
}

// addressBurst is an ip -batch script that adds 200 addresses to a new interface and
// deletes it: the kernel then sends all their removals at once.
func addressBurst() string {
	var batch strings.Builder
	batch.WriteString("link add burst0 type veth peer name burst1\n")
	for i := range 200 {
		fmt.Fprintf(&batch, "addr add 198.18.6.%d/32 dev burst0\n", i+1)
	}
	batch.WriteString("link del burst0\n")
	return batch.String()
}
