// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package dataplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/agent"
	"github.com/gardener/gardener-extension-kube-vip/agent/timing"
	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	nodetracker "github.com/gardener/gardener-extension-kube-vip/controller/nodes"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/dataplane"
	"github.com/gardener/gardener-extension-kube-vip/test/extension"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// The front-door scenarios run the real controller (in the test process, against the
// cluster's kube-apiserver and the local Neutron; from the lifecycle's upgrade on, the
// chart's controller pod) and our agent, as the pods of the
// controller's DaemonSet, on a test/nodes cluster whose nodes' NICs are the Neutron node
// ports, plugged as Nova would plug them (port security on, the node security group). The
// client is hack/dataplane.sh's external namespace: its only way in is the floating IP,
// which the L3 agent's qrouter namespace NATs to the VIP. One cluster serves the package;
// each scenario leaves it with 3/3 agents Ready, and TestZDeleteExposure runs last.

const exposureName = "kube-vip"

// apiPort is gardenadm's layout: every node's kube-apiserver in the host network on 443,
// spec.port 443.
const apiPort = 443

// Bounds on the client's longest outage through the floating IP, from the default timings
// (docs/agent.md), as test/e2e states them for the L2-only path; the router adds no term:
// its neighbour entry follows the new holder's gratuitous ARP.
var (
	defaults = timing.Defaults()
	// SIGTERM: the leader removes the VIP and releases the Lease; a follower takes it at
	// once, or at lease expiry if the release is lost.
	gracefulBound = defaults.LeaseDuration
	// SIGKILL: the VIP ends with its kernel lifetime (within the term), a follower takes
	// over at lease expiry after the last renewal.
	crashBound = defaults.LeaseDuration + time.Second
	// Link down: to the followers the cut leader is a crashed one (its renewals stop
	// reaching the others' kube-apiservers), and its VIP ends with the kernel lifetime.
	linkDownBound = crashBound
	// etcdElection is what a link cut adds when the cut node also leads etcd: the other
	// members elect a new leader (etcd's default election timeout, 1 s, randomised up to
	// 2 s) before the takeover's Lease write can commit. The agents' etcd-leader yield
	// (docs/agent.md) would keep the VIP off that node, but it reads the metrics listener
	// of gardenadm's etcd, 127.0.0.1:2381, which this harness's etcd does not open, so it is
	// off here; test/integration/agent TestHolderLeadingEtcdYields and the bench show it.
	etcdElection = 2 * time.Second
	// Local kube-apiserver dead: the health gate closes after the failure threshold of
	// probes, then the release (through a peer) or the expiry.
	apiserverBound = defaults.LeaseDuration + time.Duration(agent.DefaultConfig().HealthFailureThreshold)*agent.DefaultConfig().HealthPeriod + agent.DefaultConfig().HealthTimeout + time.Second
)

var suite framework.Suite[*frontDoor]

// closeErr is what closing the cluster failed on or left behind; it fails the package.
var closeErr error

func TestMain(m *testing.M) {
	code := suite.Run(m)
	if closeErr != nil {
		fmt.Fprintln(os.Stderr, "dataplane:", closeErr)
		code = 1
	}
	os.Exit(code)
}

// frontDoor is the package's cluster behind the Neutron router.
type frontDoor struct {
	dp      dataplane.Env
	cluster *nodes.Cluster
	// nic plugs the nodes into Neutron ports, also a node that joins later.
	nic     *dataplane.NodePorts
	cl      client.Client
	neutron *openstack.Network
	// client is the external client namespace; caPool verifies the kube-apiservers.
	client   *netns.Client
	caPool   *x509.CertPool
	identity string
	// ctrlLog is the in-process controller's log file.
	ctrlLog string
	// metrics count the in-process controller's OpenStack calls.
	metrics *openstack.Metrics
	// chart is the chart's controller once the lifecycle has handed the exposure over to it
	// (handOverToChart); podCalls are the last OpenStack calls read from each of its pods.
	chart    *extension.Controller
	podCalls map[types.UID]openstack.Snapshot
	// stopController stops the controller (both its controllers); idempotent.
	stopController func()
	// startController starts the in-process controller again after stopController.
	startController func() error
	// agentImage is the agent image the controller deploys, as the chart passes it.
	agentImage string
	// families are the shoot's ipFamilies the exposure is made for (nil: IPv4), set by
	// useFamilies.
	families []gardencorev1beta1.IPFamily
}

