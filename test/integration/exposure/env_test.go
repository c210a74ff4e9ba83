// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

const (
	ns             = framework.Namespace
	verifyInterval = time.Hour
	// testTag marks the Neutron resources that the tests create themselves (node ports).
	testTag = "kube-vip-exposure-test"
)

var suite framework.Suite[*sharedEnv]

// sharedEnv is one kube-apiserver for the whole package and the local OpenStack.
type sharedEnv struct {
	cp *framework.ControlPlane
	os framework.OpenStackEnv
	// neutron is the tests' own client (not counted by the controller's metrics).
	neutron *openstack.Network
}

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func env(t *testing.T) *sharedEnv {
	t.Helper()
	osEnv := framework.OpenStack(t)
	return suite.Get(t, func(s *framework.Suite[*sharedEnv]) (*sharedEnv, error) {
		cp, err := framework.NewControlPlane()
		if err != nil {
			return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
		}
		s.Defer(func() { _ = cp.Stop() })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := framework.Bootstrap(ctx, cp.Client, osEnv.BootstrapOptions(framework.ApplicationCredential)); err != nil {
			return nil, fmt.Errorf("bootstrapping Gardener objects: %w", err)
		}
		neutron, err := osEnv.Network(ctx)
		if err != nil {
			return nil, err
		}
		return &sharedEnv{cp: cp, os: osEnv, neutron: neutron}, nil
	})
}

// controllerUnderTest is a manager with the exposure controller, its own metrics, client
// factory and clock.
type controllerUnderTest struct {
	actuator *exposure.Actuator
	metrics  *openstack.Metrics
	clock    *clocktesting.FakeClock
}

// controllerSetup is what a test may change of the controller it starts.
type controllerSetup struct {
	actuator exposure.ActuatorOptions
	// workers is the exposure controller's MaxConcurrentReconciles: one unless a test
	// races reconciliations (production runs five).
	workers int
	// exposureWatchLag delays each SelfHostedShootExposure watch event of the controller's
	// cache by this much: a cache behind the API server, as on a busy one. Zero: no lag.
	exposureWatchLag time.Duration
	// exposureListLag answers each list of SelfHostedShootExposures (the cache's and the
	// API reader's) this much late, with what the API server listed when asked: a slow API
	// server, whose answer is old when it arrives. Zero: no lag.
	exposureListLag time.Duration
}

// actuatorOptions changes the actuator's options.
func actuatorOptions(change func(*exposure.ActuatorOptions)) func(*controllerSetup) {
	return func(s *controllerSetup) { change(&s.actuator) }
}

// startController starts the controller. Without options it does not check the front door
// (exposure.FrontDoorOff): the tests of the controller alone run no agent. The front-door
// tests pass options that check it.
func startController(t *testing.T, e *sharedEnv, options ...func(*controllerSetup)) *controllerUnderTest {
	t.Helper()
	metrics := openstack.NewMetrics(prometheus.NewRegistry())
	clock := clocktesting.NewFakeClock(time.Now())
	setup := controllerSetup{workers: 1, actuator: exposure.ActuatorOptions{
		ClientFactory:  openstack.NewClientFactory(openstack.FactoryOptions{Metrics: metrics}),
		AgentImage:     "example.org/kube-vip-agent:test",
		VerifyInterval: verifyInterval,
		Clock:          clock,
		MinBackoff:     200 * time.Millisecond,
		MaxBackoff:     2 * time.Second,
		FrontDoorProbe: exposure.FrontDoorOff,
	}}
	for _, o := range options {
		o(&setup)
	}
	cfg := e.cp.Config
	if setup.exposureWatchLag > 0 || setup.exposureListLag > 0 {
		cfg = lagExposureReads(cfg, setup.exposureWatchLag, setup.exposureListLag)
	}
	mgr := newManager(t, e, cfg)
	actuator := exposure.NewActuator(mgr, setup.actuator)
	if err := exposure.AddToManager(context.Background(), mgr, exposure.AddOptions{
		Actuator:   actuator,
		Controller: controller.Options{MaxConcurrentReconciles: setup.workers},
	}); err != nil {
		t.Fatalf("adding controller: %v", err)
	}
	framework.StartManager(t, mgr)
	return &controllerUnderTest{actuator: actuator, metrics: metrics, clock: clock}
}

