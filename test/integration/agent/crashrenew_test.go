// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// TestCrashWhileARenewalIsOnTheWire kills the leader's agent while its renewal of the Lease
// is on the way, through a proxy between the agent and its node's kube-apiserver.
//
// When the write commits, followers take over a lease duration after it, so the VIP must
// live on from the renewal's start: the old node keeps it at least a lifetime after the
// write left. That lifetime outlives the takeover, so the VIP is on no node only for the
// new leader's guard verdict (its silence and one probe interval), whatever the phase.
//
// When it does not commit, followers take over a lease duration after the previous write,
// while the old node's kernel still holds the VIP that the renewal's start refreshed: the
// new leader's guard must wait for it, with the old holder's ARP replies 40 ms late and 2 %
// lost. Both NICs are read every millisecond; never two holders.
func TestCrashWhileARenewalIsOnTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	h, traps, c := startTrappedCluster(ctx, t, "kvcr-")
	timings := timing.Defaults()
	const rounds = 3

	t.Run("the renewal commits", func(t *testing.T) {
		for round := range rounds {
			old := prepareLeader(ctx, t, h, c)
			shot, rep := crashInRenewal(ctx, t, h, c, traps[old.Name()], crashAfterCommit)
			if shot.status != http.StatusOK {
				t.Fatalf("round %d: the trapped renewal was answered %d, want 200", round, shot.status)
			}
			gone, back, newHolder := handover(t, rep, old.Name())
			write := shot.answered.Sub(shot.arrived)
			earliestGone := shot.arrived.Add(timings.VIPLifetime - timing.KernelExpiryEarliness - sendAllowance)
			// The old VIP outlives the earliest takeover (V > L), so the new leader is already
			// probing when it goes: the VIP is on no node only for the guard's verdict.
			bound := timing.TakeoverSilence + timing.TakeoverProbeInterval + takeoverAllowance
			t.Logf("round %d: renewal written in %s; old VIP on %s gone %s after the write arrived, on %s %s later (bound %s); changes %s",
				round, write.Round(time.Millisecond), old, gone.Sub(shot.arrived).Round(time.Millisecond),
				newHolder, back.Sub(gone).Round(time.Millisecond), bound.Round(time.Millisecond), changes(rep))
			if gone.Before(earliestGone) {
				t.Errorf("round %d: the old VIP went %s after the committed renewal left, want at least %s: its lifetime did not start with the renewal",
					round, gone.Sub(shot.arrived).Round(time.Millisecond), earliestGone.Sub(shot.arrived).Round(time.Millisecond))
			}
			if gap := back.Sub(gone); gap > bound {
				t.Errorf("round %d: the VIP was on no node for %s, want at most %s", round, gap.Round(time.Millisecond), bound.Round(time.Millisecond))
			}
		}
	})

	t.Run("the renewal never commits", func(t *testing.T) {
		for round := range rounds {
			old := prepareLeader(ctx, t, h, c)
			impaired, err := h.ImpairARP(ctx, old, netns.Impairment{Delay: 40 * time.Millisecond, Loss: 0.02})
			if err != nil {
				t.Fatal(err)
			}
			shot, rep := crashInRenewal(ctx, t, h, c, traps[old.Name()], crashUncommitted)
			relayed, dropped, err := impaired.Stop(ctx)
			if err != nil {
				t.Error(err)
			}
			gone, back, newHolder := handover(t, rep, old.Name())
			acquired := leaseAcquired(ctx, t, h.Node(newHolder))
			t.Logf("round %d: old VIP on %s gone %s after the write arrived (never forwarded); %s took the Lease %s before that and had the VIP %s after it; %d ARP frames relayed, %d dropped; changes %s",
				round, old, gone.Sub(shot.arrived).Round(time.Millisecond), newHolder, gone.Sub(acquired).Round(time.Millisecond),
				back.Sub(gone).Round(time.Millisecond), relayed, dropped, changes(rep))
			// The renewal's start refreshed the old VIP; the takeover came a lease duration
			// after the previous renewal, so the new leader's guard must have waited for it.
			if !acquired.Before(gone) {
				t.Errorf("round %d: %s took the Lease %s after the old VIP went: the guard was not put to the test",
					round, newHolder, acquired.Sub(gone).Round(time.Millisecond))
			}
		}
	})
}

