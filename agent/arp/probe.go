// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

// Prober asks the LAN whether another host still holds the VIP: the takeover guard. A
// holder that crashed or froze keeps the VIP on its NIC until the kernel's lifetime of
// the address runs out, and its kernel answers ARP for it meanwhile; a new leader that
// adds the VIP only once nobody answers can never hold it at the same time.
type Prober struct {
	iface string
	vip   netip.Addr
}

// NewProber returns a Prober for vip on the named interface. IPv6 VIPs are not probed
// (Holder reports no holder): the guard covers IPv4 only.
func NewProber(iface string, vip netip.Addr) *Prober {
	return &Prober{iface: iface, vip: vip.Unmap()}
}

// Holder sends one ARP request for the VIP, from this node's own address (not from
// 0.0.0.0: Neutron's ARP anti-spoofing drops a sender address that is not the port's), and
// waits up to window for an ARP packet whose sender address is the VIP from another MAC: a
// reply, or another host's announcement. It returns that MAC, or nil if nobody claimed the
// VIP within window.
func (p *Prober) Holder(ctx context.Context, window time.Duration) (net.HardwareAddr, error) {
	if !p.vip.Is4() {
		return nil, nil
	}
	ifi, err := net.InterfaceByName(p.iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", p.iface, err)
	}
	sender, err := senderAddress(ifi, p.vip)
	if err != nil {
		return nil, err
	}
	c, err := dial(ifi, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()

	deadline := time.Now().Add(window)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("setting the ARP socket's deadline: %w", err)
	}
	request, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, sender, ethernet.Broadcast, p.vip)
	if err != nil {
		return nil, fmt.Errorf("building the ARP probe: %w", err)
	}
	if err := c.WriteTo(request, ethernet.Broadcast); err != nil {
		return nil, fmt.Errorf("sending the ARP probe on %s: %w", ifi.Name, err)
	}
	for {
		pkt, _, err := c.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, nil
		}
		if err != nil {
			// The socket's errors come as *net.OpError; anything else is a frame that did not
			// parse as ARP over Ethernet: skip it.
			if opErr := (*net.OpError)(nil); errors.As(err, &opErr) {
				return nil, fmt.Errorf("reading ARP on %s: %w", ifi.Name, err)
			}
			continue
		}
		if pkt.SenderIP == p.vip && !bytes.Equal(pkt.SenderHardwareAddr, ifi.HardwareAddr) {
			return pkt.SenderHardwareAddr, nil
		}
	}
}

// senderAddress is the interface's first IPv4 address other than the VIP.
func senderAddress(ifi *net.Interface, vip netip.Addr) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addresses of %s: %w", ifi.Name, err)
	}
	for _, a := range addrs {
		prefix, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		if ip := prefix.Addr(); ip.Is4() && ip != vip {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv4 address of its own to probe the VIP from", ifi.Name)
}