// scenario returns the cluster, bringing it up on first use, and a context for one test.
func scenario(t *testing.T) (*frontDoor, context.Context) {
	t.Helper()
	dp := dataplane.Load(t)
	f := suite.Get(t, func(s *framework.Suite[*frontDoor]) (*frontDoor, error) { return setUp(s, dp) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return f, ctx
}

func setUp(s *framework.Suite[*frontDoor], dp dataplane.Env) (*frontDoor, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	// Subnet6: the kube-apiservers listen on IPv6 too, for the IPv6 and dual-stack scenarios.
	nic := dp.NIC(dp.OpenStack.NodePortIDs)
	c, err := nodes.New(ctx, nodes.Options{Nodes: 3, NIC: nic, Log: log, APIServerPort: apiPort,
		Subnet6: netip.MustParsePrefix(framework.NodeSubnet6CIDR)})
	if c != nil {
		s.Defer(func() {
			if err := c.Close(); err != nil {
				closeErr = fmt.Errorf("closing the cluster: %w", err)
			}
			if left := c.Leftovers(); len(left) > 0 {
				closeErr = errors.Join(closeErr, fmt.Errorf("the cluster left behind: %q", left))
			}
		})
	}
	if err != nil {
		return nil, fmt.Errorf("the cluster on Neutron ports: %w", err)
	}
	fmt.Fprintf(os.Stderr, "dataplane: cluster on Neutron ports up in %s\n", time.Since(start).Round(time.Millisecond))
	f := &frontDoor{dp: dp, cluster: c, nic: nic, neutron: openstack.NewNetwork(dp.Admin), identity: framework.UniqueTechnicalID("kvdp-"),
		ctrlLog: filepath.Join(c.Net().Dir(), "controller.log"), agentImage: c.ImageRef("kube-vip-agent")}
	var done func()
	if f.client, done, err = c.Net().ClientIn(dp.ClientNS); err != nil {
		return nil, err
	}
	s.Defer(done)
	ca, err := os.ReadFile(c.Net().CAFile())
	if err != nil {
		return nil, err
	}
	f.caPool = x509.NewCertPool()
	f.caPool.AppendCertsFromPEM(ca)

	// controller-runtime's own log goes to the controller's log file from the CRD install
	// on: only its first SetLogger counts, and a log line before any prints a stack trace.
	logFile, err := os.OpenFile(f.ctrlLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	s.Defer(func() { _ = logFile.Close() })
	ctrllog.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logFile)))

	// Whichever node serves: the lifecycle replaces the first one.
	cfg := c.Net().RESTConfig()
	paths, err := framework.SelfHostedShootCRDPaths()
	if err != nil {
		return nil, err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return nil, fmt.Errorf("installing the Gardener CRDs: %w", err)
	}
	scheme, err := framework.NewScheme()
	if err != nil {
		return nil, err
	}
	if f.cl, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if err := framework.Bootstrap(ctx, f.cl, dp.OpenStack.BootstrapOptions(framework.ApplicationCredential)); err != nil {
		return nil, fmt.Errorf("creating the Gardener objects: %w", err)
	}
	if err := framework.SetTechnicalID(ctx, f.cl, f.identity); err != nil {
		return nil, err
	}
	f.startController = func() error {
		stop, err := f.runController(cfg, scheme)
		if err == nil {
			f.stopController = sync.OnceFunc(stop)
		}
		return err
	}
	if err := f.startController(); err != nil {
		return nil, err
	}
	s.Defer(func() { f.stopController() })
	// Whatever the tests did: the exposure goes, and with it the controller's Neutron objects.
	s.Defer(f.removeExposure)
	return f, nil
}