// startTrappedCluster starts the agents of a new control plane, each talking to its node's
// kube-apiserver through a renewal trap.
func startTrappedCluster(ctx context.Context, t *testing.T, prefix string) (*netns.Harness, map[string]*renewalTrap, *agent.Cluster) {
	t.Helper()
	h := netns.NewForTest(t, netns.Options{Prefix: prefix, ControlPlane: true})
	traps := map[string]*renewalTrap{}
	for _, n := range h.Nodes() {
		traps[n.Name()] = startRenewalTrap(ctx, t, h, n)
	}
	c := agent.NewCluster(h, agentBin)
	c.Kubeconfig = func(n *netns.Node) string { return traps[n.Name()].kubeconfig }
	if err := c.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	return h, traps, c
}

// leaseAcquired reads the Lease through via's kube-apiserver and returns its acquireTime
// (the nodes share the host's clock).
func leaseAcquired(ctx context.Context, t *testing.T, via *netns.Node) time.Time {
	t.Helper()
	lease, err := leaseVia(t, via)(ctx)
	if err != nil {
		t.Fatalf("reading the Lease via %s: %v", via, err)
	}
	if lease.Spec.AcquireTime == nil {
		t.Fatalf("the Lease has no acquireTime")
	}
	return lease.Spec.AcquireTime.Time
}

// sendAllowance is the most the test allows from the agent's refresh right before the write
// to the write's arrival at the proxy: client-go's encoding and one local hop, under load.
const sendAllowance = 100 * time.Millisecond

// takeoverAllowance covers what the bound of a crash leaves out: the follower's watch event,
// its takeover write, the keeper's callback and the sampler's own lag, on a loaded machine.
const takeoverAllowance = 150 * time.Millisecond

func prepareLeader(ctx context.Context, t *testing.T, h *netns.Harness, c *agent.Cluster) *netns.Node {
	t.Helper()
	restoreNodes(ctx, t, h, c)
	leader, err := c.WaitStable(ctxFor(t, ctx, time.Minute), 2*time.Second)
	if err != nil {
		t.Fatalf("no stable leader: %v", err)
	}
	return leader
}

// crashInRenewal arms the leader's trap, waits for the crash and the takeover, and returns
// what the trap saw and the holder timeline (both NICs read every millisecond), which must
// never show two holders.
func crashInRenewal(ctx context.Context, t *testing.T, h *netns.Harness, c *agent.Cluster, trap *renewalTrap, mode trapMode) (trapShot, netns.SamplerReport) {
	t.Helper()
	old := trap.node
	sampler := h.StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
	fired := trap.arm(mode, c.Agent(old).Kill)
	var shot trapShot
	select {
	case shot = <-fired:
	case <-time.After(10 * time.Second):
		sampler.Stop()
		trap.disarm()
		t.Fatalf("%s's agent wrote no Lease in 10s", old)
	}
	_, err := h.WaitSingleHolder(ctxFor(t, ctx, takeoverTimeout), func(n *netns.Node) bool { return n != old })
	time.Sleep(settle)
	rep := sampler.Stop()
	if err != nil {
		t.Fatalf("no takeover from %s: %v; changes %s", old, err, changes(rep))
	}
	assertNoOverlap(t, rep)
	return shot, rep
}

