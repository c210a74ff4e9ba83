// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package vip_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/gardener/gardener-extension-kube-vip/agent/arp"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// TestTakeoverGuard: the old holder crashed right after refreshing the VIP (valid_lft 1s), so
// its kernel keeps the address, and answers ARP for it, until the lifetime ran out and the
// kernel's lifetime check came round. The new leader, on another node of the LAN, probes as
// the agent's keeper does (timing.TakeoverProbeWindow) and adds the VIP only once nobody
// answers. Both NICs are sampled every millisecond: the VIP is never on both, whatever the
// kernel's lateness, and the takeover follows the old address's removal within a probe
// round. Without the guard the new leader would add the VIP at once, while the old one
// still has it for about a second.
func TestTakeoverGuard(t *testing.T) {
	framework.RequireRoot(t)
	const (
		oldIP = "198.18.5.1/24"
		newIP = "198.18.5.2/24"
		// probeEvery is the keeper's pause between probes while another host answers.
		probeEvery = timing.TakeoverProbeRetry
	)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	oldNS, newNS := "kvg-old-"+suffix, "kvg-new-"+suffix
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{oldNS, newNS} {
		ip("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	// One veth pair is the LAN between the two nodes.
	ip("-n", oldNS, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", newNS)
	ip("-n", oldNS, "addr", "add", oldIP, "dev", "eth0")
	ip("-n", newNS, "addr", "add", newIP, "dev", "eth0")
	ip("-n", oldNS, "link", "set", "eth0", "up")
	ip("-n", newNS, "link", "set", "eth0", "up")

	handle := func(name string) *netlink.Handle {
		ns, err := netns.GetFromName(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ns.Close() })
		h, err := netlink.NewHandleAt(ns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		return h
	}
	oldH, newH := handle(oldNS), handle(newNS)
	has := func(h *netlink.Handle) bool {
		link, err := h.LinkByName("eth0")
		if err != nil {
			t.Error(err)
			return false
		}
		addrs, err := h.AddrList(link, netlink.FAMILY_V4)
		if err != nil {
			t.Error(err)
			return false
		}
		for _, a := range addrs {
			if a.IP.Equal(net.IP(address.AsSlice())) {
				return true
			}
		}
		return false
	}

	for round := range 3 {
		// The old holder's last refresh, then its crash: nobody refreshes or removes it.
		ip("-n", oldNS, "addr", "add", address.String()+"/32", "dev", "eth0", "valid_lft", "1", "preferred_lft", "0")
		refreshed := time.Now()

		// The sampler: both NICs every millisecond until the new leader has the VIP.
		var (
			mu              sync.Mutex
			both            int
			oldGone, newOn  time.Time
			stopSampling    = make(chan struct{})
			samplerFinished = make(chan struct{})
		)
		go func() {
			defer close(samplerFinished)
			for {
				select {
				case <-stopSampling:
					return
				default:
				}
				o, n := has(oldH), has(newH)
				now := time.Now()
				mu.Lock()
				if o && n {
					both++
				}
				if !o && oldGone.IsZero() {
					oldGone = now
				}
				if n && newOn.IsZero() {
					newOn = now
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()

		// The new leader: probe from inside its namespace, add once nobody answers.
		waits, oldMAC := takeover(t, newNS, probeEvery, func() error {
			return exec.Command("ip", "-n", newNS, "addr", "add", address.String()+"/32", "dev", "eth0").Run()
		})
		time.Sleep(50 * time.Millisecond)
		close(stopSampling)
		<-samplerFinished

		mu.Lock()
		if both != 0 {
			t.Errorf("round %d: the VIP was on both nodes in %d samples", round, both)
		}
		if waits == 0 || oldMAC == nil {
			t.Errorf("round %d: the guard never saw the old holder answer (it holds the VIP for about a second)", round)
		}
		if oldGone.IsZero() || newOn.IsZero() {
			t.Fatalf("round %d: old removed at %v, new added at %v", round, oldGone, newOn)
		}
		lateness := oldGone.Sub(refreshed) - time.Second
		gap := newOn.Sub(oldGone)
		t.Logf("round %d: the kernel removed the old holder's VIP %s after its lifetime; the guard waited %d probe rounds and the new leader had it %s later",
			round, lateness.Round(time.Millisecond), waits, gap.Round(time.Millisecond))
		// One pause between probes plus the probe window and an add: the takeover follows
		// the old address promptly, not a lease later.
		if limit := probeEvery + timing.TakeoverProbeWindow + 50*time.Millisecond; gap > limit {
			t.Errorf("round %d: the new leader added the VIP %s after the old one's was gone, more than a probe round (%s)", round, gap, limit)
		}
		mu.Unlock()
		ip("-n", newNS, "addr", "del", address.String()+"/32", "dev", "eth0")
	}
}

// takeover runs the guard in namespace ns, as the keeper does: a probe every tick until no
// other host answers for the VIP, then add. It returns how many probes found a holder and
// the holder's MAC.
func takeover(t *testing.T, ns string, tick time.Duration, add func() error) (waits int, holder net.HardwareAddr) {
	t.Helper()
	done := make(chan struct{})
	var probeErr error
	go func() {
		defer close(done)
		runtime.LockOSThread() // the thread stays in ns; it ends with the goroutine
		target, err := netns.GetFromName(ns)
		if err != nil {
			probeErr = err
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			probeErr = err
			return
		}
		prober := arp.NewProber("eth0", address)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for ctx.Err() == nil {
			mac, err := prober.Holder(ctx, timing.TakeoverProbeWindow)
			if err != nil {
				probeErr = err
				return
			}
			if mac == nil {
				probeErr = add()
				return
			}
			waits++
			holder = mac
			time.Sleep(tick)
		}
		probeErr = ctx.Err()
	}()
	<-done
	if probeErr != nil {
		t.Fatalf("the guard: %v", probeErr)
	}
	return waits, holder
}
