// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Impairment is what a relay does to the frames of one direction: tc netem's delay and loss.
type Impairment struct {
	// Delay holds every frame this long.
	Delay time.Duration
	// Loss is the probability that a frame is dropped.
	Loss float64
}

// ImpairedLink relays Ethernet frames between two interfaces of one namespace, the frames
// entering at the first one delayed and dropped as its Impairment says. It is tc netem in
// user space: the test machine's kernel is built without sch_netem.
type ImpairedLink struct {
	a, b    *packet.Conn
	wg      sync.WaitGroup
	mu      sync.Mutex
	relayed int
	dropped int
}

// StartImpairedLink starts relaying between interfaces a and b of the named namespace;
// the frames that arrive at a leave b after fromA's delay, unless fromA drops them, and
// the frames that arrive at b leave a at once.
func StartImpairedLink(ns, a, b string, fromA Impairment) (*ImpairedLink, error) {
	l := &ImpairedLink{}
	err := RunIn(ns, func() error {
		var err error
		if l.a, err = relaySocket(a); err != nil {
			return err
		}
		if l.b, err = relaySocket(b); err != nil {
			_ = l.a.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	l.wg.Go(func() { l.relay(l.a, l.b, fromA) })
	l.wg.Go(func() { l.relay(l.b, l.a, Impairment{}) })
	return l, nil
}

// Stop ends the relay and reports how many frames it relayed and dropped from a.
func (l *ImpairedLink) Stop() (relayed, dropped int) {
	_ = l.a.Close()
	_ = l.b.Close()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.relayed, l.dropped
}

func (l *ImpairedLink) relay(from, to *packet.Conn, imp Impairment) {
	type frame struct {
		due time.Time
		b   []byte
	}
	// Frames leave in order, each at its due time: one writer behind a queue.
	queue := make(chan frame, 4096)
	var writer sync.WaitGroup
	writer.Go(func() {
		for f := range queue {
			time.Sleep(time.Until(f.due))
			_, _ = to.WriteTo(f.b, &packet.Addr{HardwareAddr: net.HardwareAddr(f.b[0:6])})
		}
	})
	defer writer.Wait()
	defer close(queue)
	buf := make([]byte, 65536)
	for {
		n, _, err := from.ReadFrom(buf)
		if err != nil {
			return
		}
		if n < 14 {
			continue
		}
		arrived := time.Now()
		if imp.Loss > 0 && rand.Float64() < imp.Loss {
			l.mu.Lock()
			l.dropped++
			l.mu.Unlock()
			continue
		}
		l.mu.Lock()
		l.relayed++
		l.mu.Unlock()
		queue <- frame{due: arrived.Add(imp.Delay), b: append([]byte(nil), buf[:n]...)}
	}
}

// relaySocket opens a packet socket for every frame that arrives at the named interface
// (promiscuous; the frames it sends itself are not read back).
func relaySocket(name string) (*packet.Conn, error) {
	return relaySocketFor(name, nil)
}

// neighbourFrames selects the frames of neighbour discovery: ARP, and ICMPv6 neighbour
// solicitations (135) and advertisements (136), which carry no extension headers.
var neighbourFrames = []bpf.Instruction{
	bpf.LoadAbsolute{Off: 12, Size: 2}, // the Ethernet header's EtherType
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.ETH_P_ARP, SkipTrue: 7},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.ETH_P_IPV6, SkipFalse: 7},
	bpf.LoadAbsolute{Off: 14 + 6, Size: 1}, // the IPv6 header's next header
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_ICMPV6, SkipFalse: 5},
	bpf.LoadAbsolute{Off: 14 + 40, Size: 1}, // the ICMPv6 type
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 135, SkipTrue: 2},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 136, SkipTrue: 1},
	bpf.RetConstant{Val: 0},
	bpf.RetConstant{Val: 1 << 16},
	bpf.RetConstant{Val: 0},
}

// relaySocketFor is relaySocket for the frames the filter passes (nil: all). The socket is
// bound to every protocol and filters itself: on a bridge port, the kernel hands a frame to
// sockets bound to one protocol only after the bridge passed it on, and the bridge consumes
// every frame, so such a socket would read nothing.
func relaySocketFor(name string, filter []bpf.Instruction) (*packet.Conn, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	cfg := &packet.Config{}
	if filter != nil {
		if cfg.Filter, err = bpf.Assemble(filter); err != nil {
			return nil, fmt.Errorf("assembling the relay's filter: %w", err)
		}
	}
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, cfg)
	if err != nil {
		return nil, fmt.Errorf("packet socket on %s: %w", name, err)
	}
	rc, err := c.SyscallConn()
	if err == nil {
		var serr error
		err = rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
		})
		err = errors.Join(err, serr)
	}
	if err == nil {
		err = c.SetPromiscuous(true)
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("relay socket on %s: %w", name, err)
	}
	return c, nil
}