// handover finds, in the timeline, when the old holder's VIP went and when another node
// had it next.
func handover(t *testing.T, rep netns.SamplerReport, old string) (gone, back time.Time, newHolder string) {
	t.Helper()
	for _, ch := range rep.Changes {
		switch {
		case gone.IsZero() && !slices.Contains(ch.Holders, old):
			gone = ch.At
			if len(ch.Holders) == 1 {
				return gone, ch.At, ch.Holders[0]
			}
		case !gone.IsZero() && len(ch.Holders) == 1:
			return gone, ch.At, ch.Holders[0]
		}
	}
	t.Fatalf("no handover from %s in %s", old, changes(rep))
	return
}

type trapMode int

const (
	// crashAfterCommit forwards the Lease write and kills the agent before it sees the answer.
	crashAfterCommit trapMode = iota
	// crashUncommitted kills the agent and drops the write: it never reaches the kube-apiserver.
	crashUncommitted
)

// trapShot is what the trap saw of the write it caught.
type trapShot struct {
	arrived  time.Time // the write reached the proxy
	answered time.Time // the kube-apiserver answered (crashAfterCommit only)
	status   int
}

type trapArm struct {
	mode  trapMode
	kill  func()
	fired chan trapShot
}

// renewalTrap is a proxy between a node's agent and its kube-apiserver: plain HTTP inside the
// node's namespace towards the agent, TLS with the admin's certificate towards the
// kube-apiserver. Once armed, it crashes the agent on its next write of the Lease.
type renewalTrap struct {
	node       *netns.Node
	kubeconfig string
	upstream   http.RoundTripper
	target     *url.URL

	mu    sync.Mutex
	armed *trapArm
	stall *stallArm // etcdrace_test.go
}

func startRenewalTrap(ctx context.Context, t *testing.T, h *netns.Harness, n *netns.Node) *renewalTrap {
	t.Helper()
	cfg := n.RESTConfig()
	upstream, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	l, err := n.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &renewalTrap{node: n, upstream: upstream, target: target,
		kubeconfig: filepath.Join(h.Dir(), n.Name()+"-trapped.kubeconfig")}
	if err := writePlainKubeconfig(p.kubeconfig, "http://"+l.Addr().String()); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

func writePlainKubeconfig(path, server string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["trap"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["trap"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["trap"] = &clientcmdapi.Context{Cluster: "trap", AuthInfo: "trap"}
	cfg.CurrentContext = "trap"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// arm makes the next Lease write spring the trap: kill is called (and must return only once
// the agent is dead) before the agent can see any answer.
func (p *renewalTrap) arm(mode trapMode, kill func()) <-chan trapShot {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = &trapArm{mode: mode, kill: kill, fired: make(chan trapShot, 1)}
	return p.armed.fired
}

func (p *renewalTrap) disarm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = nil
}

func (p *renewalTrap) take() *trapArm {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.armed
	p.armed = nil
	return a
}

func (p *renewalTrap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/leases/"+agent.LeaseName) {
		if p.stalls(w, r) {
			return
		}
		if a := p.take(); a != nil {
			p.spring(r, a)
			panic(http.ErrAbortHandler) // the connection closes without an answer
		}
	}
	resp, err := p.forward(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	copyFlushing(w, resp)
}

func (p *renewalTrap) spring(r *http.Request, a *trapArm) {
	shot := trapShot{arrived: time.Now()}
	if a.mode == crashAfterCommit {
		resp, err := p.forward(r)
		shot.answered = time.Now()
		if err == nil {
			shot.status = resp.StatusCode
			_ = resp.Body.Close()
		}
	}
	a.kill()
	a.fired <- shot
}

func (p *renewalTrap) forward(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Host = ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	resp, err := p.upstream.RoundTrip(out)
	if err != nil {
		return nil, fmt.Errorf("forwarding %s %s: %w", r.Method, r.URL.Path, err)
	}
	return resp, nil
}

// copyFlushing copies the body and flushes after every read, so that watch events pass at
// once.
func copyFlushing(w http.ResponseWriter, resp *http.Response) {
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return // the end of the body, or the connection closed
		}
	}
}
