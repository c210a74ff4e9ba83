// Package health decides whether this node may hold the VIP: its local kube-apiserver
// must answer /readyz, and its interface must be up.
package health

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
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
	// Timeout bounds one probe.
	Timeout time.Duration
	// FailureThreshold is the number of consecutive failed probes that make the API
	// server unhealthy; one success makes it healthy again.
	FailureThreshold int
	// OnChange is called, from the monitor's goroutine, when Healthy changes.
	OnChange func(healthy bool, reason string)
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
}

// New returns a Monitor. It starts unhealthy until the first probe succeeds, so that a
// node never takes over before it has seen its API server answer.
func New(cfg Config) (*Monitor, error) {
	if cfg.Client == nil || cfg.URL == "" {
		return nil, fmt.Errorf("a client and a URL are required")
	}
	if cfg.Period <= 0 || cfg.Timeout <= 0 || cfg.FailureThreshold < 1 {
		return nil, fmt.Errorf("period (%s) and timeout (%s) must be positive and the failure threshold (%d) at least 1",
			cfg.Period, cfg.Timeout, cfg.FailureThreshold)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Monitor{cfg: cfg, linkOK: true}, nil
}

// Healthy reports whether the node may hold the VIP.
func (m *Monitor) Healthy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.apiOK && m.linkOK
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

// Run probes until ctx is done.
func (m *Monitor) Run(ctx context.Context) {
	t := m.cfg.Clock.NewTicker(m.cfg.Period)
	defer t.Stop()
	for {
		m.probeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (m *Monitor) probeOnce(ctx context.Context) {
	start := m.cfg.Clock.Now()
	err := m.probe(ctx)
	if ctx.Err() != nil {
		return
	}
	if m.cfg.Observe != nil {
		m.cfg.Observe(m.cfg.Clock.Since(start), err == nil)
	}
	m.update(func() string {
		if err == nil {
			m.failures = 0
			m.apiOK = true
			return "the local kube-apiserver is ready"
		}
		m.failures++
		m.lastError = err.Error()
		if m.failures >= m.cfg.FailureThreshold {
			m.apiOK = false
		}
		return fmt.Sprintf("the local kube-apiserver failed %d probe(s): %s", m.failures, m.lastError)
	})
}

// update applies change under the lock and reports a change of Healthy.
func (m *Monitor) update(change func() (reason string)) {
	m.mu.Lock()
	before := m.apiOK && m.linkOK
	reason := change()
	after := m.apiOK && m.linkOK
	m.mu.Unlock()
	if before != after && m.cfg.OnChange != nil {
		m.cfg.OnChange(after, reason)
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
