// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package arp announces the VIP on the LAN after a takeover: gratuitous ARP for IPv4 and
// unsolicited neighbour advertisements for IPv6.
//
// Every IPv4 announcement goes out in both forms that switches and ML2/OVN act on: an ARP
// request whose sender and target address are the VIP, and an ARP reply from the VIP,
// both to the Ethernet broadcast address.
package arp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
)

// Announcer announces one VIP on one interface. It is safe for concurrent use.
type Announcer struct {
	ifi  *net.Interface
	vip  netip.Addr
	mu   sync.Mutex
	send func(ctx context.Context) (int, error)
	arp  *arp.Client
	ndp  *ndpConn
}

// New returns an Announcer for vip on the named interface. Sockets are opened on the first
// announcement and closed by Close, which the agent calls when it stops leading.
func New(iface string, vip netip.Addr) (*Announcer, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("interface %q has no Ethernet address", iface)
	}
	a := &Announcer{ifi: ifi, vip: vip.Unmap()}
	if a.vip.Is4() {
		a.send = a.sendARP
	} else {
		a.send = a.sendNA
	}
	return a, nil
}

// Announce sends one round of announcements and reports how many packets were sent. It
// sends none once ctx's deadline has passed (the end of the sender's term), checked
// before each packet.
func (a *Announcer) Announce(ctx context.Context) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.send(ctx)
}

// Close releases the sockets.
func (a *Announcer) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	if a.arp != nil {
		errs = append(errs, a.arp.Close())
		a.arp = nil
	}
	if a.ndp != nil {
		errs = append(errs, a.ndp.Close())
		a.ndp = nil
	}
	return errors.Join(errs...)
}

// refreshInterface looks the interface up again by name: one that was deleted and
// created again has a new index (and maybe a new MAC).
func (a *Announcer) refreshInterface() error {
	ifi, err := net.InterfaceByName(a.ifi.Name)
	if err != nil {
		return fmt.Errorf("interface %q: %w", a.ifi.Name, err)
	}
	a.ifi = ifi
	return nil
}

// termOver returns an error once ctx's deadline has passed, by the clock rather than by
// the context's timer: a process that resumes from a freeze may run before the timer does.
func termOver(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return fmt.Errorf("not announcing the VIP: its term ended at %s", d.Format(time.RFC3339Nano))
	}
	return nil
}

func (a *Announcer) sendARP(ctx context.Context) (int, error) {
	if a.arp == nil {
		if err := a.refreshInterface(); err != nil {
			return 0, err
		}
		c, err := dialSendOnly(a.ifi)
		if err != nil {
			return 0, err
		}
		a.arp = c
	}
	packets, err := GratuitousARP(a.ifi.HardwareAddr, a.vip)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, p := range packets {
		if err := termOver(ctx); err != nil {
			return sent, err
		}
		if err := a.arp.WriteTo(p, ethernet.Broadcast); err != nil {
			// The socket may be stale (interface created again); the next announcement looks
			// the interface up again by name and opens a new one.
			_ = a.arp.Close()
			a.arp = nil
			return sent, fmt.Errorf("sending gratuitous ARP on %s: %w", a.ifi.Name, err)
		}
		sent++
	}
	return sent, nil
}

// dialSendOnly opens an ARP socket whose filter drops every received frame: the agent
// only sends, and an unread socket would otherwise queue every ARP frame on the LAN.
func dialSendOnly(ifi *net.Interface) (*arp.Client, error) {
	dropAll, err := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: 0}})
	if err != nil {
		return nil, fmt.Errorf("assembling the socket filter: %w", err)
	}
	return dial(ifi, &packet.Config{Filter: dropAll})
}

// dial opens an ARP socket on ifi with the given packet configuration (nil: receive every
// ARP frame).
func dial(ifi *net.Interface, cfg *packet.Config) (*arp.Client, error) {
	const etherTypeARP = 0x0806
	conn, err := packet.Listen(ifi, packet.Raw, etherTypeARP, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening an ARP socket on %s: %w", ifi.Name, err)
	}
	c, err := arp.New(ifi, conn)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("ARP client on %s: %w", ifi.Name, err)
	}
	return c, nil
}

// GratuitousARP returns the two announcements of vip from mac, both sent to the Ethernet
// broadcast address: a request with sender and target address vip and a zero target MAC,
// and a reply with sender and target address vip and target MAC mac, the form Linux's
// arp_is_garp accepts as gratuitous.
func GratuitousARP(mac net.HardwareAddr, vip netip.Addr) ([]*arp.Packet, error) {
	request, err := arp.NewPacket(arp.OperationRequest, mac, vip, net.HardwareAddr{0, 0, 0, 0, 0, 0}, vip)
	if err != nil {
		return nil, fmt.Errorf("building the ARP request: %w", err)
	}
	reply, err := arp.NewPacket(arp.OperationReply, mac, vip, mac, vip)
	if err != nil {
		return nil, fmt.Errorf("building the ARP reply: %w", err)
	}
	return []*arp.Packet{request, reply}, nil
}
