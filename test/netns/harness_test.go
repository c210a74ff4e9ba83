// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// serve accepts and closes connections until l is closed.
func serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}

func gratuitousARP(ctx context.Context, t *testing.T, n *netns.Node, vip netip.Addr) {
	t.Helper()
	if _, err := n.Run(ctx, "arping", "-q", "-U", "-c", "1", "-w", "0.05", "-i", netns.Interface, "-S", vip.String(), vip.String()); err != nil {
		// arping exits 1 when no reply came, which is normal for an unsolicited ARP.
		var exitErr interface{ ExitCode() int }
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
			t.Fatalf("arping on %s: %v", n, err)
		}
	}
}

// TestLAN checks the harness itself with a VIP moved by hand: the holder sampler, the ARP
// capture, the prober, the client's neighbour table, link and process operations, Close.
func TestLAN(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := netns.NewForTest(t, netns.Options{Prefix: "kvt-"})
	nodes := h.Nodes()
	if len(nodes) != 3 {
		t.Fatalf("want 3 nodes, got %d", len(nodes))
	}
	vip, vipPrefix := h.VIP(), h.VIPPrefix()
	for _, n := range nodes {
		l, err := n.Listen(ctx, "tcp", ":7000")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go serve(l)
	}

	// Every node reaches from the client; nothing holds the VIP.
	for _, n := range nodes {
		c, err := h.Client().DialContext(ctx, "tcp", netip.AddrPortFrom(n.IP(), 7000).String())
		if err != nil {
			t.Fatalf("client to %s: %v", n, err)
		}
		_ = c.Close()
	}
	if holders, err := h.Holders(); err != nil || len(holders) != 0 {
		t.Fatalf("holders at start: %v, %v", netns.Names(holders), err)
	}

	sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{})
	capture, err := h.StartARPCapture(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prober, err := h.Client().StartProber(ctx, netns.ProbeOptions{Target: netip.AddrPortFrom(vip, 7000), Duration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	// node1 takes the VIP.
	if err := nodes[0].AddAddress(ctx, vipPrefix); err != nil {
		t.Fatal(err)
	}
	gratuitousARP(ctx, t, nodes[0], vip)
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if err := h.Client().WaitNeighbor(wctx, vip, nodes[0].MAC()); err != nil {
		t.Fatal(err)
	}

	// Clean move to node2: removed first, then added and announced.
	time.Sleep(200 * time.Millisecond)
	if err := nodes[0].RemoveAddress(ctx, vipPrefix); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := nodes[1].AddAddress(ctx, vipPrefix); err != nil {
		t.Fatal(err)
	}
	gratuitousARP(ctx, t, nodes[1], vip)
	if err := h.Client().WaitNeighbor(wctx, vip, nodes[1].MAC()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	clean := sampler.Stop()
	if len(clean.Overlaps) != 0 || clean.MaxHolders() != 1 {
		t.Fatalf("clean move: overlaps %v, changes %v", clean.Overlaps, clean.Changes)
	}
	var seq []string
	for _, c := range clean.Changes {
		seq = append(seq, strings.Join(c.Holders, "+"))
	}
	if got, want := strings.Join(seq, " "), " node1  node2"; got != want {
		t.Fatalf("holder sequence %q, want %q", got, want)
	}
	if claims := capture.Claims(); len(netns.ARPConflicts(claims, time.Second)) != 0 {
		t.Fatalf("clean move shows ARP conflicts: %v", claims)
	}
	res := prober.Stop()
	if res.Probes < 20 || res.Failures == res.Probes {
		t.Fatalf("prober: %d probes, %d failures", res.Probes, res.Failures)
	}
	t.Logf("clean move: %d sweeps, prober %d probes, %d failures, outages %v", clean.Sweeps, res.Probes, res.Failures, res.Outages)

	// A deliberate double holder must be seen by both detectors.
	sampler = h.StartHolderSampler(ctx, netns.SamplerOptions{})
	if err := nodes[2].AddAddress(ctx, vipPrefix); err != nil {
		t.Fatal(err)
	}
	gratuitousARP(ctx, t, nodes[2], vip)
	gratuitousARP(ctx, t, nodes[1], vip)
	time.Sleep(100 * time.Millisecond)
	double := sampler.Stop()
	if len(double.Overlaps) == 0 || double.MaxHolders() != 2 {
		t.Fatalf("double holder not detected: %+v", double)
	}
	claims, err := capture.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(netns.ARPConflicts(claims, time.Second)) == 0 {
		t.Fatalf("ARP conflict not detected in %v", claims)
	}
	if err := nodes[2].RemoveAddress(ctx, vipPrefix); err != nil {
		t.Fatal(err)
	}

	// Link down cuts the node off; up brings it back.
	if err := nodes[2].LinkDown(ctx); err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if c, err := h.Client().DialContext(dctx, "tcp", netip.AddrPortFrom(nodes[2].IP(), 7000).String()); err == nil {
		_ = c.Close()
		t.Fatal("node3 reachable with its link down")
	}
	dcancel()
	if err := nodes[2].LinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := h.Client().DialContext(ctx, "tcp", netip.AddrPortFrom(nodes[2].IP(), 7000).String())
	if err != nil {
		t.Fatalf("node3 after link up: %v", err)
	}
	_ = c.Close()

	// Process group signals.
	p, err := nodes[0].Start(ctx, netns.ProcessOptions{Name: "sleep", Path: "/bin/sh", Args: []string{"-c", "sleep 60 & wait"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.PID(), 'T')
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.PID(), 'S')
	start := time.Now()
	if err := p.Stop(2 * time.Second); err == nil || p.ExitCode() != -1 {
		t.Fatalf("sh after SIGTERM: %v, code %d", err, p.ExitCode())
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("SIGTERM to the group took %v", d)
	}

	// Close removes every namespace.
	names := []string{h.Client().Namespace()}
	for _, n := range nodes {
		names = append(names, n.Namespace())
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, err := os.Stat("/run/netns/" + name); !os.IsNotExist(err) {
			t.Errorf("namespace %s still there after Close: %v", name, err)
		}
	}
}

func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the command name in parentheses.
		s := string(b)
		state := s[strings.LastIndexByte(s, ')')+2]
		if state == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d in state %c, want %c", pid, state, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestControlPlane checks the etcd cluster and the kube-apiservers of the harness: each is
// ready, serves through the VIP once the VIP is on its node, and comes back after a kill.
func TestControlPlane(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := netns.NewForTest(t, netns.Options{Prefix: "kvt-", ControlPlane: true})
	n1 := h.Nodes()[0]

	// The node's kubeconfig works inside the node (127.0.0.1:6443) ...
	if out, err := n1.Run(ctx, "kubectl", "--kubeconfig", n1.Kubeconfig(), "get", "--raw", "/readyz"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("kubectl in %s: %q, %v", n1, out, err)
	}
	// ... and RESTConfig from the test process; all apiservers share one etcd cluster.
	cs, err := kubernetes.NewForConfig(n1.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kvt", Namespace: "default"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs3, err := kubernetes.NewForConfig(h.Nodes()[2].RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs3.CoreV1().ConfigMaps("default").Get(ctx, "kvt", metav1.GetOptions{}); err != nil {
		t.Fatalf("object written via node1 not seen via node3: %v", err)
	}

	// With the VIP on node2, the client reaches node2's apiserver through it (TLS checked).
	if err := h.Nodes()[1].AddAddress(ctx, h.VIPPrefix()); err != nil {
		t.Fatal(err)
	}
	p, err := h.Client().StartProber(ctx, netns.ProbeOptions{Mode: netns.ProbeHTTPS, Count: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.Wait(); res.Failures != 0 {
		t.Fatalf("HTTPS through the VIP: %+v", res)
	}

	// Kill and restart node1's apiserver.
	n1.KillAPIServer()
	if ap := n1.APIServer(); !ap.Exited() {
		t.Fatal("apiserver still running after kill")
	}
	if err := n1.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n1.WaitAPIServerReady(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFailedStart checks that a harness whose control plane cannot start reports why and
// that Close still removes everything.
func TestFailedStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := netns.New(ctx, netns.Options{Prefix: "kvt-", ControlPlane: true, BinDir: t.TempDir(), Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "kube binaries") {
		t.Errorf("want an error about missing kube binaries, got %v", err)
	}
	if h == nil {
		t.Fatal("New returned no harness to close")
	}
	names := []string{h.Client().Namespace()}
	for _, n := range h.Nodes() {
		names = append(names, n.Namespace())
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, name := range names {
		if _, err := os.Stat("/run/netns/" + name); !os.IsNotExist(err) {
			t.Errorf("namespace %s left behind: %v", name, err)
		}
	}
}
