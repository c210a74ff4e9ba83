// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
)

// Options configure a harness. The zero value of each field picks its default.
type Options struct {
	// Prefix starts every namespace name; default "kvt-". Runs with the same prefix sweep
	// each other's leftovers once the owning process is gone.
	Prefix string
	// Nodes is the number of node namespaces; default 3.
	Nodes int
	// Subnet is the LAN; default 198.18.0.0/24. It must be an IPv4 /24 or larger.
	Subnet netip.Prefix
	// Subnet6, if set, gives every endpoint a second, IPv6 address on the LAN: host ::11,
	// ::12, ... for the nodes and ::5 for the client (a /64 or larger, without DAD), and the
	// kube-apiservers listen on IPv6 too, so that VIP may be an IPv6 address of it. With a
	// NIC provider the provider gives the nodes their IPv6 addresses.
	Subnet6 netip.Prefix
	// VIP is the virtual IP tests move around; default host .100 of Subnet. It goes into
	// the serving certificate and is the sampler's and the capture's subject.
	VIP netip.Addr
	// VIP6, if set, is a second VIP, IPv6, of the same exposure (a dual-stack agent holds
	// both): the LAN then also carries VIP6's /64, every endpoint gets the address of that
	// /64 whose last byte is that of its IPv4 address, and the holder sampler watches both.
	VIP6 netip.Addr
	// ControlPlane starts etcd and kube-apiserver on every node.
	ControlPlane bool
	// BinDir holds kube-apiserver and etcd; default: the output of
	// hack/build-kube-binaries.sh (found by walking up to go.mod).
	BinDir string
	// Dir holds logs, certificates and etcd data; default a new temporary directory.
	Dir string
	// Log receives progress messages; default discards.
	Log logr.Logger
	// NIC, if set, gives the nodes their LAN interface (see NIC) instead of a veth on the
	// harness's bridge; Subnet must then be the network the provider plugs into.
	NIC NIC
	// APIServerPort is the kube-apiservers' secure port; default 6443. gardenadm's layout
	// (host network, 443) needs 443; 6443 leaves 443 free for a second listener.
	APIServerPort uint16
}

// Harness is one LAN of namespaces. Its methods are safe for concurrent use.
type Harness struct {
	opts   Options
	id     string
	dir    string
	log    logr.Logger
	bridge *namespace
	nodes  []*Node
	client *Client

	pki    *pki
	binDir string // of the control plane's binaries

	// watched, if set, replaces VIPs() for the holder reads and the sampler (SetVIPs).
	watched atomic.Pointer[[]netip.Addr]

	mu        sync.Mutex
	processes []*Process
	created   []string // namespace names, for Close
	plugged   int      // nodes given to Options.NIC, for Close
	unplugged []int    // NIC indexes RemoveNode released already
	removed   []*Node  // RemoveNode's, whose handles Close closes
	closed    atomic.Bool
}

var instance atomic.Int32

// NewForTest builds a harness, fails the test if it cannot, and closes it in t.Cleanup.
// The directory with the logs is kept (and named in the test log) when the test failed.
func NewForTest(t testing.TB, opts Options) *Harness {
	t.Helper()
	if opts.Log.GetSink() == nil {
		opts.Log = testr.NewWithInterface(t, testr.Options{LogTimestamp: true})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := New(ctx, opts)
	if h != nil {
		t.Cleanup(func() {
			keep := t.Failed()
			if err := h.close(keep); err != nil {
				t.Errorf("closing harness: %v", err)
			}
			if keep {
				t.Logf("harness logs kept in %s", h.dir)
			}
		})
	}
	if err != nil {
		t.Fatalf("netns harness: %v", err)
	}
	return h
}

// New builds the LAN (and the control plane if asked). On error it returns the partly
// built harness too, so that the caller may close it and read its logs; it is nil only if
// nothing was created.
func New(ctx context.Context, opts Options) (*Harness, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the netns harness needs root")
	}
	sweepStale(ctx, opts.Prefix, opts.Log)

	id := fmt.Sprintf("%s%d-%d", opts.Prefix, os.Getpid(), instance.Add(1))
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", id+"-")
		if err != nil {
			return nil, fmt.Errorf("harness directory: %w", err)
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("harness directory: %w", err)
	}
	h := &Harness{opts: opts, id: id, dir: dir, log: opts.Log.WithValues("harness", id)}
	start := time.Now()
	if err := h.buildLAN(ctx); err != nil {
		return h, errors.Join(err, h.close(true))
	}
	h.log.Info("LAN ready", "nodes", len(h.nodes), "subnet", opts.Subnet, "vip", opts.VIP, "dir", dir, "took", time.Since(start).Round(time.Millisecond))
	if opts.ControlPlane {
		if err := h.startControlPlane(ctx); err != nil {
			return h, fmt.Errorf("control plane (logs in %s): %w", dir, err)
		}
		h.log.Info("control plane ready", "took", time.Since(start).Round(time.Millisecond))
	}
	return h, nil
}

