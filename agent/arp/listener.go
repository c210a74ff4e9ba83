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

// Listener is a holder's ear on its followers: it reads the requests for the VIPs (ARP
// requests, neighbour solicitations) that other hosts send, among them every follower's
// probe each timing.FollowerProbeInterval. A holder that heard a follower's stream of probes
// and then hears no request at all for timing.FenceSilence is cut off from the followers at
// L2 (its carrier may be up: a switch, flow-table or security-group fault), and they are
// about to take its Lease on the same silence (timing.EarlyTakeoverSilence): it calls
// onDeaf, and the keeper removes the VIP before they can add it (package timing). A holder
// that hears another host announce the VIP while it leads calls onDeaf too: its own frames
// out are dropped, and a follower took its Lease on the silence. It sends nothing and makes
// no API request.
type Listener struct {
	iface string
	vips  []netip.Addr
	// onDeaf fences the node off the VIP and reports whether it did (false while no VIP is
	// held yet: the silence then stands until one is).
	onDeaf func() bool
	log    logr.Logger
	// open opens the request socket of one VIP (openRequests; a fake in tests).
	open func(iface string, vip netip.Addr) (requests, error)
}

// requests reads the requests for one VIP from other hosts.
type requests interface {
	// drain reads every request the socket has queued, without blocking, and returns the
	// senders' MACs.
	drain() ([]string, error)
	// claimed returns the MACs that announced the VIP as theirs (a gratuitous ARP request,
	// an unsolicited neighbour advertisement) among the frames the last drain read.
	claimed() []string
	Close() error
}

// NewListener returns the listener for vips on the named interface; onDeaf is called when a
// silence reaches timing.FenceSilence after a follower's stream, until it fences.
func NewListener(iface string, vips []netip.Addr, onDeaf func() bool, log logr.Logger) *Listener {
	return &Listener{iface: iface, vips: vips, onDeaf: onDeaf, log: log, open: openRequests}
}

// Run listens until ctx is done, and fences while active reports true (this node leads).
// It listens while the node follows too, so that a new holder starts its term armed by the
// stream it heard before: a node cut off right after it took the Lease, before its
// followers' next probes reached it, would otherwise hold the VIP unfenced. A stream that
// fell silent while the node followed says nothing about a term and is forgotten.
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
		var claimant string
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
			if c := s.claimed(); len(c) > 0 {
				claimant = c[0]
			}
		}
		switch {
		case socks == nil:
		case claimant != "" && active() && l.onDeaf():
			// Another host added the VIP after its guard heard nobody: this node's answers
			// do not reach the others (its frames out are dropped, as its API requests may
			// be), and a follower took the Lease early on the silence.
			l.log.Info("Another host announced the VIP; fenced this node off the VIP", "claimant", claimant)
			h = Hearing{}
		case !h.Deaf(now):
		case !active():
			h = Hearing{}
		case l.onDeaf():
			l.log.Info("No follower's request for the VIP heard; fenced this node off the VIP", "silentFor", now.Sub(h.streamAt).Round(time.Millisecond))
			h = Hearing{}
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
	return h.SilentFor(now, timing.FenceSilence)
}

// SilentFor reports whether a stream was heard and nothing has continued it for silence.
func (h *Hearing) SilentFor(now time.Time, silence time.Duration) bool {
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
		// ICMPv6 neighbour solicitations and advertisements (no extension headers) whose
		// target ends as the VIP does; the whole target is compared after the read.
		v6 := vip.As16()
		proto = unix.ETH_P_IPV6
		filter = []bpf.Instruction{
			bpf.LoadAbsolute{Off: 14 + 6, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_ICMPV6, SkipFalse: 6},
			bpf.LoadAbsolute{Off: 14 + 40, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: icmpNS, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: icmpNA, SkipFalse: 3},
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

// The ICMPv6 types of neighbour discovery the request socket reads.
const (
	icmpNS = 135
	icmpNA = 136
)

// arpSPA is the offset of an ARP packet's sender protocol address in an Ethernet frame.
const arpSPA = 14 + 14

// requestSocket is one VIP's socket of requests.
type requestSocket struct {
	conn   *packet.Conn
	raw    syscall.RawConn
	self   net.HardwareAddr
	vip    netip.Addr
	buf    []byte
	claims []string
}

func (s *requestSocket) drain() ([]string, error) {
	var macs []string
	s.claims = nil
	for {
		n, _, ok, err := recvQueued(s.raw, s.buf)
		if err != nil || !ok {
			return macs, err
		}
		if n < 14 || bytes.Equal(s.buf[6:12], s.self) {
			continue
		}
		mac := net.HardwareAddr(s.buf[6:12]).String()
		if s.vip.Is6() {
			const target = 14 + 40 + 8
			if n < target+16 || netip.AddrFrom16([16]byte(s.buf[target:target+16])) != s.vip {
				continue
			}
			if s.buf[14+40] == icmpNA {
				s.claims = append(s.claims, mac)
				continue
			}
		} else if n >= arpSPA+4 && netip.AddrFrom4([4]byte(s.buf[arpSPA:arpSPA+4])) == s.vip {
			s.claims = append(s.claims, mac) // a gratuitous request: the sender holds the VIP
			continue
		}
		macs = append(macs, mac)
	}
}

func (s *requestSocket) claimed() []string { return s.claims }

func (s *requestSocket) Close() error { return s.conn.Close() }
