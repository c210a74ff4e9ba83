// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// ProbeMode is what one probe does.
type ProbeMode string

const (
	// ProbeTCP opens a TCP connection to the target and closes it.
	ProbeTCP ProbeMode = "tcp"
	// ProbeHTTPS sends GET https://<target><Path> and wants status 200. The server's
	// certificate is checked against the harness CA when the control plane runs.
	ProbeHTTPS ProbeMode = "https"
)

// ProbeOptions configure a prober. It stops by itself after Count probes or after
// Duration, whichever comes first; at least one of them must be set.
type ProbeOptions struct {
	// Mode defaults to ProbeTCP.
	Mode ProbeMode
	// Target defaults to the VIP, at the kube-apiservers' port (Options.APIServerPort).
	Target netip.AddrPort
	// Path for ProbeHTTPS; default "/readyz".
	Path string
	// ServerName is the name ProbeHTTPS verifies the serving certificate for; default the
	// target's address. Through a floating IP, which no serving certificate carries, it is
	// the VIP.
	ServerName string
	// Interval between probe starts; default 10ms. Probes start on schedule even while
	// earlier ones are still waiting for their answer (at most Timeout/Interval at once),
	// so the resolution of an outage is Interval, not Timeout.
	Interval time.Duration
	// Timeout of one probe; default 200ms.
	Timeout time.Duration
	// Count bounds the number of probes.
	Count int
	// Duration bounds the probing time.
	Duration time.Duration
}

// Outage is a run of failed probes, in the order the probes started.
type Outage struct {
	// Start is when the first failed probe of the run started.
	Start time.Time
	// End is when the first successful probe after the run started; zero if probing
	// ended during the outage.
	End time.Time
	// Failed is the number of failed probes in the run.
	Failed int
	// FirstError is the error of the first failed probe.
	FirstError string
}

// Duration is End - Start, or 0 for an outage that did not end while probing.
func (o Outage) Duration() time.Duration {
	if o.End.IsZero() {
		return 0
	}
	return o.End.Sub(o.Start)
}

// Open reports whether probing ended during the outage.
func (o Outage) Open() bool { return o.End.IsZero() }

// ProbeResult is what a prober saw.
type ProbeResult struct {
	Start, End time.Time
	Probes     int
	Failures   int
	Outages    []Outage
}

// Longest is the longest closed outage.
func (r ProbeResult) Longest() time.Duration {
	var d time.Duration
	for _, o := range r.Outages {
		d = max(d, o.Duration())
	}
	return d
}

// Prober probes a target from the client namespace in the background.
type Prober struct {
	cancel context.CancelFunc
	done   chan struct{}
	result ProbeResult
}

// StartProber starts probing. It returns at once; Wait returns the result.
func (c *Client) StartProber(ctx context.Context, opts ProbeOptions) (*Prober, error) {
	if opts.Count <= 0 && opts.Duration <= 0 {
		return nil, errors.New("prober needs Count or Duration")
	}
	if opts.Mode == "" {
		opts.Mode = ProbeTCP
	}
	if !opts.Target.IsValid() {
		opts.Target = netip.AddrPortFrom(c.h.opts.VIP, c.h.opts.APIServerPort)
	}
	if opts.Path == "" {
		opts.Path = "/readyz"
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Millisecond
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 200 * time.Millisecond
	}
	probe, err := c.probeFunc(opts)
	if err != nil {
		return nil, err
	}
	var cancel context.CancelFunc
	if opts.Duration > 0 {
		ctx, cancel = context.WithTimeout(ctx, opts.Duration)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	p := &Prober{cancel: cancel, done: make(chan struct{})}
	go p.run(ctx, opts, probe)
	return p, nil
}

func (p *Prober) run(ctx context.Context, opts ProbeOptions, probe func(context.Context) error) {
	defer close(p.done)
	defer p.cancel()
	type record struct {
		start time.Time
		err   error
	}
	var (
		mu      sync.Mutex
		records []record
		wg      sync.WaitGroup
	)
	r := &p.result
	r.Start = time.Now()
	next := r.Start
	for i := 0; opts.Count <= 0 || i < opts.Count; i++ {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		next = start.Add(opts.Interval)
		mu.Lock()
		idx := len(records)
		records = append(records, record{start: start})
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Not bound to ctx: a probe in flight when probing ends still gets its verdict.
			pctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
			defer cancel()
			err := probe(pctx)
			mu.Lock()
			records[idx].err = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.End = time.Now()

	var cur *Outage
	for _, rec := range records {
		r.Probes++
		switch {
		case rec.err != nil:
			r.Failures++
			if cur == nil {
				cur = &Outage{Start: rec.start, FirstError: rec.err.Error()}
			}
			cur.Failed++
		case cur != nil:
			cur.End = rec.start
			r.Outages = append(r.Outages, *cur)
			cur = nil
		}
	}
	if cur != nil {
		r.Outages = append(r.Outages, *cur)
	}
}

func (c *Client) probeFunc(opts ProbeOptions) (func(context.Context) error, error) {
	target := opts.Target.String()
	switch opts.Mode {
	case ProbeTCP:
		return func(ctx context.Context) error {
			conn, err := c.DialContext(ctx, "tcp", target)
			if err != nil {
				return err
			}
			return conn.Close()
		}, nil
	case ProbeHTTPS:
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: opts.ServerName}
		if c.h.pki != nil {
			pool := x509.NewCertPool()
			pool.AddCert(c.h.pki.ca.cert)
			tlsConfig.RootCAs = pool
		} else {
			tlsConfig.InsecureSkipVerify = true //nolint:gosec // no CA without control plane
		}
		hc := c.HTTPClient(0, &http.Transport{TLSClientConfig: tlsConfig})
		url := "https://" + target + opts.Path
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return errors.New("status " + strconv.Itoa(resp.StatusCode))
			}
			return nil
		}, nil
	default:
		return nil, fmt.Errorf("unknown probe mode %q", opts.Mode)
	}
}

// Stop ends probing early and returns the result.
func (p *Prober) Stop() ProbeResult {
	p.cancel()
	return p.Wait()
}

// Wait waits until the prober has stopped by itself and returns the result.
func (p *Prober) Wait() ProbeResult {
	<-p.done
	return p.result
}
