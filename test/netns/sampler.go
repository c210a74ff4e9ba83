// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"net/netip"
	"slices"
	"time"
)

// SamplerOptions configure a holder sampler.
type SamplerOptions struct {
	// Interval between two sweeps over all nodes; default 5ms.
	Interval time.Duration
}

// HolderChange is a moment when the set of nodes holding the VIP changed.
type HolderChange struct {
	At      time.Time
	Holders []string
}

// Overlap is a moment when two or more nodes held the same VIP at the same time.
type Overlap struct {
	At      time.Time
	Holders []string
	// VIP is the address they held.
	VIP netip.Addr
}

// SamplerReport is what a holder sampler saw.
type SamplerReport struct {
	Start, End time.Time
	// Sweeps is the number of sweeps over all nodes.
	Sweeps int
	// Changes lists every change of the holder set, the first entry being the set at start.
	Changes []HolderChange
	// Overlaps lists the confirmed instants with more than one holder.
	Overlaps []Overlap
	// Partial counts the sweeps that found a node holding some of the harness's VIPs but
	// not all (only with Options.VIP6): a takeover adds them one after another, so a sweep
	// may fall between the two writes; a node that keeps only one is a defect.
	Partial int
	// Errors counts failed sweeps; FirstError is the first of them.
	Errors     int
	FirstError string
}

// Span is a stretch of time.
type Span struct{ From, To time.Time }

// TwoHolderSpans are the stretches in which the sampler's changes had the VIP on two nodes
// or more (unconfirmed sweeps included), in order.
func (r SamplerReport) TwoHolderSpans() []Span {
	var out []Span
	for i, c := range r.Changes {
		if len(c.Holders) < 2 {
			continue
		}
		end := r.End
		if i+1 < len(r.Changes) {
			end = r.Changes[i+1].At
		}
		out = append(out, Span{From: c.At, To: end})
	}
	return out
}

// TwoHolders is the time the VIP was on two nodes or more by the sampler's changes
// (unconfirmed sweeps included).
func (r SamplerReport) TwoHolders() time.Duration {
	var total time.Duration
	for _, s := range r.TwoHolderSpans() {
		total += s.To.Sub(s.From)
	}
	return total
}

// MaxHolders is the largest holder set seen.
func (r SamplerReport) MaxHolders() int {
	m := 0
	for _, c := range r.Changes {
		m = max(m, len(c.Holders))
	}
	return m
}

// HolderSampler polls every node's addresses for the VIP in the background.
type HolderSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	report SamplerReport
}

// StartHolderSampler samples who holds the VIP until Stop (or ctx ends). One sweep
// reads the nodes one after another over netlink. A sweep that finds two holders re-reads
// all but the last one found: a node that still holds the VIP then held it before and after
// the other one was seen holding it, and only such confirmed instants count as overlaps.
func (h *Harness) StartHolderSampler(ctx context.Context, opts SamplerOptions) *HolderSampler {
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &HolderSampler{cancel: cancel, done: make(chan struct{})}
	// The first sweep happens before StartHolderSampler returns, so the timeline starts
	// with the holders as they were before whatever the caller does next.
	s.report.Start = time.Now()
	s.sweep(h)
	go s.run(ctx, h, opts)
	return s
}

func (s *HolderSampler) run(ctx context.Context, h *Harness, opts SamplerOptions) {
	defer close(s.done)
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.report.End = time.Now()
			return
		case <-tick.C:
			s.sweep(h)
		}
	}
}

// sweep reads every node once and records changes and overlaps.
func (s *HolderSampler) sweep(h *Harness) {
	r := &s.report
	at := time.Now()
	vips := h.VIPs()
	var holders []*Node
	byVIP := map[netip.Addr][]*Node{}
	partial := false
	for _, n := range h.Nodes() {
		held, err := n.HeldVIPs()
		if err != nil {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = err.Error()
			}
			return
		}
		if len(held) > 0 {
			holders = append(holders, n)
			partial = partial || len(held) < len(vips)
		}
		for _, vip := range held {
			byVIP[vip] = append(byVIP[vip], n)
		}
	}
	r.Sweeps++
	if partial {
		r.Partial++
	}
	names := Names(holders)
	if len(r.Changes) == 0 || !slices.Equal(names, r.Changes[len(r.Changes)-1].Holders) {
		r.Changes = append(r.Changes, HolderChange{At: at, Holders: names})
	}
	for _, vip := range vips {
		if nodes := byVIP[vip]; len(nodes) > 1 {
			if confirmed := confirmOverlap(vip, nodes); len(confirmed) > 1 {
				r.Overlaps = append(r.Overlaps, Overlap{At: at, Holders: confirmed, VIP: vip})
			}
		}
	}
}

// confirmOverlap re-reads every holder of vip but the last one of a sweep and returns those
// still holding it plus the last one.
func confirmOverlap(vip netip.Addr, holders []*Node) []string {
	last := holders[len(holders)-1]
	var out []string
	for _, n := range holders[:len(holders)-1] {
		if ok, err := n.HasAddress(vip); err == nil && ok {
			out = append(out, n.name)
		}
	}
	return append(out, last.name)
}

// Stop stops sampling and returns the report.
func (s *HolderSampler) Stop() SamplerReport {
	s.cancel()
	<-s.done
	return s.report
}
