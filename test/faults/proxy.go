// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package faults is a fault-injecting HTTP proxy in front of a Keystone and a Neutron. A
// client authenticates through the proxy's Keystone address; the proxy rewrites the
// network endpoint of the token's service catalog to its own Neutron address, so that every
// Neutron call goes through it too. Each call is recorded; at a chosen index of the
// mutating calls (anything but GET and HEAD) the proxy injects a fault.
package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Kind is the kind of fault.
type Kind string

const (
	// Status500 answers with HTTP 500 without forwarding the call.
	Status500 Kind = "500"
	// Status409 answers with a Neutron 409 Conflict without forwarding the call.
	Status409 Kind = "409"
	// Status412 answers with a Neutron 412 PreconditionFailed without forwarding the call.
	Status412 Kind = "412"
	// Reset closes the connection without forwarding the call.
	Reset Kind = "reset"
	// ResponseLost forwards the call, so that Neutron executes it, and then closes the
	// connection instead of answering.
	ResponseLost Kind = "response-lost"
	// Stall holds the call without forwarding it until the client gives up.
	Stall Kind = "stall"
	// LateCommit holds the call until the client gave up and its retry has listed the
	// same collection, and forwards it right before the retry's next call of that
	// collection (Fault.CommitBefore): the call commits between two steps of the retry,
	// after it looked for the result and before it acts on what it found. The retry's list
	// is the first GET of the collection answered after the held call arrived: its client
	// waits for the held call until it gives up, so it assumes that nothing else lists
	// that collection on the proxy meanwhile.
	LateCommit Kind = "late-commit"
	// Crash calls the proxy's crash hook (which kills the client process) before the call
	// reaches Neutron and then resets the connection; until Resume, every further call is
	// reset as well.
	Crash Kind = "crash"
	// CrashAfter forwards the call, so that Neutron executes it, and then crashes like
	// Crash before the client sees the response.
	CrashAfter Kind = "crash-after"
)

// Kinds are the faults that a client must survive with a retry (Crash and LateCommit
// need special set-up).
var Kinds = []Kind{Status500, Status409, Status412, Reset, ResponseLost, Stall}

// Call is one request that passed the proxy.
type Call struct {
	// Service is "identity" or "network".
	Service string
	Method  string
	// Class is the path with IDs replaced by {id}, without the query.
	Class string
	// Status is the HTTP status returned to the client; 0 when the connection was closed.
	Status int
	// Upstream is the HTTP status Neutron returned for a call whose response the client
	// never saw (ResponseLost, LateCommit, CrashAfter); 0 otherwise.
	Upstream int
	// Fault is the fault injected, if any.
	Fault Kind
	// Mutating tells whether the call counts for Fault.Index.
	Mutating bool
	// Index is the index among mutating calls, -1 for others.
	Index int
	At    time.Time
}

func (c Call) String() string { return c.Method + " " + c.Class }

// Fault injects Kind at the Index-th mutating call (from 0) after Arm.
type Fault struct {
	Kind  Kind
	Index int
	// Call, when set (as Call.String gives it: "PUT /v2.0/ports/{id}"), makes Index count
	// only the mutating calls of that method and class: a client that makes independent
	// calls at once keeps their order among the calls of one kind only.
	Call string
	// CommitBefore is, for LateCommit, the method of the retry's call that the held call
	// commits before: "" for the next mutating call, http.MethodGet for the next read.
	CommitBefore string
}

// hits tells whether the fault is to be injected at call, the nth mutating call of its
// method and class.
func (f *Fault) hits(call Call, nth int) bool {
	switch {
	case f == nil:
		return false
	case f.Call != "":
		return f.Call == call.String() && f.Index == nth
	default:
		return f.Index == call.Index
	}
}

// lateCommitTimeout bounds how long a held call waits for the retry's next call of its
// collection; it commits anyway then.
const lateCommitTimeout = 30 * time.Second

