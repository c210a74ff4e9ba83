// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package health

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// EtcdLeaderConfig configures an EtcdLeader.
type EtcdLeaderConfig struct {
	// Client reads the metrics; the metrics listener needs no credentials (gardenadm's
	// etcd serves them on plain HTTP on localhost:2381).
	Client *http.Client
	// URL is the local etcd member's metrics URL, for example http://127.0.0.1:2381/metrics.
	URL string
	// Period is the interval between two reads while nothing changes and this node
	// leads the agents' election (Leading); FollowerPeriod while it does not. A follower
	// reads more often: it needs a fresh answer at the moment it may take over, and it
	// sends no other request in the steady state.
	Period, FollowerPeriod time.Duration
	// Leading reports whether this node leads the agents' election; nil means never.
	Leading func() bool
	// Confirm is how long after a read that first found the local member leading a second
	// read must still find it leading before Leads reports it. A leadership that an etcd
	// election gives this member for a moment only never moves the VIP.
	Confirm time.Duration
	// Timeout bounds one read.
	Timeout time.Duration
	// Observe is called after every read with what Leads reports now and the read's
	// error; may be nil.
	Observe func(leads bool, err error)
	Clock   clock.WithTicker
	Log     logr.Logger
}

// EtcdLeader tells whether this node's etcd member leads the etcd cluster, from the
// member's own metric etcd_server_is_leader. A node whose etcd leads should not hold the VIP
// while another node can: when that node fails, etcd's own election (a second or more)
// comes before any Lease write can succeed, on top of the Lease's expiry.
//
// Unknown (the metrics cannot be read) counts as not leading, so that a node without such
// an etcd (or with another port) behaves as if the feature were off.
type EtcdLeader struct {
	cfg EtcdLeaderConfig

	mu sync.Mutex
	// seen: the last read found the member leading; confirmed: two reads at least Confirm
	// apart did, without a read in between that did not.
	seen, confirmed bool
	lastErr         string
}

// NewEtcdLeader returns an EtcdLeader.
func NewEtcdLeader(cfg EtcdLeaderConfig) (*EtcdLeader, error) {
	if cfg.Client == nil || cfg.URL == "" {
		return nil, errors.New("a client and a URL are required")
	}
	if cfg.Period <= 0 || cfg.FollowerPeriod <= 0 || cfg.Confirm <= 0 || cfg.Timeout <= 0 {
		return nil, fmt.Errorf("the periods (%s, %s), the confirmation delay (%s) and the timeout (%s) must be positive",
			cfg.Period, cfg.FollowerPeriod, cfg.Confirm, cfg.Timeout)
	}
	if cfg.Leading == nil {
		cfg.Leading = func() bool { return false }
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &EtcdLeader{cfg: cfg}, nil
}

// Leads reports whether the local etcd member leads, as confirmed by two reads.
func (e *EtcdLeader) Leads() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.confirmed
}

// Yield is election.Config.Yield: a leader yields only to a confirmed etcd leadership
// (hysteresis: a moment's leadership does not move the VIP), a follower defers on the last
// read alone (deferring costs only a short delay when nobody else takes over).
func (e *EtcdLeader) Yield(leading bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if leading {
		return e.confirmed
	}
	return e.seen
}

// Run reads the metric until ctx is done: every FollowerPeriod while this node does not lead,
// every Period while it leads, and Confirm after a read that first found the member leading.
// The interval follows the node's leading state as it changes, not as it was at the last
// read: a node that stopped leading must know its member's leadership before it may take the
// Lease again (it defers then), and one that started leading reads once more at
// FollowerPeriod, since its last read as a follower may predate the etcd election that a
// failover brings.
func (e *EtcdLeader) Run(ctx context.Context) {
	var last, next time.Time // next zero: read at once
	var confirmNext, wasLeading bool
	for {
		if leading := e.cfg.Leading(); leading != wasLeading {
			// Either way the last read predates this state: the next is due as a follower's.
			next, wasLeading = last.Add(e.interval(false, confirmNext)), leading
		}
		if now := e.cfg.Clock.Now(); !now.Before(next) {
			last, confirmNext = now, e.readOnce(ctx)
			next = last.Add(e.interval(wasLeading, confirmNext))
		}
		select {
		case <-ctx.Done():
			return
		case <-e.cfg.Clock.After(max(0, min(leadingPoll, next.Sub(e.cfg.Clock.Now())))):
		}
	}
}

// leadingPoll is how often Run looks at whether this node leads, between reads.
const leadingPoll = 250 * time.Millisecond

// interval is the time from one read to the next.
func (e *EtcdLeader) interval(leading, confirmNext bool) time.Duration {
	switch {
	case confirmNext:
		return e.cfg.Confirm
	case leading:
		return e.cfg.Period
	}
	return e.cfg.FollowerPeriod
}

// readOnce reads the metric once and reports whether a confirming read is due.
func (e *EtcdLeader) readOnce(ctx context.Context) (confirmNext bool) {
	leads, err := e.read(ctx)
	if ctx.Err() != nil {
		return false
	}
	e.mu.Lock()
	defer func() {
		confirmed := e.confirmed
		e.mu.Unlock()
		if e.cfg.Observe != nil {
			e.cfg.Observe(confirmed, err)
		}
	}()
	if err != nil {
		if msg := err.Error(); msg != e.lastErr {
			// An error, not a note: the yield is off on this node until the read succeeds.
			e.cfg.Log.Error(err, "Cannot read the local etcd member's metrics; counting it as a follower, so the etcd-leader yield is off on this node")
			e.lastErr = msg
		}
	} else {
		e.lastErr = ""
	}
	before := e.confirmed
	e.confirmed = leads && e.seen
	confirmNext = leads && !e.seen
	e.seen = leads
	if before != e.confirmed {
		e.cfg.Log.Info("Local etcd leadership changed", "leads", e.confirmed)
	}
	return confirmNext
}

// read fetches the metrics and returns etcd_server_is_leader.
func (e *EtcdLeader) read(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cfg.URL, nil)
	if err != nil {
		return false, err
	}
	resp, err := e.cfg.Client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s answered %s", e.cfg.URL, resp.Status)
	}
	return parseIsLeader(bufio.NewScanner(resp.Body))
}

const isLeaderMetric = "etcd_server_is_leader"

// parseIsLeader finds the sample of etcd_server_is_leader in Prometheus text format.
func parseIsLeader(s *bufio.Scanner) (bool, error) {
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		rest, ok := strings.CutPrefix(line, isLeaderMetric)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if rest != "" && rest[0] == '{' {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return false, fmt.Errorf("malformed sample %q", line)
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return false, fmt.Errorf("malformed sample %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return false, fmt.Errorf("malformed sample %q: %w", line, err)
		}
		return v == 1, nil
	}
	if err := s.Err(); err != nil {
		return false, err
	}
	return false, fmt.Errorf("no %s in the metrics", isLeaderMetric)
}
