// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric names of the instrumented transport.
const (
	MetricRequestsTotal   = "kube_vip_openstack_requests_total"
	MetricRequestDuration = "kube_vip_openstack_request_duration_seconds"
)

// Service label values.
const (
	ServiceIdentity = "identity"
	ServiceNetwork  = "network"
	ServiceOther    = "other"
)

// Metrics counts and times the OpenStack API calls. Create one per registry with
// NewMetrics; its read methods let tests assert call budgets.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequestsTotal,
			Help: "OpenStack API requests by service, operation (method and resource kind) and HTTP status code.",
		}, []string{"service", "operation", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestDuration,
			Help:    "Duration of OpenStack API requests by service and operation.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"service", "operation"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

// Call is one counted series of the requests counter.
type Call struct {
	Service   string
	Operation string
	Code      string
	Count     int
}

// Calls returns the current value of every series of the requests counter.
func (m *Metrics) Calls() []Call {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		m.requests.Collect(ch)
		close(ch)
	}()
	var calls []Call
	for metric := range ch {
		var pb dto.Metric
		if err := metric.Write(&pb); err != nil {
			continue
		}
		c := seriesOf(&pb)
		c.Count = int(pb.GetCounter().GetValue())
		calls = append(calls, c)
	}
	return calls
}

// seriesOf is the series a metric of the requests counter or the duration histogram
// belongs to, by its labels.
func seriesOf(pb *dto.Metric) Call {
	var c Call
	for _, l := range pb.GetLabel() {
		switch l.GetName() {
		case "service":
			c.Service = l.GetValue()
		case "operation":
			c.Operation = l.GetValue()
		case "code":
			c.Code = l.GetValue()
		}
	}
	return c
}

// SnapshotOf sums the requests counter as another process exposes it (the family
// MetricRequestsTotal scraped from its metrics endpoint), as Snapshot does.
func SnapshotOf(requests *dto.MetricFamily) Snapshot {
	s := Snapshot{}
	for _, pb := range requests.GetMetric() {
		c := seriesOf(pb)
		s[c.Service+" "+c.Operation] += int(pb.GetCounter().GetValue())
	}
	return s
}

// Snapshot is the number of calls per "service operation" (e.g. "network POST ports").
type Snapshot map[string]int

// Snapshot sums the calls per service and operation over all codes.
func (m *Metrics) Snapshot() Snapshot {
	s := Snapshot{}
	for _, c := range m.Calls() {
		s[c.Service+" "+c.Operation] += c.Count
	}
	return s
}

// Seconds returns the time spent in requests per "service operation" (e.g. "network
// POST ports"), summed over all requests so far.
func (m *Metrics) Seconds() map[string]float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		m.duration.Collect(ch)
		close(ch)
	}()
	seconds := map[string]float64{}
	for metric := range ch {
		var pb dto.Metric
		if err := metric.Write(&pb); err != nil {
			continue
		}
		c := seriesOf(&pb)
		seconds[c.Service+" "+c.Operation] += pb.GetHistogram().GetSampleSum()
	}
	return seconds
}

// Sub returns the calls made since the earlier snapshot.
func (s Snapshot) Sub(earlier Snapshot) Snapshot {
	d := Snapshot{}
	for k, v := range s {
		if n := v - earlier[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// Add returns the calls of both snapshots together, e.g. of two controller processes.
func (s Snapshot) Add(other Snapshot) Snapshot {
	sum := maps.Clone(s)
	if sum == nil {
		sum = Snapshot{}
	}
	for k, v := range other {
		sum[k] += v
	}
	return sum
}

// Total is the number of calls in the snapshot.
func (s Snapshot) Total() int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// Writes is the number of calls in the snapshot that may change something, i.e. all but
// GET and HEAD. Token requests (identity POST auth/tokens) are not counted as writes.
func (s Snapshot) Writes() int {
	n := 0
	for k, v := range s {
		parts := strings.SplitN(k, " ", 3)
		if len(parts) < 2 || parts[1] == http.MethodGet || parts[1] == http.MethodHead {
			continue
		}
		if parts[0] == ServiceIdentity {
			continue
		}
		n += v
	}
	return n
}

// InstrumentedTransport counts and times every request it forwards to Next.
type InstrumentedTransport struct {
	Next    http.RoundTripper
	Metrics *Metrics
}

// RoundTrip implements http.RoundTripper.
func (t *InstrumentedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	service, operation := classifyRequest(req)
	start := time.Now()
	resp, err := t.Next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.Metrics.requests.WithLabelValues(service, operation, code).Inc()
	t.Metrics.duration.WithLabelValues(service, operation).Observe(time.Since(start).Seconds())
	return resp, err
}

var idSegment = regexp.MustCompile(`^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})$`)

// classifyRequest derives the service and the operation (method and resource kind, without
// IDs) from a request URL, e.g. ("network", "PUT ports") for /v2.0/ports/<id>.
func classifyRequest(req *http.Request) (string, string) {
	segments := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	service, start := ServiceOther, -1
	for i, s := range segments {
		switch s {
		case "v2.0":
			service, start = ServiceNetwork, i+1
		case "v3", "v2":
			service, start = ServiceIdentity, i+1
		}
		if start >= 0 {
			break
		}
	}
	var kind []string
	if start >= 0 {
		for _, s := range segments[start:] {
			if s == "" || idSegment.MatchString(s) {
				continue
			}
			kind = append(kind, strings.TrimSuffix(s, ".json"))
		}
	}
	resource := strings.Join(kind, "/")
	if resource == "" {
		resource = "/"
	}
	return service, req.Method + " " + resource
}
