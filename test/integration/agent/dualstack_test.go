// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// vip6 is the dual-stack exposure's IPv6 VIP, from the IPv6 benchmarking range.
var vip6 = netip.MustParseAddr("2001:2:0:10::64")

// TestDualStackFailover runs the agent with one VIP per family (--vip=198.18.0.100,
// 2001:2:0:10::64) on three control-plane nodes: both VIPs are on the leader only, and a
// graceful handover, a crash, the local kube-apiserver's death and a link down move both
// together. A sampler reads both families on every node with a 1 ms pause and must never
// find one VIP on two nodes; a prober per family measures the client's outage.
func TestDualStackFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// The etcd-leader yield moves the Lease on its own (TestEtcdLeaderYield): off here, so
	// that every move is the scenario's.
	h, c := startCluster(ctx, t, clusterOptions{Net: netns.Options{Prefix: "kvt-", VIP6: vip6},
		ExtraArgs: []string{"--etcd-metrics-url="}})
	prepare := func(t *testing.T) *netns.Node {
		t.Helper()
		restoreNodes(ctx, t, h, c)
		leader, err := waitBoth(ctxFor(t, ctx, time.Minute), h, nil)
		if err != nil {
			t.Fatalf("no leader with both VIPs: %v", err)
		}
		time.Sleep(time.Second) // a settled term: the next failover starts from a steady holder
		return leader
	}

	t.Run("both VIPs on the leader only", func(t *testing.T) {
		leader := prepare(t)
		for _, vip := range h.VIPs() {
			// A connection makes the client resolve the VIP; the announcements only update
			// an entry it has.
			p, err := h.Client().StartProber(ctx, netns.ProbeOptions{Target: netip.AddrPortFrom(vip, h.APIServerPort()), Count: 20})
			if err != nil {
				t.Fatal(err)
			}
			if res := p.Wait(); res.Failures != 0 {
				t.Errorf("%s: %d of %d TCP probes failed: %+v", vip, res.Failures, res.Probes, res.Outages)
			}
			if err := h.Client().WaitNeighbor(ctxFor(t, ctx, 5*time.Second), vip, leader.MAC()); err != nil {
				t.Errorf("%s: %v", vip, err)
			}
		}
		body, err := metricsText(ctx, leader)
		if err != nil {
			t.Fatal(err)
		}
		for i, family := range []string{"ipv4", "ipv6"} {
			want := fmt.Sprintf(`kube_vip_agent_vip_info{family=%q,node=%q,vip=%q} 1`, family, leader.Name(), h.VIPs()[i])
			if !strings.Contains(body, want) {
				t.Errorf("%s's metrics lack %s", leader, want)
			}
		}
		if v, err := metric(ctx, leader, "kube_vip_agent_vip_present"); err != nil || v != 1 {
			t.Errorf("%s: kube_vip_agent_vip_present %v (%v), want 1", leader, v, err)
		}
		for _, n := range h.Nodes() {
			held, err := n.HeldVIPs()
			if err != nil {
				t.Fatal(err)
			}
			if want := n == leader; want != (len(held) == 2) || (!want && len(held) != 0) {
				t.Errorf("%s holds %v (leader %s)", n, held, leader)
			}
		}
	})
	t.Run("graceful handover on SIGTERM", func(t *testing.T) {
		old := prepare(t)
		observeDualStackTakeover(ctx, t, h, old, func() {
			if err := c.Agent(old).Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("crash: SIGKILL of the leader's agent", func(t *testing.T) {
		old := prepare(t)
		observeDualStackTakeover(ctx, t, h, old, func() { c.Agent(old).Kill() })
	})
	t.Run("leader's kube-apiserver killed", func(t *testing.T) {
		old := prepare(t)
		observeDualStackTakeover(ctx, t, h, old, old.KillAPIServer)
	})
	t.Run("leader's link down", func(t *testing.T) {
		old := prepare(t)
		observeDualStackTakeover(ctx, t, h, old, func() {
			if err := old.LinkDown(ctx); err != nil {
				t.Fatal(err)
			}
		})
		if err := old.LinkUp(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// metricsText reads the agent's metrics endpoint on node n.
func metricsText(ctx context.Context, n *netns.Node) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(n.IP().String(), "9482")+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := n.HTTPClient(2*time.Second, nil).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// waitBoth polls until one node holds every VIP of the harness, no other node holds any,
// and accept (if not nil) takes that node.
func waitBoth(ctx context.Context, h *netns.Harness, accept func(*netns.Node) bool) (*netns.Node, error) {
	for {
		var holder *netns.Node
		holders := 0
		for _, n := range h.Nodes() {
			held, err := n.HeldVIPs()
			if err != nil {
				return nil, err
			}
			if len(held) > 0 {
				holders++
			}
			if slices.Equal(held, h.VIPs()) {
				holder = n
			}
		}
		if holders == 1 && holder != nil && (accept == nil || accept(holder)) {
			return holder, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// observeDualStackTakeover runs trigger against the leader old and waits until another
// node alone holds both VIPs; the sampler must find no VIP on two nodes, and the client's
// neighbour entries of both families must name the new leader.
func observeDualStackTakeover(ctx context.Context, t *testing.T, h *netns.Harness, old *netns.Node, trigger func()) {
	t.Helper()
	sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
	var probers []*netns.Prober
	for _, vip := range h.VIPs() {
		p, err := h.Client().StartProber(ctx, netns.ProbeOptions{Target: netip.AddrPortFrom(vip, h.APIServerPort()), Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		probers = append(probers, p)
	}
	trigger()
	newLeader, err := waitBoth(ctxFor(t, ctx, takeoverTimeout), h, func(n *netns.Node) bool { return n != old })
	if err != nil {
		rep := sampler.Stop()
		for _, p := range probers {
			p.Stop()
		}
		t.Fatalf("no takeover of both VIPs from %s: %v; holder changes %s", old, err, changes(rep))
	}
	time.Sleep(settle)
	for _, vip := range h.VIPs() {
		if err := h.Client().WaitNeighbor(ctxFor(t, ctx, 10*time.Second), vip, newLeader.MAC()); err != nil {
			t.Errorf("%s: %v", vip, err)
		}
	}
	rep := sampler.Stop()
	assertNoOverlap(t, rep)
	for i, p := range probers {
		res := p.Stop()
		for _, o := range res.Outages {
			if o.Open() {
				t.Errorf("%s: still unreachable from the client when probing ended (%d probes since %s: %s)", h.VIPs()[i], o.Failed, o.Start.Format(time.StampMilli), o.FirstError)
			}
		}
		t.Logf("%s: client outage %s (%d of %d probes failed)", h.VIPs()[i], res.Longest().Round(time.Millisecond), res.Failures, res.Probes)
	}
	if holder, err := waitBoth(ctxFor(t, ctx, time.Millisecond), h, nil); err != nil || holder != newLeader {
		t.Errorf("after the takeover the VIPs are not on %s alone: %v", newLeader, err)
	}
	t.Logf("both VIPs %s -> %s; %d sweeps (1 ms apart), %d with two holders of a VIP, %d with a node holding one family only; holder changes %s",
		old, newLeader, rep.Sweeps, len(rep.Overlaps), rep.Partial, changes(rep))
}
