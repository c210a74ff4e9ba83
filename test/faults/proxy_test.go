// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package faults

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPathClass(t *testing.T) {
	for in, want := range map[string]string{
		"/v2.0/ports": "/v2.0/ports",
		"/v2.0/ports/0b5c8d4e-5f1a-4c39-8d8e-1c2b3a4d5e6f":      "/v2.0/ports/{id}",
		"/v2.0/ports/0b5c8d4e-5f1a-4c39-8d8e-1c2b3a4d5e6f/tags": "/v2.0/ports/{id}/tags",
		"/v3/auth/tokens": "/v3/auth/tokens",
	} {
		if got := PathClass(in); got != want {
			t.Errorf("PathClass(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestProxy checks the catalog rewrite, the call record and the injection of a fault at
// the chosen index of the mutating calls, against stand-ins for Keystone and Neutron.
func TestProxy(t *testing.T) {
	var executed atomic.Int32
	neutron := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			executed.Add(1)
		}
		_, _ = io.WriteString(w, `{}`)
	}))
	defer neutron.Close()
	keystone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"token":{"catalog":[{"type":"network","endpoints":[{"url":"`+neutron.URL+`/"}]},{"type":"identity","endpoints":[{"url":"http://keystone"}]}]}}`)
	}))
	defer keystone.Close()

	p, err := New(keystone.URL+"/v3", neutron.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	resp, err := http.Post(p.KeystoneURL()+"/auth/tokens", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), p.NeutronURL()) || strings.Contains(string(body), neutron.URL) {
		t.Fatalf("catalog not rewritten to %s: %s", p.NeutronURL(), body)
	}

	p.Arm(&Fault{Kind: Status500, Index: 1})
	status := func(method string) int {
		req, _ := http.NewRequest(method, p.NeutronURL()+"/v2.0/ports", strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	got := []int{status(http.MethodGet), status(http.MethodPost), status(http.MethodPost), status(http.MethodPost)}
	if want := []int{200, 200, 500, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if n := executed.Load(); n != 2 {
		t.Errorf("Neutron executed %d writes, want 2 (the faulted one is not forwarded)", n)
	}
	if m := p.Mutating(); len(m) != 3 || m[1].Fault != Status500 || m[1].Index != 1 {
		t.Errorf("mutating calls %+v", m)
	}

	// By method and class: the second PUT, whatever the POSTs around it.
	p.Arm(&Fault{Kind: Status500, Index: 1, Call: "PUT /v2.0/ports"})
	got = []int{status(http.MethodPut), status(http.MethodPost), status(http.MethodPost), status(http.MethodPut), status(http.MethodPut)}
	if want := []int{200, 200, 200, 500, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses with the fault on the second PUT %v, want %v", got, want)
	}

	p.Arm(&Fault{Kind: ResponseLost, Index: 0})
	before := executed.Load()
	if s := status(http.MethodPost); s != 0 {
		t.Errorf("a lost response reached the client with %d", s)
	}
	if n := executed.Load() - before; n != 1 {
		t.Errorf("Neutron executed %d writes, want 1 (a lost response is executed)", n)
	}

	// A crash: by the time the client process is gone (the callback kills it), the faulted
	// call is recorded, since a test reads Injected as soon as the process has exited.
	for _, kind := range []Kind{Crash, CrashAfter} {
		p.Arm(&Fault{Kind: kind, Index: 0})
		var injectedAtCrash atomic.Bool
		p.OnCrash(func() { injectedAtCrash.Store(p.Injected()) })
		if s := status(http.MethodPost); s != 0 {
			t.Errorf("%s: the crashed call reached the client with %d", kind, s)
		}
		if !injectedAtCrash.Load() {
			t.Errorf("%s: the crash callback ran before the faulted call was recorded", kind)
		}
		p.OnCrash(nil)
		p.Resume()
	}
}

// TestLateCommit checks where a held call lands among its client's retry: after the
// retry's first list of the collection, right before its next call of the chosen method.
func TestLateCommit(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string
	)
	neutron := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		order = append(order, r.Method+" "+r.URL.RawQuery)
		mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}))
	defer neutron.Close()
	p, err := New("http://127.0.0.1:1/v3", neutron.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	call := func(timeout time.Duration, method, query string) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, p.NeutronURL()+"/v2.0/floatingips?"+query, strings.NewReader(`{}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}
	for _, tc := range []struct {
		before string
		retry  []string // method and query of the retry's calls
		want   []string
	}{
		{before: http.MethodGet, retry: []string{"GET marked", "GET port", "POST second"}, want: []string{"GET marked", "POST first", "GET port", "POST second"}},
		{before: "", retry: []string{"GET marked", "GET port", "POST second"}, want: []string{"GET marked", "GET port", "POST first", "POST second"}},
	} {
		mu.Lock()
		order = nil
		mu.Unlock()
		p.Arm(&Fault{Kind: LateCommit, Index: 0, CommitBefore: tc.before})
		call(300*time.Millisecond, http.MethodPost, "first")
		for _, c := range tc.retry {
			method, query, _ := strings.Cut(c, " ")
			call(5*time.Second, method, query)
		}
		mu.Lock()
		got := slices.Clone(order)
		mu.Unlock()
		if !slices.Equal(got, tc.want) {
			t.Errorf("CommitBefore %q: Neutron saw %q, want %q", tc.before, got, tc.want)
		}
	}

	// The held call is in the record once it committed, although its handler has not seen
	// its client go away yet (a loaded machine notices late): a test reads the record as
	// soon as the client's retry succeeded.
	p.Arm(&Fault{Kind: LateCommit, Index: 0, CommitBefore: http.MethodGet})
	heldCtx, giveUp := context.WithCancel(context.Background())
	heldDone := make(chan struct{})
	go func() {
		defer close(heldDone)
		req, _ := http.NewRequestWithContext(heldCtx, http.MethodPost, p.NeutronURL()+"/v2.0/floatingips?first", strings.NewReader(`{}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	defer func() { giveUp(); <-heldDone }()
	for arrived := false; !arrived; time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		arrived = p.late != nil
		p.mu.Unlock()
	}
	call(5*time.Second, http.MethodGet, "marked")
	call(5*time.Second, http.MethodGet, "port")
	if !slices.ContainsFunc(p.Calls(), func(c Call) bool { return c.Fault == LateCommit && c.Upstream == http.StatusOK }) {
		t.Errorf("after the retry's call that the held call commits before, the record has no committed held call: %+v", p.Calls())
	}
}

// TestSlow checks that a slow call reaches Neutron at once and its answer reaches the
// client late: a write made meanwhile is not in it.
func TestSlow(t *testing.T) {
	var writes atomic.Int32
	answered := make(chan struct{}, 1)
	neutron := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		w.Header().Set("X-Writes", strconv.Itoa(int(writes.Load())))
		_, _ = io.WriteString(w, `{}`)
		if r.Method == http.MethodGet {
			answered <- struct{}{}
		}
	}))
	defer neutron.Close()
	p, err := New(neutron.URL+"/v3", neutron.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const lag = 300 * time.Millisecond
	p.Slow("GET /v2.0/ports", lag)

	start := time.Now()
	listed := make(chan string)
	go func() {
		resp, err := http.Get(p.NeutronURL() + "/v2.0/ports")
		if err != nil {
			listed <- err.Error()
			return
		}
		_ = resp.Body.Close()
		listed <- resp.Header.Get("X-Writes")
	}()
	// Once Neutron has answered the list, a write goes through at full speed.
	select {
	case <-answered:
	case <-time.After(lag / 2):
		t.Fatalf("Neutron had not got the slow list %s after it was sent: it is to be forwarded at once", lag/2)
	}
	resp, err := http.Post(p.NeutronURL()+"/v2.0/ports", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := <-listed; got != "0" {
		t.Errorf("the slow list saw %q writes, want 0: it was answered before the write", got)
	}
	if took := time.Since(start); took < lag {
		t.Errorf("the slow list was answered after %s, want at least %s", took, lag)
	}
}
