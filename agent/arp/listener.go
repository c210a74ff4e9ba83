// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// Listener is a holder's ear on its followers: while it is active it reads the requests for
// the VIPs (ARP requests, neighbour solicitations) that other hosts send, among them every
// follower's probe each timing.FollowerProbeInterval. A holder that heard a follower's
// stream of probes and then hears no request at all for timing.FenceSilence is cut off from
// the followers at L2 (its carrier may be up: a switch, flow-table or security-group fault),
// and they are about to take its Lease on the same silence (timing.EarlyTakeoverSilence): it
// calls onDeaf, and the keeper removes the VIP before they can add it (package timing). It
// sends nothing and makes no API request.
type Listener struct {
	iface  string
	vips   []netip.Addr
	onDeaf func()
	log    logr.Logger
	// open opens the request socket of one VIP (openRequests; a fake in tests).
	open func(iface string, vip netip.Addr) (requests, error)
}

// requests reads the requests for one VIP from other hosts.
type requests interface {
	// drain reads every request the socket has queued, without blocking, and returns the
	// senders' MACs.
	drain() ([]string, error)
	Close() error
}

// NewListener returns the listener for vips on the named interface; onDeaf is called once
// per silence, when it reaches timing.FenceSilence after a follower's stream.
func NewListener(iface string, vips []netip.Addr, onDeaf func(), log logr.Logger) *Listener {
	return &Listener{iface: iface, vips: vips, onDeaf: onDeaf, log: log, open: openRequests}
}

// Run listens while active reports true, until ctx is done. Each (re)start of the listening
// starts disarmed: only a stream heard since arms the fence.
func (l *Listener) Run(ctx context.Context, active func() bool) {
	t := time.NewTicker(timing.FenceCheckInterval)
	defer t.Stop()
	var socks []requests
	var h Hearing
	closeAll := func() {
		for _, s := range socks {
			_ = s.Close()
		}
		socks, h = nil, Hearing{}
	}
	defer closeAll()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !active() {
			closeAll()
			continue
		}
		if socks == nil {
			for _, v := range l.vips {
				s, err := l.open(l.iface, v)
				if err != nil {
					l.log.Error(err, "Opening the holder's ear on the followers failed", "vip", v)
					closeAll()
					break
				}
				socks = append(socks, s)
			}
			continue
		}
		now := time.Now()
		for _, s := range socks {
			macs, err := s.drain()
			if err != nil {
				l.log.Error(err, "Reading the followers' requests for the VIP failed")
				closeAll()
				break
			}
			for _, mac := range macs {
				h.Heard(mac, now)
			}
		}
		if socks != nil && h.Deaf(now) {
			l.log.Info("No follower's request for the VIP heard; fencing this node off the VIP", "silentFor", now.Sub(h.streamAt).Round(time.Millisecond))
			h = Hearing{}
			if l.onDeaf != nil {
				l.onDeaf()
			}
		}
	}
}

// Hearing is what a holder heard of its followers' requests for the VIP. A request counts
// as a follower's stream only when the same MAC asked less than timing.FenceSilence before:
// a follower probes every timing.FollowerProbeInterval, while a client or router asks once
// per neighbour-cache expiry (seconds) and a network that answers for the nodes (OVN's ARP
// responder) sends the holder nothing. So the fence arms only on followers that were heard,
// as a follower takes early only on a holder it heard.
type Hearing struct {
	last     map[string]time.Time // per MAC, its last request
	streamAt time.Time            // the last request that continued a stream; zero: not armed
}

// Heard records a request from mac at now.
func (h *Hearing) Heard(mac string, now time.Time) {
	if h.last == nil {
		h.last = map[string]time.Time{}
	}
	if prev, ok := h.last[mac]; ok && now.Sub(prev) < timing.FenceSilence {
		h.streamAt = now
	}
	h.last[mac] = now
	for m, at := range h.last {
		if now.Sub(at) >= timing.FenceSilence {
			delete(h.last, m)
		}
	}
}

// Deaf reports whether a stream was heard and nothing has continued it for
// timing.FenceSilence.
func (h *Hearing) Deaf(now time.Time) bool {
	return h.silentFor(now, timing.FenceSilence)
}

// silentFor reports whether a stream was heard and nothing has continued it for silence.
func (h *Hearing) silentFor(now time.Time, silence time.Duration) bool {
	return !h.streamAt.IsZero() && now.Sub(h.streamAt) >= silence
}

// openRequests opens the socket that reads other hosts' requests for vip.
func openRequests(iface string, vip netip.Addr) (requests, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	var proto uint16
	var filter []bpf.Instruction
	if vip.Is4() {
		// ARP requests (operation 1) whose target protocol address is the VIP.
		v4 := vip.As4()
		proto = unix.ETH_P_ARP
		filter = []bpf.Instruction{
			bpf.LoadAbsolute{Off: 14 + 6, Size: 2},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipFalse: 3},
			bpf.LoadAbsolute{Off: 14 + 24, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: binary.BigEndian.Uint32(v4[:]), SkipFalse: 1},
			bpf.RetConstant{Val: 1 << 16},
			bpf.RetConstant{Val: 0},
		}
	} else {
		// ICMPv6 neighbour solicitations (no extension headers) whose target ends as the
		// VIP does; the whole target is compared after the read.
		v6 := vip.As16()
		proto = unix.ETH_P_IPV6
		filter = []bpf.Instruction{
			bpf.LoadAbsolute{Off: 14 + 6, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_ICMPV6, SkipFalse: 5},
			bpf.LoadAbsolute{Off: 14 + 40, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 135, SkipFalse: 3},
			bpf.LoadAbsolute{Off: 14 + 40 + 8 + 12, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: binary.BigEndian.Uint32(v6[12:]), SkipFalse: 1},
			bpf.RetConstant{Val: 1 << 16},
			bpf.RetConstant{Val: 0},
		}
	}
	prog, err := bpf.Assemble(filter)
	if err != nil {
		return nil, fmt.Errorf("assembling the socket filter: %w", err)
	}
	conn, err := packet.Listen(ifi, packet.Raw, int(proto), &packet.Config{Filter: prog})
	if err != nil {
		return nil, fmt.Errorf("opening a socket for the requests on %s: %w", ifi.Name, err)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("the request socket on %s: %w", ifi.Name, err)
	}
	return &requestSocket{conn: conn, raw: raw, self: ifi.HardwareAddr, vip: vip, buf: make([]byte, 1500)}, nil
}

// requestSocket is one VIP's socket of requests.
type requestSocket struct {
	conn *packet.Conn
	raw  syscall.RawConn
	self net.HardwareAddr
	vip  netip.Addr
	buf  []byte
}

func (s *requestSocket) drain() ([]string, error) {
	var macs []string
	for {
		n, _, ok, err := recvQueued(s.raw, s.buf)
		if err != nil || !ok {
			return macs, err
		}
		if n < 14 || bytes.Equal(s.buf[6:12], s.self) {
			continue
		}
		if s.vip.Is6() {
			const target = 14 + 40 + 8
			if n < target+16 || netip.AddrFrom16([16]byte(s.buf[target:target+16])) != s.vip {
				continue
			}
		}
		macs = append(macs, net.HardwareAddr(s.buf[6:12]).String())
	}
}

func (s *requestSocket) Close() error { return s.conn.Close() }
