// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	// NodeRequestsPerSecond is, per node in node order, every request its apiserver served
	// per second during the window (apiserver_request_total over all resources, /readyz
	// and the other non-resource paths, without the bench's own /metrics scrapes), less
	// the same measured with no system running (Rates.Node). Each daemon talks to its own
	// node's apiserver only, so this is its request rate: probes, Lease reads, writes and
	// watches together.
	NodeRequestsPerSecond []float64 `json:"nodeRequestsPerSecond,omitempty"`
	// AgentRequestsPerSecond is, per node in node order, the requests per second the
	// daemon itself counted during the window (kube_vip_agent_requests_total on its
	// metrics address: every HTTP request to any kube-apiserver and to the local etcd
	// member's metrics); nil for systems without that counter.
	AgentRequestsPerSecond []float64 `json:"agentRequestsPerSecond,omitempty"`
	// CPUMillicores is, per node in node order, the CPU time of the daemon's process group
	// during the window, in thousandths of a core.
	CPUMillicores []float64 `json:"cpuMillicores,omitempty"`
	// BinaryBytes is the size of the daemon's executable.
	BinaryBytes int64 `json:"binaryBytes"`
	// HolderChanges counts changes of the VIP holder set during the window (flapping).
	HolderChanges int `json:"holderChanges"`
}

// MaxNodeRequests is the largest per-node request rate.
func (s Steady) MaxNodeRequests() float64 {
	var m float64
	for _, r := range s.NodeRequestsPerSecond {
		m = max(m, r)
	}
	return m
}

// NodeRate is the per-node request rate the steady goal is checked on: the daemons' own
// count where they keep one (exact, and it includes requests to etcd), else what the API
// servers served them (less their own traffic, which is bursty: a few tenths of error).
func (s Steady) NodeRate() float64 {
	if s.AgentRequestsPerSecond != nil {
		return s.MaxAgentRequests()
	}
	return s.MaxNodeRequests()
}

// MaxAgentRequests is the largest per-node rate the daemons counted themselves.
func (s Steady) MaxAgentRequests() float64 {
	var m float64
	for _, r := range s.AgentRequestsPerSecond {
		m = max(m, r)
	}
	return m
}

// agentMetricsURL is where kube-vip-agent serves its metrics inside each node (its default
// --metrics-address).
const agentMetricsURL = "http://127.0.0.1:9482/metrics"

// agentCount is one node's kube-vip-agent request counter and when it was read.
type agentCount struct {
	value float64
	at    time.Time
}

// agentRequests returns, per node, kube-vip-agent's own count of its requests; nil if a
// node's daemon does not serve it (another system).
func (r *Runner) agentRequests(ctx context.Context) []agentCount {
	var out []agentCount
	for _, n := range r.h.Nodes() {
		raw, err := get(ctx, n.HTTPClient(2*time.Second, &http.Transport{}), agentMetricsURL)
		if err != nil {
			return nil
		}
		// The time of the answer: the counter covers the requests up to about then.
		at := time.Now()
		v, err := sumCounter(raw, "kube_vip_agent_requests_total", "", "")
		if err != nil {
			return nil
		}
		out = append(out, agentCount{value: v, at: at})
	}
	return out
}

func get(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// MaxCPU is the largest per-node CPU use, in millicores.
func (s Steady) MaxCPU() float64 {
	var m float64
	for _, c := range s.CPUMillicores {
		m = max(m, c)
	}
	return m
}

// MaxRSS is the largest per-node resident set.
func (s Steady) MaxRSS() int64 {
	var m int64
	for _, r := range s.RSSBytes {
		m = max(m, r)
	}
	return m
}

// Requests are request counts (or, from Baseline, rates per second): the lease requests
// summed over all apiservers, and every request per node.
type Requests struct {
	Leases float64   `json:"leases"`
	Node   []float64 `json:"node"`
}

// Requests scrapes every apiserver's apiserver_request_total.
func (r *Runner) Requests(ctx context.Context) (Requests, error) {
	var q Requests
	for _, n := range r.h.Nodes() {
		leases, all, err := requests(ctx, n)
		if err != nil {
			return Requests{}, err
		}
		q.Leases += leases
		q.Node = append(q.Node, all)
	}
	return q, nil
}

// requests returns one apiserver's lease requests and all its requests except the scrapes
// of /metrics (the bench's own).
func requests(ctx context.Context, n *netns.Node) (leases, all float64, err error) {
	cs, err := kubernetes.NewForConfig(n.RESTConfig())
	if err != nil {
		return 0, 0, fmt.Errorf("%s: client: %w", n.Name(), err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: scraping apiserver metrics: %w", n.Name(), err)
	}
	if leases, err = sumCounter(raw, "apiserver_request_total", "resource", "leases"); err != nil {
		return 0, 0, err
	}
	total, err := sumCounter(raw, "apiserver_request_total", "", "")
	if err != nil {
		return 0, 0, err
	}
	scrapes, err := sumCounter(raw, "apiserver_request_total", "subresource", "/metrics")
	if err != nil {
		return 0, 0, err
	}
	return leases, total - scrapes, nil
}

// rates turns the counts before and after an interval into rates per second.
func rates(before, after Requests, d time.Duration) Requests {
	q := Requests{Leases: (after.Leases - before.Leases) / d.Seconds()}
	for i := range after.Node {
		q.Node = append(q.Node, (after.Node[i]-before.Node[i])/d.Seconds())
	}
	return q
}

// sumCounter sums the counter family name over the series whose label has value (every
// series when label is empty).
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
		if label == "" {
			sum += m.GetCounter().GetValue()
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				sum += m.GetCounter().GetValue()
				break
			}
		}
	}
	return sum, nil
}