// newManager is a manager on the shared kube-apiserver, reached with cfg (its config, or a
// copy with a lag), not started yet.
func newManager(t *testing.T, e *sharedEnv, cfg *rest.Config) manager.Manager {
	t.Helper()
	mgr, err := framework.NewManager(cfg, e.cp.Scheme, testWriter{t})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	return mgr
}

// lagExposureReads returns a copy of cfg whose watches of SelfHostedShootExposures hand on
// each event watchLag after it arrived, and whose lists of them return listLag after the
// API server answered; every other request is not delayed.
func lagExposureReads(cfg *rest.Config, watchLag, listLag time.Duration) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err != nil || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/selfhostedshootexposures") {
				return resp, err
			}
			if r.URL.Query().Get("watch") == "true" {
				if watchLag > 0 {
					resp.Body = lagged(resp.Body, watchLag)
				}
				return resp, nil
			}
			select {
			case <-time.After(listLag):
				return resp, nil
			case <-r.Context().Done():
				_ = resp.Body.Close()
				return nil, r.Context().Err()
			}
		})
	})
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// lagged hands on what body delivers, each piece lag after it arrived: a constant lag,
// however the reader cuts the stream.
func lagged(body io.ReadCloser, lag time.Duration) io.ReadCloser {
	type piece struct {
		b   []byte
		at  time.Time
		err error
	}
	pr, pw := io.Pipe()
	pieces := make(chan piece, 256)
	done := make(chan struct{})
	go func() {
		defer close(pieces)
		for {
			buf := make([]byte, 32<<10)
			n, err := body.Read(buf)
			select {
			case pieces <- piece{buf[:n], time.Now(), err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		for p := range pieces {
			time.Sleep(time.Until(p.at.Add(lag)))
			if _, err := pw.Write(p.b); err != nil {
				return
			}
			if p.err != nil {
				pw.CloseWithError(p.err)
				return
			}
		}
	}()
	// Callers may close a body twice (client-go's watch decoder and its stream's owner).
	var once sync.Once
	return readCloser{Reader: pr, close: func() error {
		once.Do(func() { close(done) })
		_ = pr.Close()
		return body.Close()
	}}
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// useIdentity gives the shoot in the Cluster a fresh technical ID, so that this test's
// Neutron resources are tagged apart from everyone else's; it returns the identity.
func useIdentity(t *testing.T, ctx context.Context, e *sharedEnv) string {
	t.Helper()
	id := framework.UniqueTechnicalID("kvtest-")
	if err := framework.SetTechnicalID(ctx, e.cp.Client, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// The first node port's own allowed address pairs, which the extension must keep: a network
// and a host pair. The host address lies outside the subnet's allocation pool
// (hack/openstack.sh: .100-.250) and outside freeAddress's range (.30-.89), so that
// Neutron can never pick it as a VIP: a VIP equal to it would make the pair the VIP's (its
// older "/32" form), which the extension rewrites.
var ownPairs = []string{"10.250.0.0/16", "198.18.0.95/32"}

// nodeFixture is a control-plane Node with its own Neutron port.
type nodeFixture struct {
	name string
	ip   string
	port string
}

// createNodes creates n Neutron ports (addresses picked by Neutron; the first with extra
// allowed address pairs that must survive) and control-plane Nodes with these addresses.
func createNodes(t *testing.T, ctx context.Context, e *sharedEnv, id string, n int) []nodeFixture {
	t.Helper()
	var nodes []nodeFixture
	for i := range n {
		name := fmt.Sprintf("%s-cp-%d", id, i)
		opts := ports.CreateOpts{NetworkID: e.os.NetworkID, Name: name, DeviceOwner: "compute:nova", DeviceID: name,
			FixedIPs: []ports.IP{{SubnetID: e.os.SubnetID}}}
		if i == 0 {
			for _, ip := range ownPairs {
				opts.AllowedAddressPairs = append(opts.AllowedAddressPairs, ports.AddressPair{IPAddress: ip})
			}
		}
		p := createNodePort(t, ctx, e, opts)
		nf := nodeFixture{name: name, ip: p.FixedIPs[0].IPAddress, port: p.ID}
		createNode(t, ctx, e, nf)
		nodes = append(nodes, nf)
	}
	return nodes
}

// createNodePort creates a node's Neutron port, tagged as the tests', deleted at the end.
func createNodePort(t *testing.T, ctx context.Context, e *sharedEnv, opts ports.CreateOpts) *ports.Port {
	t.Helper()
	p, err := ports.Create(ctx, e.neutron.ServiceClient(), opts).Extract()
	if err != nil {
		t.Fatalf("creating node port: %v", err)
	}
	t.Cleanup(func() { _ = e.neutron.DeletePort(context.Background(), p.ID) })
	if err := e.neutron.ReplacePortTags(ctx, p.ID, []string{testTag}); err != nil {
		t.Fatalf("tagging node port: %v", err)
	}
	return p
}

// createNode creates a control-plane Node with the fixture's InternalIP.
func createNode(t *testing.T, ctx context.Context, e *sharedEnv, nf nodeFixture) {
	t.Helper()
	createNodeWithLabels(t, ctx, e, nf, map[string]string{exposure.LabelControlPlane: ""})
}

func createNodeWithLabels(t *testing.T, ctx context.Context, e *sharedEnv, nf nodeFixture, labels map[string]string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nf.name, Labels: labels}}
	if err := e.cp.Client.Create(ctx, node); err != nil {
		t.Fatalf("creating Node: %v", err)
	}
	t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), node) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nf.ip}}
	if err := e.cp.Client.Status().Update(ctx, node); err != nil {
		t.Fatalf("setting Node address: %v", err)
	}
}