// RunIn runs fn on a thread inside the named namespace and returns its error; sockets
// opened there stay in that namespace. The thread goes back to its namespace afterwards
// rather than being retired: processes the harness started from it were started with
// Pdeathsig and would be killed with it.
func RunIn(name string, fn func() error) error {
	ns, err := openNamespace(name)
	if err != nil {
		return err
	}
	defer ns.close()
	return ns.do(fn)
}

// ImpairedARP delays and drops the neighbour-discovery frames one node sends on the
// harness's bridge (ARP, and ICMPv6 neighbour solicitations and advertisements), as tc netem
// on that node's link with a filter for them would; every other frame takes the bridge as
// before. The bridge drops those frames of the node (ebtables) and a relay copies them,
// impaired, into the bridge through a veth pair whose bridge end learns no MACs.
type ImpairedARP struct {
	link    *ImpairedLink
	ns      string
	port    string
	in      string
	ebrules [][]string
}

// ImpairARP starts impairing the ARP and NDP frames node n sends; Stop ends it. Only for nodes on
// the harness's bridge (not with a NIC provider).
func (h *Harness) ImpairARP(ctx context.Context, n *Node, imp Impairment) (*ImpairedARP, error) {
	if h.opts.NIC != nil {
		return nil, errors.New("ARP impairment needs the harness's bridge")
	}
	a := &ImpairedARP{ns: h.bridge.name, port: "p-" + n.name, in: "i-" + n.name}
	out := "j-" + n.name
	cmds := fmt.Sprintf("link add %s type veth peer name %s\nlink set %s master br0\nlink set dev %s type bridge_slave learning off\nlink set %s up\nlink set %s up\n",
		a.in, out, out, out, out, a.in)
	if err := ipBatch(ctx, a.ns, cmds); err != nil {
		return nil, err
	}
	// The node's own frames are not flooded back to it from the relay's port.
	rules := [][]string{
		{"-i", a.port, "-p", "ARP", "-j", "DROP"},
		{"-i", a.port, "-p", "IPv6", "--ip6-proto", "ipv6-icmp", "--ip6-icmp-type", "135:136", "-j", "DROP"},
		{"-i", out, "-o", a.port, "-j", "DROP"},
	}
	for _, rule := range rules {
		if _, err := runIn(ctx, a.ns, "ebtables", append([]string{"-A", "FORWARD"}, rule...)...); err != nil {
			return nil, errors.Join(fmt.Errorf("ebtables in %s: %w", a.ns, err), a.stop(ctx))
		}
		a.ebrules = append(a.ebrules, rule)
	}
	a.link = &ImpairedLink{}
	err := RunIn(a.ns, func() error {
		var err error
		if a.link.a, err = relaySocketFor(a.port, neighbourFrames); err != nil {
			return err
		}
		if a.link.b, err = relaySocketFor(a.in, neighbourFrames); err != nil {
			_ = a.link.a.Close()
			return err
		}
		return nil
	})
	if err != nil {
		a.link = nil
		return nil, errors.Join(err, a.stop(ctx))
	}
	a.link.wg.Go(func() { a.link.relay(a.link.a, a.link.b, imp) })
	return a, nil
}

// Stop ends the impairment, restores the bridge and reports how many frames the relay
// passed and dropped.
func (a *ImpairedARP) Stop(ctx context.Context) (relayed, dropped int, err error) {
	if a.link != nil {
		relayed, dropped = a.link.Stop()
	}
	return relayed, dropped, a.stop(ctx)
}

func (a *ImpairedARP) stop(ctx context.Context) error {
	var errs []error
	for _, rule := range a.ebrules {
		if _, err := runIn(ctx, a.ns, "ebtables", append([]string{"-D", "FORWARD"}, rule...)...); err != nil {
			errs = append(errs, err)
		}
	}
	a.ebrules = nil
	if err := ipBatch(ctx, a.ns, fmt.Sprintf("link del %s\n", a.in)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DropVIPClaims makes the harness's bridge drop every ARP packet whose sender address is
// ip (replies and announcements for the VIP), as a network that filters ARP replies
// would; the nodes' other ARP traffic passes. The returned function removes the rule.
func (h *Harness) DropVIPClaims(ctx context.Context, ip netip.Addr) (func(context.Context) error, error) {
	if h.opts.NIC != nil {
		return nil, errors.New("dropping VIP claims needs the harness's bridge")
	}
	rule := []string{"FORWARD", "-p", "ARP", "--arp-ip-src", ip.String(), "-j", "DROP"}
	if _, err := runIn(ctx, h.bridge.name, "ebtables", append([]string{"-A"}, rule...)...); err != nil {
		return nil, fmt.Errorf("ebtables in %s: %w", h.bridge.name, err)
	}
	return func(ctx context.Context) error {
		_, err := runIn(ctx, h.bridge.name, "ebtables", append([]string{"-D"}, rule...)...)
		return err
	}, nil
}
