// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package runner runs the failover benchmark on the netns harness: it deploys a system
// under test on every node, waits for a stable VIP holder, injects the faults of the
// scenarios into the leader, and measures the client-observed outage, the time the VIP
// sat on two nodes and the steady-state cost.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/test/bench/sut"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// Deployment is one system under test running on every node of the harness. Processes
// that exit are restarted by EnsureRunning, as the kubelet would restart a container.
type Deployment struct {
	sys   sut.System
	h     *netns.Harness
	nodes []*netns.Node
	cmds  []sut.Command
	// next and previous are the commands of this release and of the previous one, for
	// systems that roll (sut.Rollable).
	next, previous []sut.Command
	onPrevious     []bool

	mu       sync.Mutex
	procs    []*netns.Process
	started  []time.Time
	restarts int
	// healed receives the heal of the blackhole in place (Blackhole), nil without one.
	healed chan error
}

// Deploy prepares and starts sys on every node; dir receives one directory per node.
func Deploy(ctx context.Context, h *netns.Harness, sys sut.System, dir string) (*Deployment, error) {
	nodes := h.Nodes()
	c := sut.Cluster{VIP: h.VIP()}
	for _, n := range nodes {
		c.Nodes = append(c.Nodes, sut.Node{Name: n.Name(), IP: n.IP(), Interface: n.Interface(), Kubeconfig: n.Kubeconfig()})
	}
	d := &Deployment{sys: sys, h: h, nodes: nodes, cmds: make([]sut.Command, len(nodes)),
		procs: make([]*netns.Process, len(nodes)), started: make([]time.Time, len(nodes))}
	for i, n := range nodes {
		nodeDir := filepath.Join(dir, slug(sys.Name()), n.Name())
		if err := os.RemoveAll(nodeDir); err != nil {
			return nil, fmt.Errorf("cleaning %s: %w", nodeDir, err)
		}
		if err := os.MkdirAll(nodeDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", nodeDir, err)
		}
		cmd, err := sys.Prepare(c, i, nodeDir)
		if err != nil {
			return nil, fmt.Errorf("%s on %s: %w", sys.Name(), n.Name(), err)
		}
		d.cmds[i] = cmd
		if r, ok := sys.(sut.Rollable); ok {
			prev, err := r.Previous(c, i, nodeDir)
			if err != nil {
				return nil, fmt.Errorf("%s on %s, previous release: %w", sys.Name(), n.Name(), err)
			}
			d.next, d.previous = append(d.next, cmd), append(d.previous, prev)
			d.onPrevious = append(d.onPrevious, false)
		}
	}
	for i := range nodes {
		if err := d.start(ctx, i); err != nil {
			return nil, errors.Join(err, d.Teardown(ctx))
		}
	}
	return d, nil
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		default:
			return '-'
		}
	}, s)
}

func (d *Deployment) start(ctx context.Context, i int) error {
	c := d.cmds[i]
	for _, f := range c.Stale {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", f, err)
		}
	}
	p, err := d.nodes[i].Start(ctx, netns.ProcessOptions{Name: slug(d.sys.Name()), Path: c.Path, Args: c.Args, Env: c.Env})
	if err != nil {
		return fmt.Errorf("starting %s on %s: %w", d.sys.Name(), d.nodes[i].Name(), err)
	}
	d.mu.Lock()
	d.procs[i], d.started[i] = p, time.Now()
	d.mu.Unlock()
	return nil
}

// System is the deployed system.
func (d *Deployment) System() sut.System { return d.sys }

// Process is the current process on node i.
func (d *Deployment) Process(i int) *netns.Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.procs[i]
}

// Restarts counts the restarts of exited processes so far.
func (d *Deployment) Restarts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.restarts
}

// touch records a change on node i (a revert) as if its process had just started.
func (d *Deployment) touch(i int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started[i] = time.Now()
}

// LastStart is the latest (re)start of any of the processes, or revert on their node.
func (d *Deployment) LastStart() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	var t time.Time
	for _, s := range d.started {
		if s.After(t) {
			t = s
		}
	}
	return t
}

// EnsureRunning restarts every process that has exited and returns how many it restarted.
func (d *Deployment) EnsureRunning(ctx context.Context) (int, error) {
	n := 0
	for i := range d.nodes {
		if !d.Process(i).Exited() {
			continue
		}
		if err := d.start(ctx, i); err != nil {
			return n, err
		}
		n++
		d.mu.Lock()
		d.restarts++
		d.mu.Unlock()
	}
	return n, nil
}

// Teardown stops every process (SIGCONT and SIGTERM, SIGKILL after 5s) and removes the
// VIP from every node.
func (d *Deployment) Teardown(ctx context.Context) error {
	var errs []error
	var wg sync.WaitGroup
	for i := range d.nodes {
		if p := d.Process(i); p != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = p.Stop(5 * time.Second)
			}()
		}
	}
	wg.Wait()
	for _, n := range d.nodes {
		if err := n.LinkUp(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := n.RemoveAddress(ctx, d.h.VIPPrefix()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Roll replaces the daemons node by node, as a DaemonSet's rolling update with
// maxUnavailable 1 does: the running daemon is stopped with SIGTERM (SIGKILL after 10 s),
// the daemon of this release (next) or of the previous one started, and the system's
// settle time waited for before the next node. Nodes that run the wanted release already
// are left alone.
func (d *Deployment) Roll(ctx context.Context, next bool) error {
	if d.next == nil {
		return fmt.Errorf("%s does not roll", d.sys.Name())
	}
	want := d.previous
	if next {
		want = d.next
	}
	for i := range d.nodes {
		d.mu.Lock()
		done := d.onPrevious[i] != next
		d.mu.Unlock()
		if done {
			continue
		}
		if err := d.Process(i).Stop(10 * time.Second); err != nil && ctx.Err() != nil {
			return err
		}
		d.mu.Lock()
		d.cmds[i] = want[i]
		d.onPrevious[i] = !next
		d.mu.Unlock()
		if err := d.start(ctx, i); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.sys.Settle()):
		}
	}
	return nil
}

// nodeIndex returns the index of node n.
func (d *Deployment) nodeIndex(n *netns.Node) int {
	for i, x := range d.nodes {
		if x == n {
			return i
		}
	}
	return -1
}

// Blackhole cuts node i off at L2 with its carrier up, both ways, and heals the cut dur
// later, whatever the run does meanwhile; Healed waits for that heal.
func (d *Deployment) Blackhole(ctx context.Context, i int, dur time.Duration) error {
	heal, err := d.h.Blackhole(ctx, d.nodes[i], netns.BothWays)
	if err != nil {
		return err
	}
	healed := make(chan error, 1)
	time.AfterFunc(dur, func() { healed <- heal(context.WithoutCancel(ctx)) })
	d.mu.Lock()
	d.healed = healed
	d.mu.Unlock()
	return nil
}

// Healed waits until the cut of Blackhole healed and returns the heal's error; nil at once
// without a cut.
func (d *Deployment) Healed(ctx context.Context) error {
	d.mu.Lock()
	healed := d.healed
	d.healed = nil
	d.mu.Unlock()
	if healed == nil {
		return nil
	}
	select {
	case err := <-healed:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
