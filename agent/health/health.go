// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package health decides whether this node may take the VIP (its local kube-apiserver
// answers /readyz and its interface is up) and whether a node that holds it may keep it.
//
// Taking and keeping differ on purpose (hysteresis). A refused connection (nothing
// listens on the API server's port) or a link without carrier ends a hold at once. An API
// server that is alive but answers "not ready", or that times out, may be suffering
// something every node suffers at the same moment (an etcd leader election, a
// defragmentation, a bad token): the holder keeps the VIP for UnreadyHold more, so that the
// VIP does not vanish cluster-wide. Whether the holder may act as leader at all is still
// decided by its Lease renewals, which such an API server must keep serving.
package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Config configures a Monitor.
type Config struct {
	// Client sends the probes; it carries the API server's CA and credentials.
	Client *http.Client
	// URL is the probed URL, for example https://127.0.0.1:6443/readyz.
	URL string
	// Period is the interval between probes.
	Period time.Duration
	// ServedCovers is how long a request the API server served for this agent (Served: a
	// Lease write, a watch event) stands in for a probe: a scheduled probe is skipped while
	// the last one is younger. Zero means Period. The agent sets it to its retry period plus
	// Period, so that a leader's renewals and a follower's watch events (one per renewal)
	// replace the probes entirely while they come.
	ServedCovers time.Duration
	// Timeout bounds one probe.
	Timeout time.Duration
	// FailureThreshold is the number of consecutive failed probes that make the API
	// server unhealthy; one success makes it healthy again. A refused connection is
	// definitive at once: nothing listens on the API server's port.
	FailureThreshold int
	// UnreadyHold is how long a holder may keep the VIP after the API server turned
	// unhealthy without refusing connections (see the package comment); 0 means no hold.
	// The hold is checked on every probe, so it ends at most a Period late.
	UnreadyHold time.Duration
	// OnChange is called, from the monitor's goroutine, when Healthy or Holdable changes.
	OnChange func(Status)
	// Observe receives the duration of every probe; may be nil.
	Observe func(d time.Duration, ok bool)
	Clock   clock.WithTicker
	Log     logr.Logger
}

// Monitor tracks the health of the local kube-apiserver and of the interface.
type Monitor struct {
	cfg Config

	mu        sync.Mutex
	apiOK     bool
	linkOK    bool
	failures  int
	lastError string
	// refused: the last probe found nothing listening; no hold applies.
	refused bool
	// unhealthySince is when apiOK last turned false; the start of the hold.
	unhealthySince time.Time
	// reported is the status OnChange last reported (both false at first).
	reported Status
	// lastServed is when the API server last served one of this agent's requests (a
	// probe, or a Lease write through Served): a scheduled probe within a period of it
	// is skipped, so that a leader's renewals replace its probes.
	lastServed time.Time
	probeNow   chan struct{}
}

// New returns a Monitor. It starts unhealthy until the first probe succeeds, so that a
// node never takes over before it has seen its API server answer.
func New(cfg Config) (*Monitor, error) {
	if cfg.Client == nil || cfg.URL == "" {
		return nil, fmt.Errorf("a client and a URL are required")
	}
	if cfg.UnreadyHold < 0 {
		return nil, fmt.Errorf("the unready hold (%s) must not be negative", cfg.UnreadyHold)
	}
	if cfg.Period <= 0 || cfg.Timeout <= 0 || cfg.FailureThreshold < 1 {
		return nil, fmt.Errorf("period (%s) and timeout (%s) must be positive and the failure threshold (%d) at least 1",
			cfg.Period, cfg.Timeout, cfg.FailureThreshold)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.ServedCovers <= 0 {
		cfg.ServedCovers = cfg.Period
	}
	return &Monitor{cfg: cfg, linkOK: true, probeNow: make(chan struct{}, 1)}, nil
}

// Status is the monitor's verdict.
type Status struct {
	// Healthy: the node may take the VIP.
	Healthy bool
	// Holdable: a node that holds the VIP may keep it.
	Holdable bool
	// Reason says what changed last.
	Reason string
}

// Healthy reports whether the node may take the VIP.
func (m *Monitor) Healthy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.apiOK && m.linkOK
}

// Holdable reports whether a node that holds the VIP may keep it: it is healthy, or its
// API server stopped being ready less than UnreadyHold ago without refusing connections,
// and the interface is up.
func (m *Monitor) Holdable() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holdableLocked()
}