// syncNodePairs runs the node tracker's sync of exp, as a Node event starts it (the tests'
// controller runs no tracker), and returns exp as read afterwards.
func (c *controllerUnderTest) syncNodePairs(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		t.Fatal(err)
	}
	if err := c.actuator.SyncNodePairs(ctx, testLogger(t), current); err != nil {
		t.Fatalf("SyncNodePairs: %v", err)
	}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		t.Fatal(err)
	}
	return current
}

type exposureOptions struct {
	name           string
	providerConfig string
	secretName     string
	nodes          []nodeFixture
}

func newExposure(o exposureOptions) *extensionsv1alpha1.SelfHostedShootExposure {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: ns},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec:    extensionsv1alpha1.DefaultSpec{Type: exposure.DefaultType},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: o.secretName},
			Port:           6443,
			Endpoints:      []extensionsv1alpha1.ControlPlaneEndpoint{},
		},
	}
	if o.secretName == "" {
		exp.Spec.CredentialsRef.Name = framework.CloudProviderSecretName
	}
	if o.providerConfig != "" {
		exp.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(o.providerConfig)}
	}
	for _, n := range o.nodes {
		exp.Spec.Endpoints = append(exp.Spec.Endpoints, extensionsv1alpha1.ControlPlaneEndpoint{
			NodeName: n.name, Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}},
		})
	}
	return exp
}

// create creates the exposure and registers a cleanup that deletes it and waits until it
// is gone; it then checks that Neutron holds nothing tagged for the identity.
func create(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, identity string) {
	t.Helper()
	if err := e.cp.Client.Create(ctx, exp); err != nil {
		t.Fatalf("creating exposure: %v", err)
	}
	t.Cleanup(func() {
		// Generous: a deletion makes about eight Neutron calls, which take seconds each
		// on a loaded two-core machine.
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		// The fallback gets a context of its own, so that it still runs after a timeout.
		cleanupCtx, cancelCleanup := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancelCleanup()
		_ = e.cp.Client.Delete(ctx, exp)
		if err := waitGone(ctx, e, exp); err != nil {
			t.Errorf("exposure not deleted: %v", err)
			// Do not leave anything behind in Neutron for the others.
			forceCleanup(cleanupCtx, e, identity)
			return
		}
		if left := taggedPorts(t, ctx, e, identity); len(left) > 0 {
			t.Errorf("after deletion Neutron still has %d ports tagged for %s", len(left), identity)
			forceCleanup(cleanupCtx, e, identity)
		}
	})
}

func waitGone(ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) error {
	for {
		err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), &extensionsv1alpha1.SelfHostedShootExposure{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s still exists: %w", exp.Namespace, exp.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func forceCleanup(ctx context.Context, e *sharedEnv, identity string) {
	list, _ := e.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(identity)}})
	deletePortsWithFloatingIPs(ctx, e, list)
}

// deletePortsWithFloatingIPs removes what a test left behind, best effort: each port's
// floating IPs first, since Neutron refuses to delete a port a floating IP points at.
func deletePortsWithFloatingIPs(ctx context.Context, e *sharedEnv, list []ports.Port) {
	for _, p := range list {
		fips, _ := e.neutron.FloatingIPsOfPort(ctx, p.ID)
		for _, f := range fips {
			_ = e.neutron.DeleteFloatingIP(ctx, f.ID)
		}
		_ = e.neutron.DeletePort(ctx, p.ID)
	}
}

