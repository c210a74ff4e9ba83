// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package faults drives the real controller against the local Keystone and Neutron
// through the fault-injecting proxy of test/faults, and counts what is left in Neutron.
package faults_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/nodes"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/faults"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

const (
	ns = framework.Namespace
	// testTag marks the node ports that the tests create.
	testTag = "kube-vip-faults-test"
	// clientTimeout bounds each OpenStack request of the controller under test, so that a
	// stalled call is given up quickly.
	clientTimeout = 2 * time.Second
	// converge bounds the wait for a reconciliation or deletion after one fault.
	converge = 60 * time.Second
)

var suite framework.Suite[*sharedEnv]

type sharedEnv struct {
	cp    *framework.ControlPlane
	os    framework.OpenStackEnv
	proxy *faults.Proxy
	// neutron is the tests' own client, straight to Neutron.
	neutron *openstack.Network
	nodes   []nodeFixture
}

type nodeFixture struct {
	name, ip, port string
}

// foreignPair is a pair on the first node port that the extension must keep.
const foreignPair = "10.250.0.0/16"

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func env(t *testing.T) *sharedEnv {
	t.Helper()
	osEnv := framework.OpenStack(t)
	return suite.Get(t, func(s *framework.Suite[*sharedEnv]) (*sharedEnv, error) { return setup(s, osEnv) })
}

func setup(s *framework.Suite[*sharedEnv], osEnv framework.OpenStackEnv) (*sharedEnv, error) {
	proxy, err := faults.New(osEnv.AuthURL, osEnv.NeutronURL)
	if err != nil {
		return nil, err
	}
	s.Defer(proxy.Close)
	cp, err := framework.NewControlPlane()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	s.Defer(func() { _ = cp.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := osEnv.BootstrapOptions(framework.Password)
	opts.AuthURL = proxy.KeystoneURL()
	if err := framework.Bootstrap(ctx, cp.Client, opts); err != nil {
		return nil, fmt.Errorf("bootstrapping Gardener objects: %w", err)
	}
	neutron, err := osEnv.Network(ctx)
	if err != nil {
		return nil, err
	}
	e := &sharedEnv{cp: cp, os: osEnv, proxy: proxy, neutron: neutron}
	// Node ports of an earlier test process that died before its cleanup; the ports of a
	// test process that still runs are left alone.
	stale, err := neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{testTag}})
	if err != nil {
		return nil, err
	}
	for _, p := range stale {
		var pid, i int
		if _, err := fmt.Sscanf(p.Name, "faults-cp-%d-%d", &pid, &i); err == nil && !processAlive(pid) {
			_ = neutron.DeletePort(ctx, p.ID)
		}
	}
	for i := range 3 {
		name := fmt.Sprintf("faults-cp-%d-%d", os.Getpid(), i)
		opts := ports.CreateOpts{NetworkID: osEnv.NetworkID, Name: name, DeviceOwner: "compute:nova", DeviceID: name,
			FixedIPs: []ports.IP{{SubnetID: osEnv.SubnetID}}}
		if i == 0 {
			opts.AllowedAddressPairs = []ports.AddressPair{{IPAddress: foreignPair}}
		}
		p, err := ports.Create(ctx, neutron.ServiceClient(), opts).Extract()
		if err != nil {
			return nil, fmt.Errorf("creating node port: %w", err)
		}
		s.Defer(func() { _ = neutron.DeletePort(context.Background(), p.ID) })
		if err := neutron.ReplacePortTags(ctx, p.ID, []string{testTag}); err != nil {
			return nil, fmt.Errorf("tagging node port: %w", err)
		}
		nf := nodeFixture{name: name, ip: p.FixedIPs[0].IPAddress, port: p.ID}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{exposure.LabelControlPlane: ""}}}
		if err := cp.Client.Create(ctx, node); err != nil {
			return nil, fmt.Errorf("creating Node: %w", err)
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nf.ip}}
		if err := cp.Client.Status().Update(ctx, node); err != nil {
			return nil, fmt.Errorf("setting Node address: %w", err)
		}
		e.nodes = append(e.nodes, nf)
	}
	return e, nil
}

func processAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// exposures numbers the exposures of the tests, so that one stuck in deletion does not
// block the next run.
var exposures int