func (m *Monitor) holdableLocked() bool {
	if !m.linkOK {
		return false
	}
	if m.apiOK {
		return true
	}
	return !m.refused && !m.unhealthySince.IsZero() &&
		m.cfg.Clock.Since(m.unhealthySince) < m.cfg.UnreadyHold
}

// LinkUp reports whether the interface is up.
func (m *Monitor) LinkUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.linkOK
}

// SetLink records the state of the interface.
func (m *Monitor) SetLink(up bool) {
	m.update(func() string {
		m.linkOK = up
		if up {
			return "the interface is up"
		}
		return "the interface is down"
	})
}

// ProbeNow asks for a probe at once, for example because a connection to the API server
// broke (a dying kube-apiserver closes its connections). It never blocks.
func (m *Monitor) ProbeNow() {
	select {
	case m.probeNow <- struct{}{}:
	default:
	}
}

// Served records that the API server just served a request of this agent.
func (m *Monitor) Served() {
	m.mu.Lock()
	m.lastServed = m.cfg.Clock.Now()
	m.mu.Unlock()
}

// Run probes until ctx is done: every period, unless the API server served a request
// within ServedCovers, and at once on ProbeNow.
func (m *Monitor) Run(ctx context.Context) {
	t := m.cfg.Clock.NewTicker(m.cfg.Period)
	defer t.Stop()
	m.probeOnce(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.probeNow:
			m.probeOnce(ctx)
		case <-t.C():
			m.mu.Lock()
			recent := !m.lastServed.IsZero() && m.cfg.Clock.Since(m.lastServed) < m.cfg.ServedCovers && m.apiOK
			m.mu.Unlock()
			if !recent {
				m.probeOnce(ctx)
			}
		}
	}
}

func (m *Monitor) probeOnce(ctx context.Context) {
	start := m.cfg.Clock.Now()
	err := m.probe(ctx)
	if brokenConnection(err) && ctx.Err() == nil {
		// The probe may have gone over a pooled connection that a dying API server just
		// closed; ask once more on a fresh one, which tells a dead server (refused) from
		// a live one at once.
		m.cfg.Client.CloseIdleConnections()
		err = m.probe(ctx)
	}
	if ctx.Err() != nil {
		return
	}
	if m.cfg.Observe != nil {
		m.cfg.Observe(m.cfg.Clock.Since(start), err == nil)
	}
	m.update(func() string {
		if err == nil {
			m.failures = 0
			m.apiOK, m.refused = true, false
			m.lastServed = m.cfg.Clock.Now()
			return "the local kube-apiserver is ready"
		}
		m.failures++
		m.lastError = err.Error()
		m.refused = errors.Is(err, syscall.ECONNREFUSED)
		if m.apiOK && (m.failures >= m.cfg.FailureThreshold || m.refused) {
			m.apiOK = false
			m.unhealthySince = m.cfg.Clock.Now()
		}
		return fmt.Sprintf("the local kube-apiserver failed %d probe(s): %s", m.failures, m.lastError)
	})
}

// brokenConnection reports a probe that failed in transport, neither refused nor timed out:
// typically a pooled connection that the server closed.
func brokenConnection(err error) bool {
	var uerr *url.Error
	return errors.As(err, &uerr) && !uerr.Timeout() && !errors.Is(err, syscall.ECONNREFUSED)
}

// update applies change under the lock and reports a change of Healthy or Holdable. A hold
// that ran out is reported on the first update after it did (every probe is one).
func (m *Monitor) update(change func() (reason string)) {
	m.mu.Lock()
	before := m.reported
	reason := change()
	after := Status{Healthy: m.apiOK && m.linkOK, Holdable: m.holdableLocked(), Reason: reason}
	if before.Holdable && !after.Holdable && !before.Healthy && m.linkOK && !m.refused {
		after.Reason = fmt.Sprintf("the local kube-apiserver has not been ready for %s: %s", m.cfg.UnreadyHold, m.lastError)
	}
	m.reported = after
	m.mu.Unlock()
	if (before.Healthy != after.Healthy || before.Holdable != after.Holdable) && m.cfg.OnChange != nil {
		m.cfg.OnChange(after)
	}
}

func (m *Monitor) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.cfg.URL, nil)
	if err != nil {
		return err
	}
	resp, err := m.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s", resp.Status)
	}
	return nil
}
