// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/utils/clock"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
)

// newRegistry returns the agent's registry and the registerer for its metrics: every
// series carries the node's name as the label node, so that one Prometheus scraping all
// agents tells them apart, and the Go runtime, process and build-info collectors come
// with it.
func newRegistry(node string) (*prometheus.Registry, prometheus.Registerer) {
	registry := prometheus.NewRegistry()
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"node": node}, registry)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector())
	return registry, reg
}

// metrics are the agent's Prometheus metrics. They live in a registry of the agent's own,
// not in a global one.
type metrics struct {
	isLeader         prometheus.Gauge
	transitions      prometheus.Counter
	garpSent         prometheus.Counter
	vipPresent       prometheus.Gauge
	apiserverHealthy prometheus.Gauge
	probeDuration    prometheus.Histogram
	// linkWatchRestarts counts link subscriptions the kernel ended (vip.LinkWatch).
	linkWatchRestarts prometheus.Counter
	// takeoverWaits counts the takeover guard's probes that found another host still
	// answering for the VIP; vipHeldElsewhere is 1 while this leader waits for that.
	takeoverWaits    prometheus.Counter
	vipHeldElsewhere prometheus.Gauge
	// requests counts every HTTP request the agent sends, by target (apiserver, etcd): the
	// request budget of docs/agent-reference.md.
	requests *prometheus.CounterVec
	// etcdLeader is 1 while the local etcd member leads (confirmed), else 0.
	etcdLeader prometheus.Gauge
	// etcdReadable is 1 while the last read of the local etcd member's metrics succeeded:
	// at 0 the etcd-leader yield is off, which etcdLeader alone does not show.
	etcdReadable prometheus.Gauge
	// vipInfo is 1 for each VIP of the exposure, labelled with the address and its family;
	// vipPresent and the other unlabelled metrics cover them together.
	vipInfo *prometheus.GaugeVec
	// acquisitions counts the terms this node began, by why it took the Lease
	// (election.Acquisition); guardErrors counts the takeover guard's failed probes.
	acquisitions     *prometheus.CounterVec
	guardErrors      prometheus.Counter
	clock            clock.PassiveClock
	mu               sync.Mutex
	lastTransitionAt time.Time
}

func newMetrics(reg prometheus.Registerer, clk clock.PassiveClock) *metrics {
	const ns = "kube_vip_agent"
	m := &metrics{
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "is_leader",
			Help: "1 while this node holds the Lease and with it the VIP, else 0."}),
		transitions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "leader_transitions_total",
			Help: "Number of times this node became or stopped being the leader."}),
		garpSent: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "gratuitous_arps_sent_total",
			Help: "Gratuitous ARP (or unsolicited neighbour advertisement) packets sent for the VIP."}),
		vipPresent: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "vip_present",
			Help: "1 while the VIP (every VIP of a dual-stack exposure) is configured on this node's interface, else 0."}),
		vipInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "vip_info",
			Help: "1 for each VIP this agent is configured for (--vip), labelled with the address and its family (ipv4, ipv6); it holds all of them or none."},
			[]string{"vip", "family"}),
		apiserverHealthy: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "apiserver_healthy",
			Help: "1 while the local kube-apiserver answers /readyz (and the interface is up), else 0."}),
		probeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "apiserver_probe_duration_seconds",
			Help:    "Latency of the /readyz probes of the local kube-apiserver.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}),
		linkWatchRestarts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "link_watch_restarts_total",
			Help: "Link watch subscriptions that ended with an error (typically ENOBUFS) and were renewed."}),
		takeoverWaits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "takeover_waits_total",
			Help: "Rounds of the takeover guard (one per keeper tick) in which another host claimed the VIP (ARP for IPv4, neighbour advertisements for IPv6), so that this leader did not add it yet."}),
		vipHeldElsewhere: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "vip_held_elsewhere",
			Help: "1 while this node leads but another host still answers for the VIP (a crashed or frozen former holder until the kernel removes its address, or a host that must not have it), else 0."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "HTTP requests this agent sent, by target: apiserver (Lease requests, watches, /readyz probes, through any kube-apiserver) and etcd (reads of the local etcd member's metrics)."},
			[]string{"target"}),
		etcdLeader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "etcd_leader",
			Help: "1 while the local etcd member leads the etcd cluster (confirmed by two reads), so that this node leaves the VIP to another one, else 0."}),
		etcdReadable: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "etcd_metrics_readable",
			Help: "1 while the last read of the local etcd member's metrics (--etcd-metrics-url) succeeded; 0 means the etcd-leader yield is off on this node."}),
		acquisitions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "acquisitions_total",
			Help: "Terms this node began, by why it took the Lease: release, offer, expiry, early (the holder's VIP fell silent) or own-record."},
			[]string{"reason"}),
		guardErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "guard_errors_total",
			Help: "Rounds of the takeover guard whose probe of the LAN failed (a socket error), so that this leader did not add the VIP."}),
		clock:            clk,
		lastTransitionAt: clk.Now(),
	}
	for _, r := range election.Reasons {
		m.acquisitions.WithLabelValues(r)
	}
	since := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "seconds_since_last_transition",
		Help: "Seconds since this node last became or stopped being the leader (since start if never)."},
		func() float64 {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.clock.Since(m.lastTransitionAt).Seconds()
		})
	reg.MustRegister(m.isLeader, m.transitions, m.garpSent, m.vipPresent, m.apiserverHealthy, m.probeDuration, m.linkWatchRestarts, m.takeoverWaits, m.vipHeldElsewhere, m.requests, m.etcdLeader, m.etcdReadable, m.vipInfo, m.acquisitions, m.guardErrors, since)
	return m
}