func taggedPorts(t *testing.T, ctx context.Context, e *sharedEnv, identity string) []ports.Port {
	t.Helper()
	list, err := e.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.TagExtension, openstack.ClusterTag(identity)}})
	if err != nil {
		t.Fatalf("listing tagged ports: %v", err)
	}
	return list
}

func floatingIPsOfPort(t *testing.T, ctx context.Context, e *sharedEnv, portID string) []floatingips.FloatingIP {
	t.Helper()
	list, err := e.neutron.FloatingIPsOfPort(ctx, portID)
	if err != nil {
		t.Fatalf("listing floating IPs: %v", err)
	}
	return list
}

// waitFor polls the exposure until cond is true.
func waitFor(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, what string, cond func(*extensionsv1alpha1.SelfHostedShootExposure) bool) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	for {
		if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err == nil && cond(current) {
			return current
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last status: %s", what, ctx.Err(), describe(current))
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func describe(exp *extensionsv1alpha1.SelfHostedShootExposure) string {
	b, _ := json.Marshal(exp.Status)
	return string(b)
}

func succeeded(exp *extensionsv1alpha1.SelfHostedShootExposure) bool {
	lo := exp.Status.LastOperation
	return lo != nil && lo.State == "Succeeded" && exp.Status.ObservedGeneration == exp.Generation && len(exp.Status.Ingress) > 0
}

// triggerReconcile sets the operation annotation as gardenlet does (and applies mutate in
// the same patch). It returns a function that waits until the reconciliation it triggered
// has succeeded. lastOperation has a resolution of one second, so it first waits until a
// new second begins after the last operation.
func triggerReconcile(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, mutate func(*extensionsv1alpha1.SelfHostedShootExposure)) func() *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		t.Fatalf("reading exposure: %v", err)
	}
	var before time.Time
	if lo := current.Status.LastOperation; lo != nil {
		before = lo.LastUpdateTime.Time
	}
	if wait := time.Until(before.Add(time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	patch := client.MergeFrom(current.DeepCopy())
	metav1.SetMetaDataAnnotation(&current.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	if mutate != nil {
		mutate(current)
	}
	if err := e.cp.Client.Patch(ctx, current, patch); err != nil {
		t.Fatalf("patching exposure: %v", err)
	}
	return func() *extensionsv1alpha1.SelfHostedShootExposure {
		return waitFor(t, ctx, e, exp, "the triggered reconciliation", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
			_, annotated := x.Annotations[v1beta1constants.GardenerOperation]
			lo := x.Status.LastOperation
			return !annotated && lo != nil && lo.State == "Succeeded" && lo.LastUpdateTime.After(before) && x.Status.ObservedGeneration == x.Generation
		})
	}
}

func testLogger(t *testing.T) logr.Logger {
	return zap.New(zap.UseDevMode(true), zap.WriteTo(testWriter{t}))
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

func portFilterIP(networkID, ip string) openstack.PortFilter {
	return openstack.PortFilter{NetworkID: networkID, FixedIPs: []string{ip}}
}

// oneSentence fails the test unless the lastError description is one sentence: one line,
// no sentence boundary inside.
func oneSentence(t *testing.T, description string) {
	t.Helper()
	if strings.Contains(description, "\n") || strings.Contains(description, ". ") || strings.Contains(description, ".;") {
		t.Errorf("lastError is not one sentence: %q", description)
	}
}

// adminNetwork is the local cloud's admin; without one in the env file the test ends as
// unavailable.
func adminNetwork(t *testing.T, ctx context.Context, e *sharedEnv) *openstack.Network {
	t.Helper()
	if e.os.AdminPassword == "" {
		framework.Unavailable(t, "the OpenStack env file names no admin (OS_ADMIN_PASSWORD); restart it with hack/openstack.sh up")
	}
	admin, err := e.os.AdminNetwork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return admin
}

// waitForError waits for lastError and checks that it carries code and is one sentence.
func waitForError(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, code gardencorev1beta1.ErrorCode) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	got := waitFor(t, ctx, e, exp, "lastError", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		return x.Status.LastError != nil
	})
	le := got.Status.LastError
	t.Logf("lastError: %s %v", le.Description, le.Codes)
	if !slices.Contains(le.Codes, code) {
		t.Errorf("codes %v, want %s", le.Codes, code)
	}
	oneSentence(t, le.Description)
	return got
}