// setControlPlane adds or removes the control-plane label of every test Node.
func (e *sharedEnv) setControlPlane(t *testing.T, ctx context.Context, on bool) {
	t.Helper()
	for _, n := range e.nodes {
		setLabel(t, ctx, e, n.name, on)
	}
}

// setLabel adds or removes the control-plane label of a Node.
func setLabel(t *testing.T, ctx context.Context, e *sharedEnv, name string, on bool) {
	t.Helper()
	node := &corev1.Node{}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatalf("reading Node: %v", err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	if on {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[exposure.LabelControlPlane] = ""
	} else {
		delete(node.Labels, exposure.LabelControlPlane)
	}
	if err := e.cp.Client.Patch(ctx, node, patch); err != nil {
		t.Fatalf("labelling Node: %v", err)
	}
}

// startController runs the exposure and node controllers in a manager of their own, as
// the binary wires them, with a short client timeout and fast backoff. It returns a
// function that stops the manager.
func startController(t *testing.T, e *sharedEnv) (stop func()) {
	t.Helper()
	mgr, err := framework.NewManager(e.cp.Config, e.cp.Scheme, testWriter{t})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	actuator := exposure.NewActuator(mgr, exposure.ActuatorOptions{
		ClientFactory: openstack.NewClientFactory(openstack.FactoryOptions{
			Metrics: openstack.NewMetrics(prometheus.NewRegistry()),
			Timeout: clientTimeout,
		}),
		AgentImage: "example.org/kube-vip-agent:test",
		// Neutron faults only: no agent runs, so the front door is not checked.
		FrontDoorProbe: exposure.FrontDoorOff,
		MinBackoff:     100 * time.Millisecond,
		MaxBackoff:     time.Second,
	})
	if err := exposure.AddToManager(context.Background(), mgr, exposure.AddOptions{
		Actuator:   actuator,
		Controller: controller.Options{MaxConcurrentReconciles: 1},
	}); err != nil {
		t.Fatalf("adding the exposure controller: %v", err)
	}
	if err := nodes.AddToManager(context.Background(), mgr, nodes.AddOptions{
		Syncer:     actuator,
		Controller: controller.Options{MaxConcurrentReconciles: 1, RateLimiter: nodes.DefaultRateLimiter()},
	}); err != nil {
		t.Fatalf("adding the node controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	controllerCache = mgr.GetClient()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			controllerCache = nil
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() && os.Getenv("FAULTS_LOG") != "" {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// controllerCache is the running controller's cached client (nil while none runs).
var controllerCache client.Reader

// waitForTechnicalID waits until the running controller's cache sees the Cluster with the
// technical ID: the controller derives the cluster identity from it once, at the first
// reconciliation of an exposure, and records it; an exposure created while the cache still
// holds the previous ID would be bound to that one.
func waitForTechnicalID(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	if controllerCache == nil {
		return
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, converge, true, func(ctx context.Context) (bool, error) {
		cluster, err := extensionscontroller.GetCluster(ctx, controllerCache, ns)
		return err == nil && cluster.Shoot != nil && cluster.Shoot.Status.TechnicalID == id, nil
	}); err != nil {
		t.Fatalf("the controller's cache did not see technical ID %s: %v", id, err)
	}
}

// waitForLabels waits until the running controller's cache sees the control-plane label on
// every shared Node (or on none): the exposure's first reconciliation reads the Nodes from
// there, and one that still sees the previous labels would make other calls.
func waitForLabels(t *testing.T, ctx context.Context, e *sharedEnv, on bool) {
	t.Helper()
	if controllerCache == nil {
		return
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, converge, true, func(ctx context.Context) (bool, error) {
		return !slices.ContainsFunc(e.nodes, func(n nodeFixture) bool {
			node := &corev1.Node{}
			err := controllerCache.Get(ctx, client.ObjectKey{Name: n.name}, node)
			_, labelled := node.Labels[exposure.LabelControlPlane]
			return err != nil || labelled != on
		}), nil
	}); err != nil {
		t.Fatalf("the controller's cache did not see the control-plane labels (on: %t): %v", on, err)
	}
}

// newExposure returns an exposure for the shared nodes with a fresh cluster identity.
func newExposure(t *testing.T, ctx context.Context, e *sharedEnv, name string) (*extensionsv1alpha1.SelfHostedShootExposure, string) {
	t.Helper()
	exposures++
	name = fmt.Sprintf("%s-%d", name, exposures)
	id := framework.UniqueTechnicalID("kvf-")
	if err := framework.SetTechnicalID(ctx, e.cp.Client, id); err != nil {
		t.Fatal(err)
	}
	waitForTechnicalID(t, ctx, id)
	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec:    extensionsv1alpha1.DefaultSpec{Type: exposure.DefaultType},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: framework.CloudProviderSecretName},
			Port:           6443,
			Endpoints:      []extensionsv1alpha1.ControlPlaneEndpoint{},
		},
	}
	t.Cleanup(func() {
		removeExposure(e, exp)
		forceCleanup(e, id)
	})
	return exp, id
}

// removeExposure deletes an exposure that a failed test left behind, so that it does not
// reconcile on in the later tests of the shared environment (with their identities, as
// long as it recorded none itself): through the controller if it manages within 30 s, else
// by dropping its finalizers; forceCleanup then removes what it left in Neutron.
func removeExposure(e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := client.ObjectKeyFromObject(exp)
	if err := e.cp.Client.Delete(ctx, &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}); apierrors.IsNotFound(err) {
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := e.cp.Client.Get(ctx, key, &extensionsv1alpha1.SelfHostedShootExposure{})
		return apierrors.IsNotFound(err), nil
	})
	if err == nil {
		return
	}
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if e.cp.Client.Get(ctx, key, current) == nil {
		patch := client.MergeFrom(current.DeepCopy())
		current.Finalizers = nil
		_ = e.cp.Client.Patch(ctx, current, patch)
	}
}