// lateCommit is a held call waiting for the retry's list of its collection and then for
// the next call of its collection that before takes. It is registered when the held call
// arrives, and the calls that follow mark and take it in their own request path: a list
// answered, or a retry's next call sent, while the held call's handler has not yet seen
// its client go away is not missed.
type lateCommit struct {
	collection string
	before     func(*http.Request) bool
	// listed: a GET of the collection was answered after the held call arrived. The
	// client waits for the held call until it gives up, so that is its retry's list.
	listed bool
	once   sync.Once
	commit func()
	done   chan struct{}
}

func (l *lateCommit) run() {
	l.once.Do(func() {
		l.commit()
		close(l.done)
	})
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	keystone, neutron *url.URL

	identity, network *server

	mu       sync.Mutex
	calls    []Call
	mutating int
	// perCall counts the mutating calls of each method and class, for Fault.Call.
	perCall map[string]int
	fault   *Fault
	crashed bool
	// OnCrash is called for a Crash fault before the connection is reset.
	onCrash func()
	late    *lateCommit
	// slow holds the answers to the calls of a method and class (Call.String) this long,
	// to widen a race between two clients.
	slow map[string]time.Duration
}

type server struct {
	listener net.Listener
	http     *http.Server
	url      string
}

// New starts a proxy for the given Keystone (v3 URL, e.g. http://127.0.0.1:5000/v3) and
// Neutron base URL. Close stops it.
func New(keystoneURL, neutronURL string) (*Proxy, error) {
	k, err := url.Parse(keystoneURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the Keystone URL: %w", err)
	}
	n, err := url.Parse(strings.TrimSuffix(neutronURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("parsing the Neutron URL: %w", err)
	}
	p := &Proxy{keystone: k, neutron: n, perCall: map[string]int{}}
	if p.identity, err = p.serve("identity", k); err != nil {
		return nil, err
	}
	if p.network, err = p.serve("network", n); err != nil {
		p.identity.close()
		return nil, err
	}
	return p, nil
}

func (p *Proxy) serve(service string, target *url.URL) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for %s: %w", service, err)
	}
	upstream := &url.URL{Scheme: target.Scheme, Host: target.Host}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = target.Host
		},
		ErrorLog: nil,
	}
	if service == "identity" {
		rp.ModifyResponse = p.rewriteCatalog
	}
	s := &server{listener: l, url: "http://" + l.Addr().String()}
	s.http = &http.Server{Handler: p.handler(service, rp), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(l) }()
	return s, nil
}

func (s *server) close() { _ = s.http.Close() }

// Close stops the proxy and breaks all its connections.
func (p *Proxy) Close() {
	p.identity.close()
	p.network.close()
}

// KeystoneURL is the Keystone URL to give the client: the upstream's path on the proxy.
func (p *Proxy) KeystoneURL() string { return p.identity.url + p.keystone.Path }

// NeutronURL is the proxy's address of Neutron, as it appears in rewritten catalogs.
func (p *Proxy) NeutronURL() string { return p.network.url + p.neutron.Path }

// Arm sets the fault for the following calls and resets the call record; nil disarms.
// Mutating calls are counted from 0 again.
func (p *Proxy) Arm(f *Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
	p.calls = nil
	p.mutating = 0
	p.perCall = map[string]int{}
}

// Slow forwards every later call of a method and class (as Call.String gives it: "GET
// /v2.0/ports") at once and holds Neutron's answer for d: what the client acts on is d old,
// so two clients that each list and then create interleave as they do only now and then
// at full speed. A slow list does not count as the list a LateCommit waits for.
func (p *Proxy) Slow(call string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slow == nil {
		p.slow = map[string]time.Duration{}
	}
	p.slow[call] = d
}

// OnCrash sets the function that a Crash fault calls, e.g. to SIGKILL the client process.
func (p *Proxy) OnCrash(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onCrash = f
}

// Resume ends the outage that a Crash fault started: calls are forwarded again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.crashed = false
}