// runController runs the exposure controller and the node tracker as the extension's
// chart would: the agent image of the cluster, the front door probed from the first
// current node (the bootstrap controller of a self-hosted shoot runs in the host network
// of a control-plane node). The log is appended to f.ctrlLog.
func (f *frontDoor) runController(cfg *rest.Config, scheme *runtime.Scheme) (stop func(), err error) {
	logFile, err := os.OpenFile(f.ctrlLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	mgr, err := framework.NewManager(cfg, scheme, logFile)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	f.metrics = openstack.NewMetrics(prometheus.NewRegistry())
	actuator := exposure.NewActuator(mgr, exposure.ActuatorOptions{
		ClientFactory: openstack.NewClientFactory(openstack.FactoryOptions{Metrics: f.metrics}),
		AgentImage:    f.agentImage,
		NodeName:      f.cluster.Net().Nodes()[0].Name(),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return f.cluster.Net().Nodes()[0].DialContext(ctx, network, addr)
		},
		AgentRefreshInterval: time.Second,
		MinBackoff:           time.Second,
		MaxBackoff:           10 * time.Second,
	})
	if err := exposure.AddToManager(context.Background(), mgr, exposure.AddOptions{Actuator: actuator, Controller: controller.Options{MaxConcurrentReconciles: 1}}); err != nil {
		return nil, fmt.Errorf("adding the controller: %w", err)
	}
	if err := nodetracker.AddToManager(context.Background(), mgr, nodetracker.AddOptions{Syncer: actuator}); err != nil {
		return nil, fmt.Errorf("adding the node tracker: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "dataplane: the controller's manager:", err)
		}
		_ = logFile.Close()
	}, nil
}

// handOverToChart stops the in-process controller and runs the extension's chart in its
// place, as an operator's Gardener does (the pod in the host network of a node, under the
// chart's RBAC): the cluster's controller image, the running agent image. Never two
// controllers at once: the in-process one has no leader election. It returns the time
// until gardenadm init's next run found the chart's controller reconciling, and its
// OpenStack calls (all of the new pod's).
func (f *frontDoor) handOverToChart(t *testing.T, ctx context.Context) (time.Duration, openstack.Snapshot) {
	t.Helper()
	start := time.Now()
	f.stopController()
	f.metrics = nil
	t.Logf("the in-process controller stopped in %s", time.Since(start).Round(time.Millisecond))
	images := extension.Images{Controller: f.cluster.ImageRef("gardener-extension-kube-vip"), Agent: f.agentImage}
	chart, err := extension.StartController(ctx, extension.ControllerOptions{Cluster: f.cluster, Client: f.cl, OpenStack: f.dp.OpenStack, Images: images})
	if chart != nil {
		f.chart, f.podCalls = chart, map[types.UID]openstack.Snapshot{}
		// The suite's removeExposure runs before this, with the chart's controller.
		f.stopController = sync.OnceFunc(chart.Close)
		f.startController = func() error { return errors.New("the chart's controller runs the exposure") }
	}
	if err != nil {
		t.Fatalf("installing the chart: %v", err)
	}
	if err := chart.WaitRunning(ctx, images.Controller, 2*time.Minute); err != nil {
		t.Fatalf("the chart's controller: %v; %s", err, f.controllerLog(ctx))
	}
	t.Logf("the chart's controller pod is Ready %s after the handover began", time.Since(start).Round(time.Millisecond))
	dns, err := lifecycle.g.Init(ctx)
	if err != nil {
		t.Fatalf("gardenadm init with the chart's controller: %v; %s", err, f.controllerLog(ctx))
	}
	if len(dns) != 1 || dns[0] != lifecycle.dns {
		t.Errorf("DNS value %v with the chart's controller, want the first init's %s", dns, lifecycle.dns)
	}
	return time.Since(start), f.controllerCalls(t, ctx)
}

// controllerCalls are the controller's OpenStack calls so far: the in-process one's
// metrics, or the sum of the last reading of every chart controller pod seen (a pod's
// calls after its last reading are lost when it goes).
func (f *frontDoor) controllerCalls(t *testing.T, ctx context.Context) openstack.Snapshot {
	t.Helper()
	if f.chart == nil {
		return f.metrics.Snapshot()
	}
	var now map[types.UID]openstack.Snapshot
	err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		now, err = f.chart.Calls(ctx)
		return err == nil, nil
	})
	if err != nil {
		_, err = f.chart.Calls(ctx)
		t.Fatalf("reading the chart's controller's OpenStack calls: %v", err)
	}
	maps.Copy(f.podCalls, now)
	sum := openstack.Snapshot{}
	for _, s := range f.podCalls {
		sum = sum.Add(s)
	}
	return sum
}

