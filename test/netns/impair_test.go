// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/mdlayher/arp"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestImpairARP: a node whose ARP frames the harness impairs still answers ARP, each answer
// at least the impairment's delay late, and the relay counts what it passed. (The bench's
// ARP-impaired scenarios rest on this: a relay that passes nothing turns "40 ms late, 2 %
// lost" into "all lost".)
func TestImpairARP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := netns.NewForTest(t, netns.Options{Prefix: "kvt-"})
	impaired, asker := h.Nodes()[0], h.Nodes()[1]
	const delay = 40 * time.Millisecond
	const asks = 10
	imp, err := h.ImpairARP(ctx, impaired, netns.Impairment{Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _, _ = imp.Stop(context.WithoutCancel(ctx)) }()

	var answered int
	var fastest, slowest time.Duration
	err = netns.RunIn(asker.Namespace(), func() error {
		ifi, err := net.InterfaceByName(netns.Interface)
		if err != nil {
			return err
		}
		c, err := arp.Dial(ifi)
		if err != nil {
			return fmt.Errorf("ARP client on %s: %w", asker, err)
		}
		defer c.Close()
		for i := range asks {
			start := time.Now()
			if err := c.SetDeadline(start.Add(500 * time.Millisecond)); err != nil {
				return err
			}
			mac, err := c.Resolve(impaired.IP())
			took := time.Since(start)
			if err != nil {
				t.Errorf("ask %d: no answer from %s within 500ms: %v", i, impaired, err)
				continue
			}
			if mac.String() != impaired.MAC().String() {
				t.Errorf("ask %d: answered by %s, want %s's %s", i, mac, impaired, impaired.MAC())
			}
			answered++
			if answered == 1 || took < fastest {
				fastest = took
			}
			slowest = max(slowest, took)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	relayed, dropped, err := imp.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d asks answered in %s to %s; the relay passed %d ARP frames and dropped %d",
		answered, asks, fastest.Round(time.Millisecond), slowest.Round(time.Millisecond), relayed, dropped)
	if answered > 0 && fastest < delay {
		t.Errorf("an answer came after %s, before the impairment's delay of %s: it bypassed the relay", fastest, delay)
	}
	if relayed < answered || relayed == 0 {
		t.Errorf("the relay passed %d frames for %d answers", relayed, answered)
	}
}