// forceCleanup removes whatever a failed test left in Neutron for the identity, and the
// VIP pairs from the test's node ports.
func forceCleanup(e *sharedEnv, identity string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ps, fips, _ := leftovers(ctx, e, identity)
	for _, f := range fips {
		_ = e.neutron.DeleteFloatingIP(ctx, f.ID)
	}
	for _, p := range ps {
		vip := openstack.PortAddress(&p, "")
		for _, n := range e.nodes {
			if np, err := e.neutron.GetPort(ctx, n.port); err == nil {
				_, _ = e.neutron.RemovePairFromPort(ctx, np, vip)
			}
		}
		_ = e.neutron.DeletePort(ctx, p.ID)
	}
}

// leftovers lists the VIP ports (by name, whatever their tags) and floating IPs (by the
// identity in their description) of the identity.
func leftovers(ctx context.Context, e *sharedEnv, identity string) ([]ports.Port, []floatingips.FloatingIP, error) {
	ps, err := e.neutron.ListPorts(ctx, openstack.PortFilter{Name: "kube-vip-" + identity})
	if err != nil {
		return nil, nil, err
	}
	all, err := e.neutron.ListFloatingIPs(ctx, floatingips.ListOpts{})
	if err != nil {
		return nil, nil, err
	}
	var fips []floatingips.FloatingIP
	for _, f := range all {
		if strings.Contains(f.Description, identity) {
			fips = append(fips, f)
		}
	}
	return ps, fips, nil
}

// mustLeftovers is leftovers for a test, which ends on an error of Neutron.
func mustLeftovers(t *testing.T, ctx context.Context, e *sharedEnv, identity string) ([]ports.Port, []floatingips.FloatingIP) {
	t.Helper()
	ps, fips, err := leftovers(ctx, e, identity)
	if err != nil {
		t.Fatalf("listing the cluster's ports and floating IPs: %v", err)
	}
	return ps, fips
}

// observer polls the exposure and fails the test when a lastError carries a code that
// stops gardenlet's retries although the fault heals by itself.
type observer struct {
	t   *testing.T
	e   *sharedEnv
	key client.ObjectKey
	// seen are the non-retryable errors seen.
	seen []string
}

