// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns_test

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"

	garp "github.com/gardener/gardener-extension-kube-vip/agent/arp"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestImpairARP: a node whose ARP frames the harness impairs still answers ARP, each answer
// at least the impairment's delay late, and the relay counts what it passed. (The bench's
// ARP-impaired scenarios rest on this: a relay that passes nothing turns "40 ms late, 2 %
// lost" into "all lost".)
func TestImpairARP(t *testing.T) {
	r := newRelayCheck(t, netns.Options{Prefix: "kvt-"})
	err := netns.RunIn(r.asker.Namespace(), func() error {
		ifi, err := net.InterfaceByName(netns.Interface)
		if err != nil {
			return err
		}
		c, err := arp.Dial(ifi)
		if err != nil {
			return fmt.Errorf("ARP client on %s: %w", r.asker, err)
		}
		defer c.Close()
		r.ask(t, func(deadline time.Time) (net.HardwareAddr, error) {
			if err := c.SetDeadline(deadline); err != nil {
				return nil, err
			}
			return c.Resolve(r.impaired.IP())
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.checkRelayed(t)
}

// TestImpairNDP is TestImpairARP for IPv6: the node's neighbour advertisements pass the
// relay, each at least the impairment's delay late. (Before, the relay passed only ARP, and
// the bench's IPv6 ARP-impaired rows would have impaired nothing.)
func TestImpairNDP(t *testing.T) {
	r := newRelayCheck(t, netns.Options{Prefix: "kvt-", VIP6: netip.MustParseAddr("2001:2::100")})
	target := r.impaired.IP6()
	err := netns.RunIn(r.asker.Namespace(), func() error {
		ifi, err := net.InterfaceByName(netns.Interface)
		if err != nil {
			return err
		}
		c, _, err := ndp.Listen(ifi, ndp.Global)
		if err != nil {
			return fmt.Errorf("NDP socket on %s: %w", r.asker, err)
		}
		defer c.Close()
		group, err := ndp.SolicitedNodeMulticast(target)
		if err != nil {
			return err
		}
		ns := &ndp.NeighborSolicitation{TargetAddress: target,
			Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}}}
		r.ask(t, func(deadline time.Time) (net.HardwareAddr, error) {
			if err := c.WriteTo(ns, nil, group); err != nil {
				return nil, err
			}
			if err := c.SetReadDeadline(deadline); err != nil {
				return nil, err
			}
			for {
				m, _, _, err := c.ReadFrom()
				if err != nil {
					return nil, err
				}
				if na, ok := m.(*ndp.NeighborAdvertisement); ok && na.TargetAddress == target {
					for _, o := range na.Options {
						if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target {
							return lla.Addr, nil
						}
					}
				}
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.checkRelayed(t)
}

// The relay holds every frame of the impaired node this long; the asker asks this often.
const (
	relayDelay = 40 * time.Millisecond
	relayAsks  = 10
)

// relayCheck is a LAN whose first node's ARP and NDP frames pass the impairment relay, and
// the tally of the answers the second node got from it.
type relayCheck struct {
	ctx              context.Context
	impaired, asker  *netns.Node
	imp              *netns.ImpairedARP
	asked, answered  int
	fastest, slowest time.Duration
}

func newRelayCheck(t *testing.T, opts netns.Options) *relayCheck {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	h := netns.NewForTest(t, opts)
	r := &relayCheck{ctx: ctx, impaired: h.Nodes()[0], asker: h.Nodes()[1]}
	var err error
	if r.imp, err = h.ImpairARP(ctx, r.impaired, netns.Impairment{Delay: relayDelay}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = r.imp.Stop(context.WithoutCancel(ctx)) })
	return r
}

// ask asks relayAsks times, each answer due within 500ms from the impaired node's MAC.
func (r *relayCheck) ask(t *testing.T, resolve func(deadline time.Time) (net.HardwareAddr, error)) {
	t.Helper()
	for i := range relayAsks {
		r.asked++
		start := time.Now()
		mac, err := resolve(start.Add(500 * time.Millisecond))
		took := time.Since(start)
		if err != nil {
			t.Errorf("ask %d: no answer from %s within 500ms: %v", i, r.impaired, err)
			continue
		}
		if mac.String() != r.impaired.MAC().String() {
			t.Errorf("ask %d: answered by %s, want %s's %s", i, mac, r.impaired, r.impaired.MAC())
		}
		r.answered++
		if r.answered == 1 || took < r.fastest {
			r.fastest = took
		}
		r.slowest = max(r.slowest, took)
	}
}

// checkRelayed stops the relay and fails the test unless the answers passed it: some came, none
// sooner than the delay, and the relay counted at least one frame for each.
func (r *relayCheck) checkRelayed(t *testing.T) {
	t.Helper()
	relayed, dropped, err := r.imp.Stop(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d asks answered in %s to %s; the relay passed %d frames and dropped %d",
		r.answered, r.asked, r.fastest.Round(time.Millisecond), r.slowest.Round(time.Millisecond), relayed, dropped)
	if r.answered == 0 {
		t.Error("no ask answered through the relay")
	}
	if r.answered > 0 && r.fastest < relayDelay {
		t.Errorf("an answer came after %s, before the impairment's delay of %s: it bypassed the relay", r.fastest, relayDelay)
	}
	if relayed < r.answered {
		t.Errorf("the relay passed %d frames for %d answers", relayed, r.answered)
	}
}

// TestGuardOverImpairedARP is the bench's ARP-impaired crash on the bench's own path (the
// bridge, ebtables and the relay): the old holder's kernel keeps the VIP for its lifetime
// (1 s) and answers ARP for it, every frame 40 ms late and 2 % lost; the new leader's
// takeover guard probes from the start and adds the VIP at its first "free". A sampler
// reading both nodes every millisecond must never find the VIP on both.
func TestGuardOverImpairedARP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := netns.NewForTest(t, netns.Options{Prefix: "kvt-"})
	old, taker := h.Nodes()[0], h.Nodes()[1]
	imp, err := h.ImpairARP(ctx, old, netns.Impairment{Delay: 40 * time.Millisecond, Loss: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _, _ = imp.Stop(context.WithoutCancel(ctx)) }()
	vip := h.VIP()

	for round := range 5 {
		if _, err := old.Run(ctx, "ip", "addr", "add", h.VIPPrefix().String(), "dev", netns.Interface, "valid_lft", "1", "preferred_lft", "1"); err != nil {
			t.Fatal(err)
		}
		added := time.Now()
		sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
		var holder string
		err := netns.RunIn(taker.Namespace(), func() error {
			g := garp.NewGuard(netns.Interface, vip)
			defer g.Close()
			since := time.Now()
			for ctx.Err() == nil {
				free, who, err := g.Free(ctx, since, time.Now().Add(100*time.Millisecond))
				if err != nil {
					return err
				}
				holder = cmp.Or(holder, who)
				if free {
					return taker.AddAddress(ctx, h.VIPPrefix())
				}
			}
			return ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		onAfter := time.Since(added)
		// Until the old holder's VIP is gone, so that an overlap shows whatever its length.
		for gone := false; !gone && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
			has, err := old.HasAddress(vip)
			if err != nil {
				t.Fatal(err)
			}
			gone = !has
		}
		report := sampler.Stop()
		if n := len(report.Overlaps); n > 0 {
			first, last := report.Overlaps[0].At, report.Overlaps[n-1].At
			t.Errorf("round %d: the VIP was on both nodes for %s (%d of %d samples), from %s after the old holder's refresh",
				round, last.Sub(first).Round(time.Millisecond), n, report.Sweeps, first.Sub(added).Round(time.Millisecond))
		}
		if holder != old.MAC().String() {
			t.Errorf("round %d: the guard saw %q answer, want the old holder %s", round, holder, old.MAC())
		}
		t.Logf("round %d: the taker added the VIP %s after the old holder's 1 s refresh (%d samples)", round, onAfter.Round(time.Millisecond), report.Sweeps)
		if err := taker.RemoveAddress(ctx, h.VIPPrefix()); err != nil {
			t.Fatal(err)
		}
	}
	relayed, dropped, err := imp.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the relay passed %d of the old holder's ARP frames and dropped %d", relayed, dropped)
}
