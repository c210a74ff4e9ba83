// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// Steady is the steady-state cost of a system, measured over a window without faults.
type Steady struct {
	Window time.Duration `json:"window"`
	// LeaseRequests is the growth of apiserver_request_total{resource="leases"}, summed
	// over all apiservers, during the window.
	LeaseRequests float64 `json:"leaseRequests"`
	// RequestsPerSecond is LeaseRequests per second less the apiservers' own lease
	// traffic (BaselinePerSecond, measured with no system running).
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	BaselinePerSecond float64 `json:"baselinePerSecond"`
	// RSSBytes is the resident set of each node's daemon (summed over its process group)
	// at the end of the window, in node order.
	RSSBytes []int64 `json:"rssBytes"`
	// BinaryBytes is the size of the daemon's executable.
	BinaryBytes int64 `json:"binaryBytes"`
	// HolderChanges counts changes of the VIP holder set during the window (flapping).
	HolderChanges int `json:"holderChanges"`
}

// MaxRSS is the largest per-node resident set.
func (s Steady) MaxRSS() int64 {
	var m int64
	for _, r := range s.RSSBytes {
		m = max(m, r)
	}
	return m
}

// LeaseRequests returns the sum over all apiservers of apiserver_request_total for the
// resource leases.
func (r *Runner) LeaseRequests(ctx context.Context) (float64, error) {
	var sum float64
	for _, n := range r.h.Nodes() {
		v, err := leaseRequests(ctx, n)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func leaseRequests(ctx context.Context, n *netns.Node) (float64, error) {
	cs, err := kubernetes.NewForConfig(n.RESTConfig())
	if err != nil {
		return 0, fmt.Errorf("%s: client: %w", n.Name(), err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: scraping apiserver metrics: %w", n.Name(), err)
	}
	return sumCounter(raw, "apiserver_request_total", "resource", "leases")
}

// sumCounter sums the counter family name over the series whose label has value.
func sumCounter(text []byte, name, label, value string) (float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return 0, fmt.Errorf("parsing metrics: %w", err)
	}
	fam, ok := fams[name]
	if !ok {
		return 0, fmt.Errorf("metric %s not found", name)
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				sum += m.GetCounter().GetValue()
				break
			}
		}
	}
	return sum, nil
}

// Baseline measures the apiservers' own lease requests per second over window, with no
// system under test running.
func (r *Runner) Baseline(ctx context.Context, window time.Duration) (float64, error) {
	before, err := r.LeaseRequests(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(window)
	after, err := r.LeaseRequests(ctx)
	if err != nil {
		return 0, err
	}
	return (after - before) / time.Since(start).Seconds(), nil
}

// Steady measures d over window after waiting for a stable holder.
func (r *Runner) Steady(ctx context.Context, d *Deployment, window time.Duration, baseline float64) (Steady, error) {
	if _, err := r.WaitStable(ctx, d, 90*time.Second); err != nil {
		return Steady{}, err
	}
	s := Steady{Window: window, BaselinePerSecond: baseline}
	bin := d.sys.Binary()
	if !filepath.IsAbs(bin) {
		if p, err := exec.LookPath(bin); err == nil {
			bin = p
		}
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return s, fmt.Errorf("binary of %s: %w", d.sys.Name(), err)
	}
	s.BinaryBytes = fi.Size()

	sampler := r.h.StartHolderSampler(ctx, netns.SamplerOptions{Interval: 20 * time.Millisecond})
	before, err := r.LeaseRequests(ctx)
	if err != nil {
		sampler.Stop()
		return s, err
	}
	start := time.Now()
	time.Sleep(window)
	after, err := r.LeaseRequests(ctx)
	elapsed := time.Since(start)
	sr := sampler.Stop()
	if err != nil {
		return s, err
	}
	s.LeaseRequests = after - before
	s.RequestsPerSecond = max(0, s.LeaseRequests/elapsed.Seconds()-baseline)
	s.HolderChanges = max(0, len(sr.Changes)-1)
	for i := range d.nodes {
		rss, err := groupRSS(d.Process(i).PID())
		if err != nil {
			return s, fmt.Errorf("%s on %s: %w", d.sys.Name(), d.nodes[i].Name(), err)
		}
		s.RSSBytes = append(s.RSSBytes, rss)
	}
	return s, nil
}

// groupRSS sums VmRSS of every process in process group pgid.
func groupRSS(pgid int) (int64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("reading /proc: %w", err)
	}
	var total int64
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		g, err := processGroup(pid)
		if err != nil || g != pgid {
			continue
		}
		rss, err := vmRSS(pid)
		if err != nil {
			continue // exited meanwhile
		}
		total += rss
		found = true
	}
	if !found {
		return 0, fmt.Errorf("no process in group %d", pgid)
	}
	return total, nil
}

// processGroup reads the pgrp field of /proc/<pid>/stat.
func processGroup(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces; fields follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(f[2]) // state, ppid, pgrp
}

func vmRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS of %d: %w", pid, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}