func (o *observer) poll(ctx context.Context, what string, cond func(*extensionsv1alpha1.SelfHostedShootExposure, error) bool) {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, converge)
	defer cancel()
	for {
		exp := &extensionsv1alpha1.SelfHostedShootExposure{}
		err := o.e.cp.Client.Get(ctx, o.key, exp)
		if err == nil && exp.Status.LastError != nil && v1beta1helper.HasNonRetryableErrorCode(*exp.Status.LastError) {
			msg := fmt.Sprintf("%v: %s", exp.Status.LastError.Codes, exp.Status.LastError.Description)
			if !slices.Contains(o.seen, msg) {
				o.seen = append(o.seen, msg)
			}
		}
		if cond(exp, err) {
			return
		}
		select {
		case <-ctx.Done():
			last := "none"
			if exp.Status.LastError != nil {
				last = fmt.Sprintf("%v %s", exp.Status.LastError.Codes, exp.Status.LastError.Description)
			}
			o.t.Fatalf("waiting for %s: %v; lastError: %s", what, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func succeeded(exp *extensionsv1alpha1.SelfHostedShootExposure, err error) bool {
	lo := exp.Status.LastOperation
	return err == nil && lo != nil && lo.State == "Succeeded" && exp.Status.ObservedGeneration == exp.Generation && len(exp.Status.Ingress) > 0
}

func gone(_ *extensionsv1alpha1.SelfHostedShootExposure, err error) bool {
	return apierrors.IsNotFound(err)
}

// assertExact checks that Neutron holds exactly one VIP port and one floating IP of the
// identity, and the VIP pair exactly once on each of wantPairs node ports and on no other
// port of the network; the foreign pair stays. It returns the VIP.
func assertExact(t *testing.T, ctx context.Context, e *sharedEnv, identity string, wantPairs int) string {
	t.Helper()
	ps, fips := mustLeftovers(t, ctx, e, identity)
	if len(ps) != 1 || len(fips) != 1 {
		var found []string
		for _, f := range fips {
			found = append(found, fmt.Sprintf("%s on port %q (%s)", f.FloatingIP, f.PortID, f.Description))
		}
		t.Fatalf("Neutron holds %d VIP ports and %d floating IPs of the cluster, want 1 and 1: %v", len(ps), len(fips), found)
	}
	if fips[0].PortID != ps[0].ID {
		t.Errorf("the floating IP is on port %q, not on the VIP port %s", fips[0].PortID, ps[0].ID)
	}
	vip := openstack.PortAddress(&ps[0], "")
	assertPairs(t, ctx, e, vip, wantPairs)
	return vip
}

// assertPairs checks that want of the test's node ports (the first ones) carry the VIP
// pair exactly once and that no other port of the network carries it.
func assertPairs(t *testing.T, ctx context.Context, e *sharedEnv, vip string, want int) {
	t.Helper()
	list, err := e.neutron.ListPorts(ctx, openstack.PortFilter{NetworkID: e.os.NetworkID})
	if err != nil {
		t.Fatalf("listing ports: %v", err)
	}
	holders := 0
	for _, p := range list {
		n := 0
		for _, pair := range p.AllowedAddressPairs {
			if pair.IPAddress == vip || pair.IPAddress == vip+"/32" { // the bare address, or the older form
				n++
			}
		}
		if n > 1 {
			t.Errorf("port %s carries the VIP pair %d times", p.ID, n)
		}
		if n == 0 {
			continue
		}
		holders++
		if !slices.ContainsFunc(e.nodes, func(nf nodeFixture) bool { return nf.port == p.ID }) {
			t.Errorf("port %s (%s) is no control-plane node's but carries the VIP pair", p.ID, p.Name)
		}
		if p.ID == e.nodes[0].port && !slices.ContainsFunc(p.AllowedAddressPairs, func(a ports.AddressPair) bool { return a.IPAddress == foreignPair }) {
			t.Errorf("the foreign pair %s on port %s is gone", foreignPair, p.ID)
		}
	}
	if holders != want {
		t.Errorf("%d ports carry the VIP pair, want %d", holders, want)
	}
}

// assertNothingLeft checks that nothing of the identity is left and no port carries vip.
func assertNothingLeft(t *testing.T, ctx context.Context, e *sharedEnv, identity, vip string) {
	t.Helper()
	ps, fips := mustLeftovers(t, ctx, e, identity)
	if len(ps) != 0 || len(fips) != 0 {
		t.Errorf("after deletion Neutron holds %d VIP ports and %d floating IPs of the cluster", len(ps), len(fips))
	}
	if vip != "" {
		assertPairs(t, ctx, e, vip, 0)
	}
}