// Calls returns the calls since the last Arm.
func (p *Proxy) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// Mutating returns the mutating calls since the last Arm, in order.
func (p *Proxy) Mutating() []Call {
	var out []Call
	for _, c := range p.Calls() {
		if c.Mutating {
			out = append(out, c)
		}
	}
	return out
}

// Injected tells whether the armed fault was injected.
func (p *Proxy) Injected() bool {
	for _, c := range p.Calls() {
		if c.Fault != "" {
			return true
		}
	}
	return false
}

var idSegment = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$|^[0-9a-f]{32}$`)

// PathClass replaces the ID segments of a path with {id}.
func PathClass(path string) string {
	parts := strings.Split(path, "/")
	for i, s := range parts {
		if idSegment.MatchString(s) {
			parts[i] = "{id}"
		}
	}
	return strings.Join(parts, "/")
}

func (p *Proxy) handler(service string, rp *httputil.ReverseProxy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: a held call is forwarded after its client went away.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			resetConnection(w)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		call := Call{Service: service, Method: r.Method, Class: PathClass(r.URL.Path), Index: -1, At: time.Now()}
		// A login is a POST, but not a change of state: only Neutron writes count.
		call.Mutating = service == "network" && r.Method != http.MethodGet && r.Method != http.MethodHead

		p.mu.Lock()
		crashed := p.crashed
		var (
			fault        Kind
			commitBefore string
		)
		if call.Mutating && !crashed {
			call.Index = p.mutating
			p.mutating++
			nth := p.perCall[call.String()]
			p.perCall[call.String()]++
			if p.fault.hits(call, nth) {
				fault, commitBefore = p.fault.Kind, p.fault.CommitBefore
			}
		}
		onCrash, slow := p.onCrash, p.slow[call.String()]
		if fault == Crash || fault == CrashAfter {
			p.crashed = true
		}
		p.mu.Unlock()
		call.Fault = fault
		if l := p.takeLate(r); l != nil {
			l.run()
		}

		rec := &statusRecorder{ResponseWriter: w}
		switch {
		case crashed:
			resetConnection(w)
			call.Fault = Crash
		case fault == Crash || fault == CrashAfter:
			if fault == CrashAfter {
				call.Upstream = forward(rp, r)
			}
			// Recorded before the crash: a test reads the calls as soon as its client
			// process is gone, which may be before this handler runs on.
			p.record(call)
			if onCrash != nil {
				onCrash()
			}
			resetConnection(w)
			return
		case fault == Status500:
			writeNeutronError(rec, http.StatusInternalServerError, "HTTPInternalServerError", "injected internal error")
		case fault == Status409:
			writeNeutronError(rec, http.StatusConflict, "Conflict", "injected conflict")
		case fault == Status412:
			writeNeutronError(rec, http.StatusPreconditionFailed, "PreconditionFailed", "injected precondition failure")
		case fault == Reset:
			resetConnection(w)
		case fault == ResponseLost:
			call.Upstream = forward(rp, r)
			resetConnection(w)
		case fault == Stall:
			<-r.Context().Done()
		case fault == LateCommit:
			late := r.Clone(context.WithoutCancel(r.Context()))
			late.Body = io.NopCloser(bytes.NewReader(body))
			// Recorded as it commits, in the request path of the call it commits before: the
			// client's retry goes on from there, and a test reads the record as soon as the
			// retry succeeded, which may be before this handler sees its client gone.
			p.holdUntilNextCall(r.Context(), collection(call.Class), commitBefore, func() {
				call.Upstream = forward(rp, late)
				p.record(call)
			})
			return
		case slow > 0:
			answerLate(rec, rp, r, slow)
		default:
			rp.ServeHTTP(rec, r)
			if r.Method == http.MethodGet {
				p.listed(call.Class)
			}
		}
		call.Status = rec.status
		p.record(call)
	})
}

// answerLate forwards r at once and hands Neutron's answer to w d later, or not at all
// when the client gives up first.
func answerLate(w http.ResponseWriter, rp *httputil.ReverseProxy, r *http.Request, d time.Duration) {
	answer := httptest.NewRecorder()
	rp.ServeHTTP(answer, r)
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		resetConnection(w)
		return
	}
	maps.Copy(w.Header(), answer.Header())
	w.WriteHeader(answer.Code)
	_, _ = w.Write(answer.Body.Bytes())
}

// record adds a call to the proxy's list.
func (p *Proxy) record(call Call) {
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
}

// forward sends r to the upstream and returns the status of the response, which it
// drops.
func forward(rp *httputil.ReverseProxy, r *http.Request) int {
	s := newSink()
	rp.ServeHTTP(s, r)
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// listed marks the held call's list as answered when class is of its collection.
func (p *Proxy) listed(class string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.late != nil && p.late.collection == collection(class) {
		p.late.listed = true
	}
}

// collection is the collection path of a class: /v2.0/ports/{id} → /v2.0/ports.
func collection(class string) string {
	return strings.TrimSuffix(class, "/{id}")
}

// holdUntilNextCall holds a call whose client waits on held: once a list of the collection
// was answered, commit runs right before the next call of the collection with the method
// before ("" for any mutating method) reaches Neutron, or lateCommitTimeout after the
// client gave up. It returns once commit has run.
func (p *Proxy) holdUntilNextCall(held context.Context, collection, before string, commit func()) {
	l := &lateCommit{
		collection: collection,
		before: func(r *http.Request) bool {
			if before == "" {
				return r.Method != http.MethodGet && r.Method != http.MethodHead
			}
			return r.Method == before
		},
		commit: commit,
		done:   make(chan struct{}),
	}
	p.mu.Lock()
	p.late = l
	p.mu.Unlock()
	<-held.Done()
	select {
	case <-l.done:
	case <-time.After(lateCommitTimeout):
		p.mu.Lock()
		if p.late == l {
			p.late = nil
		}
		p.mu.Unlock()
		l.run()
	}
}

// takeLate returns the held call that must commit before r, if any.
func (p *Proxy) takeLate(r *http.Request) *lateCommit {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.late
	if l == nil || !l.listed || l.collection != collection(PathClass(r.URL.Path)) || !l.before(r) {
		return nil
	}
	p.late = nil
	return l
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// sink takes a response that the client never sees, and keeps its status.
type sink struct {
	header http.Header
	status int
}

func newSink() *sink                        { return &sink{header: http.Header{}} }
func (d *sink) Header() http.Header         { return d.header }
func (d *sink) Write(b []byte) (int, error) { return len(b), nil }
func (d *sink) WriteHeader(code int)        { d.status = code }

func writeNeutronError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"NeutronError": map[string]string{"type": typ, "message": message, "detail": ""}})
}

// resetConnection closes the client's connection without a response (RST where the OS
// allows it).
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// rewriteCatalog points the network endpoints of a token's catalog at the proxy.
func (p *Proxy) rewriteCatalog(resp *http.Response) error {
	if resp.Request.Method != http.MethodPost || !strings.HasSuffix(resp.Request.URL.Path, "/auth/tokens") || resp.StatusCode/100 != 2 {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the token: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("decoding the token: %w", err)
	}
	token, _ := doc["token"].(map[string]any)
	catalog, _ := token["catalog"].([]any)
	rewritten := 0
	for _, svc := range catalog {
		s, _ := svc.(map[string]any)
		if s["type"] != "network" {
			continue
		}
		endpoints, _ := s["endpoints"].([]any)
		for _, ep := range endpoints {
			e, _ := ep.(map[string]any)
			if u, ok := e["url"].(string); ok && strings.HasPrefix(u, p.neutron.Scheme+"://"+p.neutron.Host) {
				e["url"] = p.network.url + strings.TrimPrefix(u, p.neutron.Scheme+"://"+p.neutron.Host)
				rewritten++
			}
		}
	}
	if rewritten == 0 {
		return errors.New("the token's catalog has no network endpoint of the proxied Neutron")
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", fmt.Sprint(len(out)))
	return nil
}