// describeVIPs sets vip_info for each of the exposure's VIPs.
func (m *metrics) describeVIPs(vips []netip.Addr) {
	for _, v := range vips {
		family := "ipv4"
		if v.Is6() {
			family = "ipv6"
		}
		m.vipInfo.WithLabelValues(v.String(), family).Set(1)
	}
}

func (m *metrics) transition(leading bool) {
	m.mu.Lock()
	m.lastTransitionAt = m.clock.Now()
	m.mu.Unlock()
	m.transitions.Inc()
	if leading {
		m.isLeader.Set(1)
	} else {
		m.isLeader.Set(0)
	}
}

// countingTransport counts every request it sends in a counter.
type countingTransport struct {
	next    http.RoundTripper
	counter prometheus.Counter
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.counter.Inc()
	return c.next.RoundTrip(req)
}

// countRequests wraps a transport so that its requests count as target's.
func (m *metrics) countRequests(target string) func(http.RoundTripper) http.RoundTripper {
	counter := m.requests.WithLabelValues(target)
	return func(next http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: next, counter: counter}
	}
}

// followerView is what the election and the follower's probers tell the metrics at a scrape.
type followerView interface {
	// heard reports, while this node probes the VIP as a follower, the seconds since the VIP
	// last answered (or since probing began) and the distinct MACs that answered in the
	// last arp.AnswerersWindow; probing is false otherwise.
	heard() (lastHeardSeconds float64, answerers int, probing bool)
	// cutOffs is how often this node, as a follower, heard its peers' probes stop (it may
	// have been cut off on L2 with its carrier up; a peer that becomes holder stops too).
	cutOffs() int
}

// observerCollector exports the follower prober's view (only while it probes, so that
// the minimum over the nodes is the followers') and the leader's stalled hold.
type observerCollector struct {
	view        followerView
	stalledHold func() time.Duration
	lastHeard   *prometheus.Desc
	answerers   *prometheus.Desc
	cutOffs     *prometheus.Desc
	stalled     *prometheus.Desc
}

func newObserverCollector(view followerView, stalledHold func() time.Duration) *observerCollector {
	return &observerCollector{
		view: view, stalledHold: stalledHold,
		lastHeard: prometheus.NewDesc("kube_vip_agent_vip_last_heard_seconds",
			"Seconds since another host last answered this follower's probe of the VIP (since probing began if none did); only while this node probes (it does not lead, its link is up).", nil, nil),
		answerers: prometheus.NewDesc("kube_vip_agent_vip_answerers",
			"Distinct MAC addresses that answered this follower's probes of the VIP in the last second; 2 or more are two hosts claiming the VIP. Only while this node probes (it does not lead, its link is up).", nil, nil),
		cutOffs: prometheus.NewDesc("kube_vip_agent_follower_cut_offs_total",
			"Times this node, as a follower, heard the other followers' probes of the VIP stop for "+timing.PeerSilence.String()+" and so forgot the holder it heard: its L2 path may drop frames with the carrier up (a switch, OVS flow or security-group fault); a peer that becomes holder, or stops, also stops probing.", nil, nil),
		stalled: prometheus.NewDesc("kube_vip_agent_stalled_hold_seconds",
			"Seconds this leader has held its term through stalled renewals (an etcd election), 0 when it does not; the hold ends by its bound (timing.StalledWriteHold after the term).", nil, nil),
	}
}

func (c *observerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lastHeard
	ch <- c.answerers
	ch <- c.cutOffs
	ch <- c.stalled
}

func (c *observerCollector) Collect(ch chan<- prometheus.Metric) {
	if seconds, answerers, probing := c.view.heard(); probing {
		ch <- prometheus.MustNewConstMetric(c.lastHeard, prometheus.GaugeValue, seconds)
		ch <- prometheus.MustNewConstMetric(c.answerers, prometheus.GaugeValue, float64(answerers))
	}
	ch <- prometheus.MustNewConstMetric(c.cutOffs, prometheus.CounterValue, float64(c.view.cutOffs()))
	ch <- prometheus.MustNewConstMetric(c.stalled, prometheus.GaugeValue, c.stalledHold().Seconds())
}
