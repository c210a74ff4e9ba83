// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/gardener/gardener-extension-kube-vip/agent/arp"
	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/agent/health"
	"github.com/gardener/gardener-extension-kube-vip/agent/peers"
	"github.com/gardener/gardener-extension-kube-vip/agent/vip"
)

// Run runs the agent until ctx is done. It returns once the VIP is off this node and the
// Lease is released (if this node held it).
func Run(ctx context.Context, log logr.Logger, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	vips := cfg.VIPs() // validated above
	iface, err := detectInterface(cfg.Interface, vips)
	if err != nil {
		return err
	}
	log = log.WithValues("node", cfg.NodeName, "vip", cfg.VIP, "interface", iface)

	restConfig, err := restConfigFor(cfg)
	if err != nil {
		return err
	}
	clk := clock.RealClock{}
	registry, registerer := newRegistry(cfg.NodeName)
	m := newMetrics(registerer, clk)
	m.describeVIPs(vips)
	restConfig.WrapTransport = m.countRequests("apiserver")
	leases, err := election.NewLeaseClient(restConfig, cfg.LeaseNamespace)
	if err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		return fmt.Errorf("building the health-check client: %w", err)
	}
	set, err := newVIPSet(iface, vips, cfg.VIPLifetime)
	if err != nil {
		return err
	}
	defer set.Close()

	n := &node{log: log, metrics: m}
	k := newKeeper(keeperOptions{
		Address: set.addresses, Announcer: set.announce, Guard: set.guard, Clock: clk, Log: log, Metrics: m,
		ARPInterval: cfg.ARPInterval, OnUnfit: n.onUnfit, OnMissing: n.onVIPMissing,
	})
	n.keeper = k
	// Whatever happens, the VIP does not outlive the agent.
	defer k.drop("the agent exits")

	monitor, err := health.New(health.Config{
		Client: httpClient, URL: readyzURL(restConfig.Host),
		Period: cfg.HealthPeriod, ServedCovers: cfg.RetryPeriod + cfg.HealthPeriod,
		Timeout: cfg.HealthTimeout, FailureThreshold: cfg.HealthFailureThreshold,
		UnreadyHold: cfg.UnreadyHold, Clock: clk, Log: log,
		Observe:  func(d time.Duration, _ bool) { m.probeDuration.Observe(d.Seconds()) },
		OnChange: n.onHealthChanged,
	})
	if err != nil {
		return err
	}
	n.monitor = monitor
	leases = &reportingLeases{LeaseClient: leases, signals: monitor}
	peerSource, err := peers.New(restConfig, peers.Options{Static: cfg.PeerAPIServerURLs, Log: log.WithName("peers")})
	if err != nil {
		return err
	}
	fallbacks := newPeerLeases(cfg, restConfig, peerSource.URLs, log)
	etcdLeader, err := newEtcdLeader(cfg, m, clk, log, n.leading.Load)
	if err != nil {
		return err
	}
	n.etcd = etcdLeader
	nic, err := net.InterfaceByName(iface)
	if err != nil {
		return fmt.Errorf("reading the MAC of %s: %w", iface, err)
	}
	elector, err := election.New(election.Config{
		Leases: leases, Fallbacks: fallbacks.clients, Name: cfg.LeaseName, Identity: cfg.NodeName,
		Timings: cfg.timings(), Clock: clk, Log: log,
		Eligible: n.eligible, MayKeep: n.mayKeep, Yield: n.yield, HoldThroughStall: n.holdThroughStall,
		VIPAnswered: set.answered, VIPSilence: set.silence, MAC: nic.HardwareAddr.String(),
		Callbacks: election.Callbacks{
			OnLeading:        n.onLeading,
			OnRenewing:       n.onRenewing,
			OnAcquiring:      n.onAcquiring,
			OnAcquireFailed:  n.onAcquireFailed,
			OnStoppedLeading: n.onStoppedLeading,
			OnNewLeader:      n.onNewLeader,
			OnAcquired:       n.onAcquired,
		},
	})
	if err != nil {
		return err
	}
	n.elector = elector
	set.listen(elector.Poke, log.WithName("prober"))
	// The holder's ear on its followers' probes: it fences the node off the VIP when they
	// stop arriving (keeper.Fence).
	ear := arp.NewListener(iface, vips, k.Fence, log.WithName("listener"))
	registerer.MustRegister(newObserverCollector(set, elector.StalledHold))
	moves, err := newMoveEvents(ctx, restConfig, cfg.NodeName, log.WithName("events"))
	if err != nil {
		return err
	}
	defer moves.shutdown()
	n.moves = moves

	if err := removeStaleVIP(ctx, log, leases, cfg, set, k); err != nil {
		return err
	}

	server := &http.Server{Addr: cfg.MetricsAddress, Handler: serveMux(registry, monitor.Healthy), ReadHeaderTimeout: 5 * time.Second}
	listener, err := net.Listen("tcp", cfg.MetricsAddress)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.MetricsAddress, err)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	linkDone := make(chan struct{})
	defer close(linkDone)
	// The watch reports the link's current state first (it lists the links), then every
	// change; a subscription that the kernel ends (ENOBUFS) is renewed and listed again.
	err = set.addrs[0].WatchLink(linkDone, vip.LinkWatch{
		OnChange: monitor.SetLink,
		OnRestart: func(err error) {
			m.linkWatchRestarts.Inc()
			log.Error(err, "The link watch ended; subscribing again and re-reading the link")
		},
	})
	if err != nil {
		return err
	}
	// A VIP removed while held is noticed at once, not at the next renewal (missing.go).
	for _, addr := range set.addrs {
		err = addr.WatchRemoval(linkDone, vip.AddressWatch{
			OnRemoved: k.VIPRemoved,
			OnRestart: func(err error) { log.Error(err, "The address watch ended; subscribing again and checking the VIP") },
		})
		if err != nil {
			return err
		}
	}

	var wg sync.WaitGroup
	var electionErr error
	wg.Go(func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "Metrics server failed")
		}
	})
	wg.Go(func() { monitor.Run(runCtx) })
	wg.Go(func() { peerSource.Run(runCtx) })
	if etcdLeader != nil {
		wg.Go(func() { etcdLeader.Run(runCtx) })
	}
	wg.Go(func() { k.Run(runCtx) })
	// A follower probes whenever its link is up, eligible or not: its probes are the
	// holder's evidence that L2 between them works (the listener), and a node whose
	// kube-apiserver is not ready (as in an etcd election) must not make the holder fence.
	// Only an eligible follower acts on what it hears (election).
	wg.Go(func() { set.runProbers(runCtx, func() bool { return !n.leading.Load() && monitor.LinkUp() }) })
	wg.Go(func() { ear.Run(runCtx, n.leading.Load) })
	wg.Go(func() {
		electionErr = elector.Run(runCtx)
		stop()
	})
	log.Info("Agent started", "leaseDuration", cfg.LeaseDuration, "renewDeadline", cfg.RenewDeadline,
		"retryPeriod", cfg.RetryPeriod, "vipLifetime", cfg.VIPLifetime)

	<-runCtx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_ = server.Shutdown(shutdownCtx)
	wg.Wait()
	log.Info("Agent stopped")
	if electionErr != nil && !errors.Is(electionErr, context.Canceled) {
		return electionErr
	}
	return nil
}

