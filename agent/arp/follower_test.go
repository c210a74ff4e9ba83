// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package arp

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// scriptedProbe answers its first drain with a holder, then fails its send once: the
// socket goes (the link went down and up) and the prober opens a new one.
type scriptedProbe struct {
	mu     sync.Mutex
	drains int
	failed *bool
}

func (p *scriptedProbe) drain() ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drains++
	if p.drains == 1 && !*p.failed {
		return []string{"02:00:00:00:00:01"}, nil
	}
	return nil, nil
}

func (p *scriptedProbe) send() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drains == 2 && !*p.failed {
		*p.failed = true
		return errors.New("network is down")
	}
	return nil
}

func (p *scriptedProbe) Close() error { return nil }

// What a follower heard before its probe's socket went away does not count after it opens
// a new one: it heard the holder, then its link flapped, and it hears nothing since. Taking
// the Lease on that old answer would move the VIP to a node that may not forward.
func TestProberForgetsWhatItHeardBeforeItReopened(t *testing.T) {
	failed := false
	var mu sync.Mutex
	opened := 0
	p := NewProber("eth0", netip.MustParseAddr("192.0.2.10"), nil, logr.Discard())
	p.open = func(string, netip.Addr) (probe, error) {
		mu.Lock()
		defer mu.Unlock()
		opened++
		return &scriptedProbe{failed: &failed}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx, func() bool { return true }) }()
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		n := opened
		mu.Unlock()
		if heard, since := p.Silence(); n >= 2 && !since.IsZero() {
			cancel()
			<-done
			if !heard.IsZero() {
				t.Fatalf("after the probe's socket was opened again, the holder still counts as heard at %s (silence since %s)",
					heard.Format(time.StampMilli), since.Format(time.StampMilli))
			}
			return
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the prober opened %d sockets in 2 s, want 2", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