// controllerLog says where the controller's log is, or ends with the chart's pod's.
func (f *frontDoor) controllerLog(ctx context.Context) string {
	if f.chart == nil {
		return "controller log in " + f.ctrlLog
	}
	return "controller log:\n" + f.chart.ControllerLog(ctx)
}

// newExposure is the exposure as gardenadm creates it, with the harness's VIP (in the
// kube-apiservers' certificates) as vipAddress when the shoot has IPv4; the IPv6 VIP is
// Neutron's pick.
func (f *frontDoor) newExposure() *extensionsv1alpha1.SelfHostedShootExposure {
	pin := ""
	if len(f.families) == 0 || slices.Contains(f.families, gardencorev1beta1.IPFamilyIPv4) {
		pin = fmt.Sprintf(`"vipAddress":%q,`, f.cluster.Net().VIP())
	}
	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: exposureName, Namespace: framework.Namespace},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{
				Type: framework.DefaultExposureType,
				ProviderConfig: &runtime.RawExtension{Raw: fmt.Appendf(nil,
					`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig",%s"agent":{"interface":%q}}`,
					pin, netns.Interface)},
			},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: framework.Namespace, Name: framework.CloudProviderSecretName},
			Port:           apiPort,
		},
	}
	for _, n := range f.cluster.Net().Nodes() {
		exp.Spec.Endpoints = append(exp.Spec.Endpoints, extensionsv1alpha1.ControlPlaneEndpoint{
			NodeName: n.Name(), Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP().String()}},
		})
	}
	return exp
}

// exposed creates the exposure if it is not there and waits until it has Succeeded; the
// harness's holder reads and samplers then look for the exposure's VIPs.
func (f *frontDoor) exposed(t *testing.T, ctx context.Context) (*extensionsv1alpha1.SelfHostedShootExposure, status) {
	t.Helper()
	exp := f.newExposure()
	if err := f.cl.Create(ctx, exp); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the exposure: %v", err)
	}
	last := f.waitSucceeded(t, ctx, exp)
	ps, err := exposure.DecodeStatus(last)
	if err != nil {
		t.Fatal(err)
	}
	st := status{vip: ps.VIPAddress, fip: ps.FloatingIPAddress, fipID: ps.FloatingIPID, portID: ps.PortID, vips: []string{ps.VIPAddress}}
	for _, v := range ps.OtherVIPs {
		st.vips = append(st.vips, v.Address)
	}
	for _, in := range last.Status.Ingress {
		st.doors = append(st.doors, in.IP)
	}
	watched := make([]netip.Addr, 0, len(st.vips))
	for _, v := range st.vips {
		watched = append(watched, netipAddr(t, v))
	}
	f.cluster.Net().SetVIPs(watched)
	return last, st
}

// status is what the tests read from providerStatus: vip is the VIP port's first fixed
// IP's (IPv4 unless IPv6-only), vips every family's, doors status.ingress in its order.
type status struct {
	vip, fip, fipID, portID string
	vips, doors             []string
}

func (f *frontDoor) waitSucceeded(t *testing.T, ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	var last extensionsv1alpha1.SelfHostedShootExposure
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := f.cl.Get(ctx, client.ObjectKeyFromObject(exp), &last); err != nil {
			return false, nil //nolint:nilerr // retried
		}
		if le := last.Status.LastError; le != nil && slices.Contains(le.Codes, gardencorev1beta1.ErrorConfigurationProblem) {
			return false, fmt.Errorf("configuration problem: %s", le.Description)
		}
		lo := last.Status.LastOperation
		_, annotated := last.Annotations[v1beta1constants.GardenerOperation]
		return lo != nil && lo.State == gardencorev1beta1.LastOperationStateSucceeded && !annotated &&
			last.Status.ObservedGeneration == last.Generation && len(last.Status.Ingress) > 0, nil
	})
	if err != nil {
		t.Fatalf("the exposure did not succeed: %v; last operation %+v, last error %+v; %s", err, last.Status.LastOperation, last.Status.LastError, f.controllerLog(ctx))
	}
	return &last
}