// etcdConfirm is how long after a read that first found the local etcd member leading
// a second one must still find it leading before the node yields the VIP: an etcd
// election that passes through this member for a moment never moves the VIP.
const etcdConfirm = 5 * time.Second

// etcdFollowerPeriod is how often a node that does not lead reads its etcd member's
// leadership: after a failure moved etcd's leadership, the next takeover must already know
// whom to leave the Lease to.
const etcdFollowerPeriod = 2 * time.Second

// newEtcdLeader returns the reader of the local etcd member's leadership, or nil when
// --etcd-metrics-url is empty.
func newEtcdLeader(cfg Config, m *metrics, clk clock.WithTicker, log logr.Logger, leading func() bool) (*health.EtcdLeader, error) {
	if cfg.EtcdMetricsURL == "" {
		return nil, nil
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil // the member is on this node
	client := &http.Client{Transport: m.countRequests("etcd")(transport)}
	return health.NewEtcdLeader(health.EtcdLeaderConfig{
		Client: client, URL: cfg.EtcdMetricsURL, Period: cfg.EtcdCheckPeriod, FollowerPeriod: etcdFollowerPeriod,
		Leading: leading, Confirm: etcdConfirm,
		Timeout: cfg.HealthTimeout, Clock: clk, Log: log.WithValues("etcd", cfg.EtcdMetricsURL),
		Observe: func(leads bool, err error) {
			m.etcdLeader.Set(gaugeValue(leads))
			m.etcdReadable.Set(gaugeValue(err == nil))
		},
	})
}

func gaugeValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// removeStaleVIP removes the VIPs left behind by an earlier run, unless this node holds the
// Lease: then the keeper keeps it for a lease duration, in which the election renews the
// Lease and the keeper's takeover refreshes the address (or else its sweep removes it).
func removeStaleVIP(ctx context.Context, log logr.Logger, leases election.LeaseClient, cfg Config, set *vipSet, k *keeper) error {
	present, err := set.Present()
	if err != nil || !present {
		return err
	}
	reqCtx, cancel := context.WithTimeout(ctx, cfg.RenewDeadline)
	defer cancel()
	if lease, err := leases.Get(reqCtx, cfg.LeaseName, metav1.GetOptions{}); err == nil &&
		lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == cfg.NodeName {
		k.keepFound(cfg.LeaseDuration)
		log.Info("Keeping the VIP found at start: this node holds the Lease")
		return nil
	}
	if _, err := set.addresses.Remove(); err != nil {
		return err
	}
	log.Info("Removed a stale VIP found at start")
	return nil
}

// restConfigFor returns the client configuration for the local kube-apiserver: the
// kubeconfig if one is given, else the service-account token and CA against
// APIServerURL with the configured TLS server name, so that nothing depends on
// kube-proxy, a Service ClusterIP or the VIP.
func restConfigFor(cfg Config) (*rest.Config, error) {
	if cfg.Kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		rc.UserAgent = "kube-vip-agent"
		return rc, nil
	}
	return &rest.Config{
		Host:            cfg.APIServerURL,
		BearerTokenFile: cfg.TokenFile,
		TLSClientConfig: rest.TLSClientConfig{CAFile: cfg.CAFile, ServerName: cfg.APIServerServerName},
		UserAgent:       "kube-vip-agent",
	}, nil
}