// Baseline measures the apiservers' own requests per second over window, with no system
// under test running.
func (r *Runner) Baseline(ctx context.Context, window time.Duration) (Requests, error) {
	before, err := r.Requests(ctx)
	if err != nil {
		return Requests{}, err
	}
	start := time.Now()
	time.Sleep(window)
	after, err := r.Requests(ctx)
	if err != nil {
		return Requests{}, err
	}
	return rates(before, after, time.Since(start)), nil
}

// Steady measures d over window after waiting for a stable holder.
func (r *Runner) Steady(ctx context.Context, d *Deployment, window time.Duration, baseline Requests) (Steady, error) {
	if _, err := r.WaitStable(ctx, d, 90*time.Second); err != nil {
		return Steady{}, err
	}
	s := Steady{Window: window, BaselinePerSecond: baseline.Leases}
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
	cpuBefore, err := d.groupCPU()
	if err != nil {
		sampler.Stop()
		return s, err
	}
	before, err := r.Requests(ctx)
	if err != nil {
		sampler.Stop()
		return s, err
	}
	agentBefore := r.agentRequests(ctx)
	start := time.Now()
	time.Sleep(window)
	after, err := r.Requests(ctx)
	elapsed := time.Since(start)
	agentAfter := r.agentRequests(ctx)
	sr := sampler.Stop()
	if err != nil {
		return s, err
	}
	cpuAfter, err := d.groupCPU()
	if err != nil {
		return s, err
	}
	s.LeaseRequests = after.Leases - before.Leases
	s.RequestsPerSecond = max(0, s.LeaseRequests/elapsed.Seconds()-baseline.Leases)
	perSecond := rates(before, after, elapsed)
	for i, v := range perSecond.Node {
		if i < len(baseline.Node) {
			v -= baseline.Node[i]
		}
		s.NodeRequestsPerSecond = append(s.NodeRequestsPerSecond, max(0, v))
		s.CPUMillicores = append(s.CPUMillicores, 1000*(cpuAfter[i]-cpuBefore[i]).Seconds()/elapsed.Seconds())
	}
	if agentBefore != nil && len(agentAfter) == len(agentBefore) {
		for i := range agentAfter {
			// Over the time between this node's two reads, not the window: the reads of the
			// apiservers and of the other nodes lengthen it by tens of milliseconds.
			counted := agentAfter[i].at.Sub(agentBefore[i].at)
			s.AgentRequestsPerSecond = append(s.AgentRequestsPerSecond, (agentAfter[i].value-agentBefore[i].value)/counted.Seconds())
		}
	}
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

// groupCPU returns, per node, the CPU time (user and system) of the daemon's process group.
func (d *Deployment) groupCPU() ([]time.Duration, error) {
	var out []time.Duration
	for i := range d.nodes {
		pgid := d.Process(i).PID()
		var total time.Duration
		err := forGroup(pgid, func(pid int) {
			if c, err := cpuTime(pid); err == nil {
				total += c
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s on %s: %w", d.sys.Name(), d.nodes[i].Name(), err)
		}
		out = append(out, total)
	}
	return out, nil
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on Linux).
const clockTicks = 100

// cpuTime reads utime + stime of /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 13 {
		return 0, errors.New("malformed stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat(5)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// forGroup calls f for every process in process group pgid; an error if there is none.
func forGroup(pgid int, f func(pid int)) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("reading /proc: %w", err)
	}
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := processGroup(pid); err == nil && g == pgid {
			f(pid)
			found = true
		}
	}
	if !found {
		return fmt.Errorf("no process in group %d", pgid)
	}
	return nil
}

// groupRSS sums VmRSS of every process in process group pgid.
func groupRSS(pgid int) (int64, error) {
	var total int64
	err := forGroup(pgid, func(pid int) {
		if rss, err := vmRSS(pid); err == nil { // else exited meanwhile
			total += rss
		}
	})
	return total, err
}

// statFields returns the fields of /proc/<pid>/stat after the command name: field 3 of
// stat(5) (state) is the first.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name is in parentheses and may hold spaces; fields follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("malformed stat")
	}
	return strings.Fields(string(b[i+1:])), nil
}

// processGroup reads the pgrp field of /proc/<pid>/stat.
func processGroup(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
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
