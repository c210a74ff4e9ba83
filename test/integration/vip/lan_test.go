// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package vip_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	knetns "github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// twoNodes is a LAN of two namespaces, the old holder and the new leader, each with eth0.
type twoNodes struct {
	t            *testing.T
	oldNS, newNS string
	oldH, newH   *netlink.Handle
	vip          netip.Addr
}

// lanFamily is one address family's addressing of the test LAN: the nodes' own addresses
// and the VIP, from the ranges the project's tests use (never routed: the namespaces have
// no default route).
type lanFamily struct {
	oldIP, newIP string
	vip          netip.Addr
}

var (
	lanIPv4 = lanFamily{oldIP: "198.18.5.1/24", newIP: "198.18.5.2/24", vip: address}
	lanIPv6 = lanFamily{oldIP: "2001:2:5::1/64", newIP: "2001:2:5::2/64", vip: netip.MustParseAddr("2001:2:5::100")}
)

// bothFamilies runs body as a subtest for IPv4 and for IPv6.
func bothFamilies(t *testing.T, body func(t *testing.T, fam lanFamily)) {
	for name, fam := range map[string]lanFamily{"IPv4": lanIPv4, "IPv6": lanIPv6} {
		t.Run(name, func(t *testing.T) { body(t, fam) })
	}
}

// runIn runs fn on a thread inside the named namespace.
func runIn(t *testing.T, ns string, fn func() error) {
	t.Helper()
	if err := knetns.RunIn(ns, fn); err != nil {
		t.Fatal(err)
	}
}

// newTwoNodes builds the LAN: one veth pair, or, with an impairment, two veth pairs
// through a relay namespace that delays and drops what the old holder sends.
func newTwoNodes(t *testing.T, fam lanFamily, impair *knetns.Impairment) *twoNodes {
	t.Helper()
	framework.RequireRoot(t)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	n := &twoNodes{t: t, oldNS: "kvg-old-" + suffix, newNS: "kvg-new-" + suffix, vip: fam.vip}
	names := []string{n.oldNS, n.newNS}
	relayNS := "kvg-rel-" + suffix
	if impair != nil {
		names = append(names, relayNS)
	}
	for _, ns := range names {
		n.ip("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		// The VIP is added without DAD, as the agent does; the nodes' own addresses, too,
		// so that they are usable at once.
		n.ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	}
	if impair == nil {
		n.ip("-n", n.oldNS, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", n.newNS)
	} else {
		n.ip("-n", n.oldNS, "link", "add", "eth0", "type", "veth", "peer", "name", "old", "netns", relayNS)
		n.ip("-n", n.newNS, "link", "add", "eth0", "type", "veth", "peer", "name", "new", "netns", relayNS)
		n.ip("-n", relayNS, "link", "set", "old", "up")
		n.ip("-n", relayNS, "link", "set", "new", "up")
		link, err := knetns.StartImpairedLink(relayNS, "old", "new", *impair)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			relayed, dropped := link.Stop()
			t.Logf("the relay passed %d frames from the old holder and dropped %d", relayed, dropped)
		})
	}
	n.ip("-n", n.oldNS, "addr", "add", fam.oldIP, "dev", "eth0")
	n.ip("-n", n.newNS, "addr", "add", fam.newIP, "dev", "eth0")
	n.ip("-n", n.oldNS, "link", "set", "eth0", "up")
	n.ip("-n", n.newNS, "link", "set", "eth0", "up")
	n.oldH, n.newH = n.handle(n.oldNS), n.handle(n.newNS)
	if fam.vip.Is6() {
		// The NDP guard sends from the link-local address, which comes with the carrier.
		for _, h := range []*netlink.Handle{n.oldH, n.newH} {
			for end := time.Now().Add(5 * time.Second); !n.hasLinkLocal(h); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("eth0 has no IPv6 link-local address after 5 s")
				}
			}
		}
	}
	return n
}

func (n *twoNodes) hasLinkLocal(h *netlink.Handle) bool {
	link, err := h.LinkByName("eth0")
	if err != nil {
		n.t.Fatal(err)
	}
	addrs, err := h.AddrList(link, netlink.FAMILY_V6)
	if err != nil {
		n.t.Fatal(err)
	}
	for _, a := range addrs {
		// Tentative until the kernel's DAD work ran (at once with accept_dad=0, but from a
		// workqueue): bind refuses it until then.
		if a.IP.IsLinkLocalUnicast() && a.Flags&unix.IFA_F_TENTATIVE == 0 {
			return true
		}
	}
	return false
}

func (n *twoNodes) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (n *twoNodes) handle(name string) *netlink.Handle {
	ns, err := vnetns.GetFromName(name)
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { _ = ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(h.Close)
	return h
}

// has reports whether the node's eth0 has the VIP.
func (n *twoNodes) has(h *netlink.Handle) bool {
	return n.held(h, []netip.Addr{n.vip})[0]
}

// crashedHolder puts the VIP on the old holder as its last refresh would (valid_lft 1 s),
// after which nobody refreshes or removes it.
func (n *twoNodes) crashedHolder() time.Time {
	n.ip("-n", n.oldNS, "addr", "add", n.vip.String()+"/"+bits(n.vip), "dev", "eth0", "valid_lft", "1", "preferred_lft", "0", "nodad")
	return time.Now()
}

func bits(a netip.Addr) string {
	if a.Is4() {
		return "32"
	}
	return "128"
}

// sampling is both NICs, for each of the VIPs, sampled with a 1 ms pause.
type sampling struct {
	mu      sync.Mutex
	samples int
	// both counts, per VIP, the samples with it on both nodes; crossed those with the new
	// leader holding one VIP while the old holder still had another.
	both           []int
	crossed        int
	oldGone, newOn []time.Time
	stop, finished chan struct{}
}

func (n *twoNodes) sample(vips ...netip.Addr) *sampling {
	s := &sampling{both: make([]int, len(vips)), oldGone: make([]time.Time, len(vips)), newOn: make([]time.Time, len(vips)),
		stop: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(s.finished)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			o, nw := n.held(n.oldH, vips), n.held(n.newH, vips)
			now := time.Now()
			s.mu.Lock()
			s.samples++
			anyOld, anyNew := false, false
			for i := range vips {
				anyOld, anyNew = anyOld || o[i], anyNew || nw[i]
				if o[i] && nw[i] {
					s.both[i]++
				}
				if !o[i] && s.oldGone[i].IsZero() {
					s.oldGone[i] = now
				}
				if nw[i] && s.newOn[i].IsZero() {
					s.newOn[i] = now
				}
			}
			if anyOld && anyNew {
				s.crossed++
			}
			s.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	return s
}

// done stops the sampler 50 ms later (the old holder's VIP may still be going).
func (s *sampling) done() {
	time.Sleep(50 * time.Millisecond)
	close(s.stop)
	<-s.finished
}

// addVIP puts the VIP on the named node as the agent does (no lifetime here: the test
// removes it).
func (n *twoNodes) addVIP(ns string) error {
	return exec.Command("ip", "-n", ns, "addr", "add", n.vip.String()+"/"+bits(n.vip), "dev", "eth0", "nodad").Run()
}

func (n *twoNodes) delVIP(ns string) {
	n.ip("-n", ns, "addr", "del", n.vip.String()+"/"+bits(n.vip), "dev", "eth0")
}

// waitGone waits until the node's kernel removed the VIP (its lifetime ran out).
func (n *twoNodes) waitGone(h *netlink.Handle) {
	for end := time.Now().Add(5 * time.Second); n.has(h); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			n.t.Fatal("the old holder's VIP outlived its lifetime by 4 s")
		}
	}
}