// deployed makes sure the exposure has Succeeded, the agents are 3/3 Ready and exactly one
// node holds the VIPs, which it returns, and that the client reaches every door (the
// floating IP, an IPv6 VIP).
func (f *frontDoor) deployed(t *testing.T, ctx context.Context) (*netns.Node, status) {
	t.Helper()
	_, st := f.exposed(t, ctx)
	f.waitReady(t, ctx)
	holder, err := f.cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, door := range st.doors {
		if err := f.waitReachable(ctx, door, true, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	return holder, st
}

// waitReady waits until the agents' DaemonSet is rolled out with every pod Ready.
func (f *frontDoor) waitReady(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := f.cluster.WaitDaemonSetReady(ctx, framework.Namespace, agentrollout.Name, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// waitReachable polls TCP connects from the external client to door:apiPort (a floating
// IP, an IPv6 VIP) until they succeed (want) or fail.
func (f *frontDoor) waitReachable(ctx context.Context, door string, want bool, within time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		return f.reaches(ctx, hostPort(door)) == want, nil
	})
	if err != nil {
		return fmt.Errorf("front door %s reachable from the external client: want %v within %s, it was not", hostPort(door), want, within)
	}
	return nil
}

func (f *frontDoor) reaches(ctx context.Context, addr string) bool {
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	c, err := f.client.DialContext(dctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// probe connects from the external client to the door's apiPort every 10 ms for d.
func (f *frontDoor) probe(t *testing.T, ctx context.Context, door string, d time.Duration) *netns.Prober {
	t.Helper()
	p, err := f.client.StartProber(ctx, netns.ProbeOptions{Target: netipAddrPort(t, door, apiPort), Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkRouterFollowsHolder checks the router's entries for the VIPs against whichever node
// holds them now. A holder silenced while the L2 agent rewrote its port's rules may have
// lost them to a follower's early takeover: a move away from was is logged, not failed.
func (f *frontDoor) checkRouterFollowsHolder(t *testing.T, ctx context.Context, was *netns.Node, during string, vips ...string) {
	t.Helper()
	now, err := f.cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if now != was {
		t.Logf("the VIP moved from %s to %s %s", was, now, during)
	}
	for _, v := range vips {
		f.checkRouterFollows(t, ctx, v, now)
	}
}

// checkRouterFollows fails the test unless the qrouter namespace's neighbour entry for the
// VIP names the holder's MAC within 2 s (an entry the L3 agent flushed meanwhile once the
// router resolved the VIP again).
func (f *frontDoor) checkRouterFollows(t *testing.T, ctx context.Context, vip string, holder *netns.Node) {
	t.Helper()
	var out string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		out, err = dataplane.Exec(ctx, f.dp.RouterNS, "ip", "neigh", "show", vip)
		if err == nil && strings.TrimSpace(out) == "" {
			// No entry at all: the L3 agent's processing of a router update (seconds on a
			// busy machine) flushed it. Nothing stale is left to follow; the router's next
			// packet resolves the VIP again, and that must reach the holder.
			dataplane.Ping(ctx, f.dp.RouterNS, vip, time.Second)
			return false, nil
		}
		return err == nil && strings.Contains(out, holder.MAC().String()), nil
	})
	if err != nil {
		t.Errorf("the router's neighbour entry for the VIP %s is %q (%s), want the holder %s's MAC %s", vip, strings.TrimSpace(out), f.whoseMAC(ctx, out), holder, holder.MAC())
		f.logAgents(t, ctx)
		return
	}
	t.Logf("the router's neighbour entry: %s", strings.TrimSpace(out))
}

// whoseMAC names the nodes and Neutron ports whose MAC the neighbour entry out names, and
// the VIPs each node holds, for a failure message.
func (f *frontDoor) whoseMAC(ctx context.Context, out string) string {
	var found []string
	for _, n := range f.cluster.Net().Nodes() {
		if strings.Contains(out, n.MAC().String()) {
			found = append(found, fmt.Sprintf("node %s", n))
		}
		if held, err := n.HeldVIPs(); err != nil {
			found = append(found, fmt.Sprintf("%s: %v", n, err))
		} else {
			found = append(found, fmt.Sprintf("%s holds %v", n, held))
		}
	}
	list, err := f.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: f.dp.OpenStack.NetworkID})
	for _, p := range list {
		if strings.Contains(out, p.MACAddress) {
			found = append(found, fmt.Sprintf("port %s %q owner %q", p.ID, p.Name, p.DeviceOwner))
		}
	}
	if err != nil {
		found = append(found, fmt.Sprintf("listing ports: %v", err))
	}
	return strings.Join(found, "; ")
}

// logAgents logs the end of each node's agent log, for a failure that a move explains. It
// reads the kubelets' files, as a cut-off node's kubelet may not serve them; finding the
// pods still needs the kube-apiserver.
func (f *frontDoor) logAgents(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, n := range f.cluster.Net().Nodes() {
		pod, err := f.cluster.PodOn(ctx, framework.Namespace, agentrollout.LabelAppName+"="+agentrollout.Name, n.Name())
		if err != nil {
			t.Logf("%s: %v", n, err)
			continue
		}
		log, err := f.cluster.ContainerLogFile(pod, agentrollout.Name, 8<<10)
		t.Logf("the agent on %s (%s, %v):\n%s", n, pod.Name, err, log)
	}
}

// leaderPod is the agent pod on the node.
func (f *frontDoor) leaderPod(t *testing.T, ctx context.Context, node string) *corev1.Pod {
	t.Helper()
	pod, err := f.cluster.PodOn(ctx, framework.Namespace, agentrollout.LabelAppName+"="+agentrollout.Name, node)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// portOf is the Neutron port of the node: the one with its address on the node network.
func (f *frontDoor) portOf(t *testing.T, ctx context.Context, n *netns.Node) *ports.Port {
	t.Helper()
	list, err := f.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: f.dp.OpenStack.NetworkID, FixedIPs: []string{n.IP().String()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("%d Neutron ports have %s's address %s, want 1", len(list), n, n.IP())
	}
	return &list[0]
}

// removeExposure deletes the exposure if it is there and waits until it is gone; if that
// fails, it removes the controller's Neutron objects itself.
func (f *frontDoor) removeExposure() {
	defer f.cluster.Net().SetVIPs(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp := f.newExposure()
	if err := f.cl.Delete(ctx, exp); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintln(os.Stderr, "dataplane: deleting the exposure:", err)
	}
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(f.cl.Get(ctx, client.ObjectKeyFromObject(exp), exp)), nil
	})
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "dataplane: the exposure was not deleted; removing its Neutron objects")
	list, _ := f.neutron.ListPorts(context.Background(), openstack.PortFilter{Tags: []string{openstack.ClusterTag(f.identity)}})
	for _, p := range list {
		fips, _ := f.neutron.FloatingIPsOfPort(context.Background(), p.ID)
		for _, fip := range fips {
			_ = f.neutron.DeleteFloatingIP(context.Background(), fip.ID)
		}
		_ = f.neutron.DeletePort(context.Background(), p.ID)
	}
}

// httpsReadyz GETs https://<addr>/readyz from the external client, verifying the
// kube-apiserver's certificate for the VIP.
func (f *frontDoor) httpsReadyz(ctx context.Context, addr, vip string) error {
	hc := f.client.HTTPClient(5*time.Second, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.caPool, ServerName: vip, MinVersion: tls.VersionTLS12}})
	return netns.GetOK(ctx, hc, "https://"+addr+"/readyz")
}

func netipAddrPort(t *testing.T, addr string, port uint16) netip.AddrPort {
	t.Helper()
	return netip.AddrPortFrom(netipAddr(t, addr), port)
}

func netipAddr(t *testing.T, addr string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return a
}

// hostPort is addr:apiPort.
func hostPort(addr string) string { return net.JoinHostPort(addr, strconv.Itoa(apiPort)) }
