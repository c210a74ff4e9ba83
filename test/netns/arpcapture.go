// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// ARPClaim is an ARP packet on the LAN whose sender IP is the VIP: a gratuitous ARP or a
// reply, i.e. some MAC saying "the VIP is here".
type ARPClaim struct {
	At  time.Time
	MAC net.HardwareAddr
	// Node is the name of the node that owns MAC, empty for a foreign MAC.
	Node       string
	Operation  arp.Operation
	Gratuitous bool // target IP equals sender IP
}

// ARPCapture records ARP claims for the VIP, seen on the bridge.
type ARPCapture struct {
	conn    *packet.Conn
	done    chan struct{}
	stopped atomic.Bool

	mu     sync.Mutex
	claims []ARPClaim
	err    error
}

// StartARPCapture opens an AF_PACKET socket on the bridge (promiscuous, so unicast replies
// between other ports are seen too) and records every ARP packet with the VIP as sender.
func (h *Harness) StartARPCapture(ctx context.Context) (*ARPCapture, error) {
	var conn *packet.Conn
	err := h.bridge.do(func() error {
		ifi, err := net.InterfaceByName("br0")
		if err != nil {
			return fmt.Errorf("bridge interface: %w", err)
		}
		c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ARP, nil)
		if err != nil {
			return fmt.Errorf("packet socket on br0: %w", err)
		}
		if err := c.SetPromiscuous(true); err != nil {
			_ = c.Close()
			return fmt.Errorf("promiscuous br0: %w", err)
		}
		conn = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	c := &ARPCapture{conn: conn, done: make(chan struct{})}
	go c.run(ctx, h)
	return c, nil
}

func (c *ARPCapture) run(ctx context.Context, h *Harness) {
	defer close(c.done)
	buf := make([]byte, 2048)
	for ctx.Err() == nil {
		_ = c.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, _, err := c.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if !c.stopped.Load() {
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
			}
			return
		}
		at := time.Now()
		var f ethernet.Frame
		if err := f.UnmarshalBinary(buf[:n]); err != nil || f.EtherType != ethernet.EtherTypeARP {
			continue
		}
		var p arp.Packet
		if err := p.UnmarshalBinary(f.Payload); err != nil {
			continue
		}
		if p.SenderIP != h.opts.VIP {
			continue
		}
		claim := ARPClaim{
			At:         at,
			MAC:        append(net.HardwareAddr(nil), p.SenderHardwareAddr...),
			Operation:  p.Operation,
			Gratuitous: p.TargetIP == p.SenderIP,
		}
		if node := h.NodeByMAC(claim.MAC); node != nil {
			claim.Node = node.name
		}
		c.mu.Lock()
		c.claims = append(c.claims, claim)
		c.mu.Unlock()
	}
}

// Claims returns the claims recorded so far.
func (c *ARPCapture) Claims() []ARPClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ARPClaim(nil), c.claims...)
}

// Stop ends the capture and returns all claims and the read error, if any.
func (c *ARPCapture) Stop() ([]ARPClaim, error) {
	c.stopped.Store(true)
	_ = c.conn.Close()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ARPClaim(nil), c.claims...), c.err
}

// ARPConflict is a claim by one MAC (Again) after a claim by another MAC (Other) that itself
// followed a claim by the first MAC: the VIP announced from two places at once.
type ARPConflict struct {
	Other, Again ARPClaim
}

// ARPConflicts finds every pattern X, Y, X in claims (in capture order) with X != Y where
// both gaps are at most window. A clean handover from X to Y never shows X after Y.
func ARPConflicts(claims []ARPClaim, window time.Duration) []ARPConflict {
	var out []ARPConflict
	for j, y := range claims {
		for k := j + 1; k < len(claims) && claims[k].At.Sub(y.At) <= window; k++ {
			x := claims[k]
			if x.MAC.String() == y.MAC.String() {
				continue
			}
			for i := j - 1; i >= 0 && y.At.Sub(claims[i].At) <= window; i-- {
				if claims[i].MAC.String() == x.MAC.String() {
					out = append(out, ARPConflict{Other: y, Again: x})
					break
				}
			}
		}
	}
	return out
}