func (o *Options) defaults() error {
	if o.Prefix == "" {
		o.Prefix = "kvt-"
	}
	if o.APIServerPort == 0 {
		o.APIServerPort = 6443
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 1 || o.Nodes > 80 {
		return fmt.Errorf("nodes must be 1..80, got %d", o.Nodes)
	}
	if !o.Subnet.IsValid() {
		o.Subnet = netip.MustParsePrefix("198.18.0.0/24")
	}
	if !o.Subnet.Addr().Is4() || o.Subnet.Bits() > 24 {
		return fmt.Errorf("subnet must be IPv4 /24 or larger, got %s", o.Subnet)
	}
	o.Subnet = o.Subnet.Masked()
	if o.Subnet6.IsValid() && (!o.Subnet6.Addr().Is6() || o.Subnet6.Bits() > 64) {
		return fmt.Errorf("subnet6 must be IPv6 /64 or larger, got %s", o.Subnet6)
	}
	o.Subnet6 = o.Subnet6.Masked()
	if !o.VIP.IsValid() {
		o.VIP = hostAddr(o.Subnet, 100)
	}
	if o.VIP6.IsValid() && !o.VIP6.Is6() {
		return fmt.Errorf("VIP6 must be an IPv6 address, got %s", o.VIP6)
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return nil
}

// hostAddr is the address with last octet n in subnet.
func hostAddr(subnet netip.Prefix, n byte) netip.Addr {
	a := subnet.Addr().As4()
	a[3] = n
	return netip.AddrFrom4(a)
}

// hostAddr6 is the address with last group n in subnet.
func hostAddr6(subnet netip.Prefix, n byte) netip.Addr {
	a := subnet.Addr().As16()
	a[15] = n
	return netip.AddrFrom16(a)
}

// macFor is the fixed MAC for an IPv4 address: 02:00 followed by the address.
func macFor(a netip.Addr) net.HardwareAddr {
	b := a.As4()
	return net.HardwareAddr{0x02, 0x00, b[0], b[1], b[2], b[3]}
}

// ID is the unique name stem of this harness (prefix, PID, instance number).
func (h *Harness) ID() string { return h.id }

// Dir holds logs, certificates and data of this harness.
func (h *Harness) Dir() string { return h.dir }

// VIP is the virtual IP of this harness.
func (h *Harness) VIP() netip.Addr { return h.opts.VIP }

// VIPs are the harness's VIPs: VIP, and VIP6 if set; or those of the last SetVIPs.
func (h *Harness) VIPs() []netip.Addr {
	if w := h.watched.Load(); w != nil {
		return *w
	}
	if h.opts.VIP6.IsValid() {
		return []netip.Addr{h.opts.VIP, h.opts.VIP6}
	}
	return []netip.Addr{h.opts.VIP}
}

// SetVIPs makes the holder reads (HeldVIPs, Holders, WaitSingleHolder) and the sampler
// look for vips instead of the options' VIPs: a controller's VIPs, known only once it chose
// them (an IPv6-only or dual-stack exposure's). nil goes back to the options' VIPs. The
// certificates keep the options' VIPs.
func (h *Harness) SetVIPs(vips []netip.Addr) {
	if vips == nil {
		h.watched.Store(nil)
		return
	}
	vips = slices.Clone(vips)
	h.watched.Store(&vips)
}

// VIP6 is the harness's IPv6 VIP; invalid unless Options.VIP6 is set.
func (h *Harness) VIP6() netip.Addr { return h.opts.VIP6 }

// ipv6For is the IPv6 address of the endpoint whose IPv4 address is a: VIP6's /64 with a's
// last byte; invalid without VIP6.
func (h *Harness) ipv6For(a netip.Addr) netip.Addr {
	if !h.opts.VIP6.IsValid() {
		return netip.Addr{}
	}
	b := h.opts.VIP6.As16()
	clear(b[8:])
	b[15] = a.As4()[3]
	return netip.AddrFrom16(b)
}

// VIPPrefix is the VIP as a host prefix (/32 or /128).
func (h *Harness) VIPPrefix() netip.Prefix {
	return netip.PrefixFrom(h.opts.VIP, h.opts.VIP.BitLen())
}

// Subnet is the LAN's prefix.
func (h *Harness) Subnet() netip.Prefix { return h.opts.Subnet }

// APIServerPort is the kube-apiservers' secure port (Options.APIServerPort).
func (h *Harness) APIServerPort() uint16 { return h.opts.APIServerPort }

// Nodes are the node namespaces, in order node1..nodeN.
// AddNode and RemoveNode change the list: the slice returned is a copy.
func (h *Harness) Nodes() []*Node {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.nodes)
}

// Node returns the node with the given name ("node2"), or nil.
func (h *Harness) Node(name string) *Node {
	for _, n := range h.Nodes() {
		if n.name == name {
			return n
		}
	}
	return nil
}

// NodeByMAC returns the node whose eth0 has mac, or nil.
func (h *Harness) NodeByMAC(mac net.HardwareAddr) *Node {
	for _, n := range h.Nodes() {
		if n.mac.String() == mac.String() {
			return n
		}
	}
	return nil
}

// Client is the client namespace.
func (h *Harness) Client() *Client { return h.client }

// Holders returns the nodes that have a VIP (any of VIPs) on any interface right now.
func (h *Harness) Holders() ([]*Node, error) {
	var out []*Node
	for _, n := range h.Nodes() {
		held, err := n.HeldVIPs()
		if err != nil {
			return nil, err
		}
		if len(held) > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// WaitSingleHolder polls until exactly one node holds the VIP and, if not nil, accept
// returns true for it. It returns that node.
func (h *Harness) WaitSingleHolder(ctx context.Context, accept func(*Node) bool) (*Node, error) {
	var last []*Node
	for {
		holders, err := h.Holders()
		if err != nil {
			return nil, err
		}
		last = holders
		if len(holders) == 1 && (accept == nil || accept(holders[0])) {
			return holders[0], nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a single VIP holder (now %v): %w", Names(last), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Names lists the names of nodes.
func Names(nodes []*Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.name)
	}
	return out
}

func (h *Harness) track(p *Process) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.processes = append(h.processes, p)
}

// Close stops every process the harness started, kills whatever else still runs in its
// namespaces, and removes the namespaces (and with them the veths and the bridge). The
// directory is removed too. Close is idempotent.
func (h *Harness) Close() error { return h.close(false) }

func (h *Harness) close(keepDir bool) error {
	if h.closed.Swap(true) {
		return nil
	}
	var errs []error
	h.mu.Lock()
	procs := append([]*Process(nil), h.processes...)
	created := append([]string(nil), h.created...)
	h.mu.Unlock()

	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Stop(3 * time.Second)
		}()
	}
	wg.Wait()

	h.mu.Lock()
	all := append(slices.Clone(h.nodes), h.removed...)
	h.mu.Unlock()
	for _, n := range all {
		n.ns.close()
	}
	if h.client != nil {
		h.client.ns.close()
	}
	h.bridge.close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if h.opts.NIC != nil {
		errs = append(errs, h.unplugNodes(ctx))
	}
	for _, name := range created {
		if err := removeNamespace(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	if !keepDir && h.opts.Dir == "" {
		if err := os.RemoveAll(h.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", h.dir, err))
		}
	}
	return errors.Join(errs...)
}

// removeNamespace kills whatever runs in the namespace and deletes it.
func removeNamespace(ctx context.Context, name string) error {
	if out, err := ip(ctx, "netns", "pids", name); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if _, err := ip(ctx, "netns", "delete", name); err != nil {
		if _, statErr := os.Stat("/run/netns/" + name); os.IsNotExist(statErr) {
			return nil
		}
		return err
	}
	return nil
}

// sweepStale removes namespaces "<prefix><pid>-..." whose owning process is gone.
func sweepStale(ctx context.Context, prefix string, log logr.Logger) {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		log.Info("removing stale namespace", "name", name)
		if err := removeNamespace(ctx, name); err != nil {
			log.Error(err, "removing stale namespace", "name", name)
		}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
