// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// Guard asks the LAN whether another host still holds the VIP: the takeover guard. A
// holder that crashed or froze keeps the VIP on its NIC until the kernel's lifetime of the
// address runs out, and its kernel answers for it meanwhile (ARP for IPv4, neighbour
// advertisements for IPv6); a new leader that adds the VIP only once nobody answers never
// holds it at the same time.
//
// The verdict "free" needs timing.TakeoverProbes requests in a row, each at least
// timing.TakeoverReplyBound old, and no claim of the VIP by another host read since the
// first of them. Claims are read from a socket that stays open for the whole takeover and
// is drained, without blocking, right before every verdict: an answer that arrived while
// this process was not scheduled is still counted, a late one still stops a verdict that
// comes after it, and one lost answer only costs another request.
//
// A Guard is not safe for concurrent use.
type Guard struct {
	iface string
	vip   netip.Addr
	now   func() time.Time

	probe  probe
	since  time.Time   // the takeover this session belongs to
	silent []time.Time // requests sent since the last claim, oldest first
}

// probe is one address family's way to ask for the VIP and to read the claims.
type probe interface {
	// send sends one request for the VIP.
	send() error
	// drain reads every claim of the VIP by another host that the socket has queued,
	// without blocking, and names their senders in the order read (none: nil).
	drain() ([]string, error)
	Close() error
}

// NewGuard returns the guard for vip on the named interface. It opens its socket on the
// first call of Free.
func NewGuard(iface string, vip netip.Addr) *Guard {
	return &Guard{iface: iface, vip: vip.Unmap(), now: time.Now}
}

// Free probes until the VIP counts as free or until the clock reaches until (or ctx is
// done). It returns free, or the host (its MAC, or for IPv6 without a link-layer option
// its address) that claimed the VIP during this call. Calls with the same since continue
// one session, so that a takeover may probe a tick at a time; a new since starts over.
func (g *Guard) Free(ctx context.Context, since, until time.Time) (free bool, holder string, err error) {
	if !since.Equal(g.since) || g.probe == nil {
		if err := g.Close(); err != nil {
			return false, "", err
		}
		p, err := g.open()
		if err != nil {
			return false, "", err
		}
		g.probe, g.since = p, since
	}
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	for {
		// The clock first, then the socket: everything that arrived by this verdict is read.
		now := g.now()
		who, err := g.probe.drain()
		if err != nil {
			return false, holder, g.fail(err)
		}
		if n := len(who); n > 0 {
			holder, g.silent = who[n-1], g.silent[:0]
		}
		if g.unanswered(now) >= timing.TakeoverProbes {
			return true, holder, nil
		}
		if !now.Before(until) {
			return false, holder, nil
		}
		next := now
		if n := len(g.silent); n > 0 {
			next = g.silent[n-1].Add(timing.TakeoverProbeInterval)
		}
		if !now.Before(next) {
			if err := g.probe.send(); err != nil {
				return false, holder, g.fail(err)
			}
			// Stamped after the write: the answer's bound runs from no earlier than this.
			g.silent = append(g.silent, g.now())
			next = g.now().Add(timing.TakeoverProbeInterval)
		}
		next = wakeAt(g.silent, next)
		if next.After(until) {
			next = until
		}
		select {
		case <-ctx.Done():
			return false, holder, nil // undecided: the caller is going away
		case <-time.After(next.Sub(g.now())):
		}
	}
}

// wakeAt is when Free next has something to do: send the request due at nextProbe, or give
// the verdict once the TakeoverProbes-th oldest silent request had its reply bound (the
// oldest TakeoverProbes then count; later requests need not be waited for).
func wakeAt(silent []time.Time, nextProbe time.Time) time.Time {
	if len(silent) < timing.TakeoverProbes {
		return nextProbe
	}
	if verdict := silent[timing.TakeoverProbes-1].Add(timing.TakeoverReplyBound); verdict.Before(nextProbe) {
		return verdict
	}
	return nextProbe
}

// unanswered counts the requests sent since the last claim that have had the reply bound.
func (g *Guard) unanswered(now time.Time) int {
	n := 0
	for _, sent := range g.silent {
		if now.Sub(sent) >= timing.TakeoverReplyBound {
			n++
		}
	}
	return n
}

// fail closes the session: the next call starts over with a new socket (the interface may
// have been created again).
func (g *Guard) fail(err error) error {
	_ = g.Close()
	return err
}

// Close ends the session and closes its socket.
func (g *Guard) Close() error {
	g.silent = g.silent[:0]
	g.since = time.Time{}
	if g.probe == nil {
		return nil
	}
	err := g.probe.Close()
	g.probe = nil
	return err
}

func (g *Guard) open() (probe, error) { return openProbe(g.iface, g.vip) }

// openProbe opens the probe of vip's family on the named interface. Every packet from the
// VIP counts: the guard must wait for a holder that only announces.
func openProbe(iface string, vip netip.Addr) (probe, error) {
	if vip.Is4() {
		return openARPProbe(iface, vip)
	}
	return openNDPProbe(iface, vip)
}

// openReplyProbe is openProbe for a follower's prober: only replies to its own requests
// count. They show that frames pass both ways between it and the holder; an announcement
// reaches a follower whose own frames are dropped, and would start a silence that is its
// own cut (a holder whose answers stopped reaching it looks the same, but then the
// followers' early writes reach the API server and the holder fences on the new holder's
// announcement).
func openReplyProbe(iface string, vip netip.Addr) (probe, error) {
	if vip.Is4() {
		p, err := openARPProbe(iface, vip)
		if err != nil {
			return nil, err
		}
		p.repliesOnly = true
		return p, nil
	}
	p, err := openNDPProbe(iface, vip)
	if err != nil {
		return nil, err
	}
	p.repliesOnly = true
	return p, nil
}

// recvQueued reads one packet that the socket has queued, without waiting; ok is false
// when there is none. (A read under a deadline would not do: Go checks the deadline before
// it reads, so a packet that waits while this process was late would never be read.)
func recvQueued(rc syscall.RawConn, buf []byte) (n int, from unix.Sockaddr, ok bool, err error) {
	var recvErr error
	err = rc.Control(func(fd uintptr) {
		n, from, recvErr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
	})
	if err == nil {
		err = recvErr
	}
	if errors.Is(err, unix.EAGAIN) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("reading the guard's socket: %w", err)
	}
	return n, from, true, nil
}
