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
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// Direction says which frames of a node a blackhole drops.
type Direction int

const (
	// BothWays drops every frame from and to the node.
	BothWays Direction = iota
	// FromNode drops the frames the node sends; it still receives everything.
	FromNode
	// ToNode drops the frames sent to the node; what it sends still goes out.
	ToNode
)

// Blackhole makes the harness's bridge drop node n's frames in dir while the node's link
// keeps its carrier: a switch or flow-table fault, a security-group update, a migration
// blip. The node sees no link change; its frames, etcd's and the kube-apiserver's included,
// just stop. The returned heal removes the rules. Only for nodes on the harness's bridge.
func (h *Harness) Blackhole(ctx context.Context, n *Node, dir Direction) (heal func(context.Context) error, err error) {
	if h.opts.NIC != nil {
		return nil, errors.New("a blackhole needs the harness's bridge")
	}
	port := "p-" + n.name
	var rules []string
	if dir != ToNode {
		rules = append(rules, "FORWARD -i "+port+" -j DROP")
	}
	if dir != FromNode {
		rules = append(rules, "FORWARD -o "+port+" -j DROP")
	}
	// Both directions in one transaction: rules added one call at a time left the node
	// cut one way for a few hundred milliseconds on a busy machine, which is another fault.
	if err := h.ebtablesRestore(ctx, "-A", rules); err != nil {
		return nil, fmt.Errorf("blackholing %s: %w", n, err)
	}
	return func(ctx context.Context) error { return h.ebtablesRestore(ctx, "-D", rules) }, nil
}

// ebtablesRestore applies op (-A or -D) to every rule of the bridge's filter table at once.
func (h *Harness) ebtablesRestore(ctx context.Context, op string, rules []string) error {
	var in strings.Builder
	in.WriteString("*filter\n")
	for _, r := range rules {
		in.WriteString(op + " " + r + "\n")
	}
	in.WriteString("COMMIT\n")
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", h.bridge.name, "ebtables-restore", "--noflush")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ebtables-restore in %s: %w: %s", h.bridge.name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Answer is one ARP reply for the VIP that an AnswerWatch received.
type Answer struct {
	At  time.Time
	MAC net.HardwareAddr
	// Node names the node that owns MAC, "" for a foreign MAC.
	Node string
}

// AnswerWatch asks for the IPv4 VIP from the client namespace every interval and records
// who answers: what a client on the LAN resolves the VIP to, seen by nobody that takes
// part in the election. It asks from a MAC and address of its own (not the client's), so
// that the answers never touch the client's neighbour entry, which the client prober's
// outage depends on.
type AnswerWatch struct {
	conn   *packet.Conn
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	answers []Answer
	err     error
	// stopped is set by Stop before it closes the socket: the errors of a closed socket
	// (EBADF on a send under way, a read on a closed file) are then no failure.
	stopped bool
}

// watchMAC and watchHost are the watch's own MAC (locally administered) and host number
// in the subnet, neither used by any endpoint.
var watchMAC = net.HardwareAddr{0x02, 0x00, 0x5e, 0x00, 0xaa, 0x06}

const watchHost = 6

// StartAnswerWatch starts asking for the VIP every interval (default 10ms) until Stop.
func (h *Harness) StartAnswerWatch(ctx context.Context, interval time.Duration) (*AnswerWatch, error) {
	if !h.opts.VIP.Is4() {
		return nil, errors.New("the answer watch asks for an IPv4 VIP")
	}
	if interval <= 0 {
		interval = 10 * time.Millisecond
	}
	request, err := arp.NewPacket(arp.OperationRequest, watchMAC, hostAddr(h.opts.Subnet, watchHost), ethernet.Broadcast, h.opts.VIP)
	if err != nil {
		return nil, err
	}
	payload, err := request.MarshalBinary()
	if err != nil {
		return nil, err
	}
	frame, err := (&ethernet.Frame{Destination: ethernet.Broadcast, Source: watchMAC, EtherType: ethernet.EtherTypeARP, Payload: payload}).MarshalBinary()
	if err != nil {
		return nil, err
	}
	w := &AnswerWatch{}
	err = h.client.ns.do(func() error {
		ifi, err := net.InterfaceByName(Interface)
		if err != nil {
			return err
		}
		c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ARP, nil)
		if err != nil {
			return fmt.Errorf("packet socket in the client: %w", err)
		}
		// The answers go to the watch's MAC, not the client's.
		if err := c.SetPromiscuous(true); err != nil {
			_ = c.Close()
			return fmt.Errorf("promiscuous client interface: %w", err)
		}
		w.conn = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.wg.Go(func() { w.read(h) })
	w.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if _, err := w.conn.WriteTo(frame, &packet.Addr{HardwareAddr: ethernet.Broadcast}); err != nil {
				w.fail(fmt.Errorf("asking for the VIP: %w", err))
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return w, nil
}

func (w *AnswerWatch) read(h *Harness) {
	buf := make([]byte, 1500)
	for {
		n, _, err := w.conn.ReadFrom(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, net.ErrClosed) {
				w.fail(err)
			}
			return
		}
		at := time.Now()
		var f ethernet.Frame
		var p arp.Packet
		if f.UnmarshalBinary(buf[:n]) != nil || p.UnmarshalBinary(f.Payload) != nil {
			continue
		}
		if p.Operation != arp.OperationReply || p.SenderIP != h.opts.VIP || !slices.Equal(p.TargetHardwareAddr, watchMAC) {
			continue
		}
		a := Answer{At: at, MAC: slices.Clone(p.SenderHardwareAddr)}
		if node := h.NodeByMAC(a.MAC); node != nil {
			a.Node = node.name
		}
		w.mu.Lock()
		w.answers = append(w.answers, a)
		w.mu.Unlock()
	}
}

func (w *AnswerWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && !w.stopped {
		w.err = err
	}
}

// Stop ends the watch and returns every answer in arrival order, and the first error.
func (w *AnswerWatch) Stop() ([]Answer, error) {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.cancel()
	_ = w.conn.Close()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.answers), w.err
}

// Answerers lists the distinct MACs that answered at or after since, in order of their
// first answer.
func Answerers(answers []Answer, since time.Time) []string {
	var out []string
	for _, a := range answers {
		if !a.At.Before(since) && !slices.Contains(out, a.MAC.String()) {
			out = append(out, a.MAC.String())
		}
	}
	return out
}

// TwoAnswerers is how long two or more MACs answered at once: each MAC answers over runs
// of answers no more than gap apart, and the result is the time covered by runs of two
// MACs or more (each run counts from its first answer to its last).
func TwoAnswerers(answers []Answer, gap time.Duration) time.Duration {
	type run struct{ from, to time.Time }
	runs := map[string][]run{}
	for _, a := range answers {
		mac := a.MAC.String()
		rs := runs[mac]
		if len(rs) > 0 && a.At.Sub(rs[len(rs)-1].to) <= gap {
			rs[len(rs)-1].to = a.At
		} else {
			rs = append(rs, run{a.At, a.At})
		}
		runs[mac] = rs
	}
	// Sweep the run edges in time order and add up the time with two or more runs open.
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, rs := range runs {
		for _, r := range rs {
			edges = append(edges, edge{r.from, 1}, edge{r.to, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return b.delta - a.delta // a run that starts where another ends overlaps it for 0
	})
	var total time.Duration
	open := 0
	for i, e := range edges {
		if open >= 2 {
			total += e.at.Sub(edges[i-1].at)
		}
		open += e.delta
	}
	return total
}