// peerTimeout bounds one request through another node's kube-apiserver.
const peerTimeout = 200 * time.Millisecond

// peerLeases builds Lease clients through the other control-plane nodes' kube-apiservers,
// for the URLs that are current at the release: the local configuration with another host,
// the TLS name of the local one where the configuration names none (the serving
// certificates all carry the kubernetes Service's names). Clients are kept per URL.
type peerLeases struct {
	cfg   Config
	local *rest.Config
	urls  func() []string
	log   logr.Logger

	mu    sync.Mutex
	byURL map[string]election.LeaseClient
}

func newPeerLeases(cfg Config, local *rest.Config, urls func() []string, log logr.Logger) *peerLeases {
	return &peerLeases{cfg: cfg, local: local, urls: urls, log: log, byURL: map[string]election.LeaseClient{}}
}

// clients returns a Lease client per current URL (election.Config.Fallbacks).
func (p *peerLeases) clients() []election.LeaseClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []election.LeaseClient
	for _, peer := range p.urls() {
		c, ok := p.byURL[peer]
		if !ok {
			rc := rest.CopyConfig(p.local)
			rc.Host = peer
			if rc.ServerName == "" {
				rc.ServerName = p.cfg.APIServerServerName
			}
			rc.Timeout = peerTimeout
			var err error
			if c, err = election.NewLeaseClient(rc, p.cfg.LeaseNamespace); err != nil {
				p.log.Error(err, "Building the Lease client through another kube-apiserver", "url", peer)
				continue
			}
			p.byURL[peer] = c
		}
		out = append(out, c)
	}
	return out
}

func readyzURL(host string) string {
	for len(host) > 0 && host[len(host)-1] == '/' {
		host = host[:len(host)-1]
	}
	return host + "/readyz"
}

func serveMux(registry *prometheus.Registry, healthy func() bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !healthy() {
			http.Error(w, "the local kube-apiserver is not ready or the interface is down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}
