// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command controller measures the exposure controller against the real Keystone and
// Neutron of hack/openstack.sh and a kube-apiserver (envtest): OpenStack calls and wall
// time for create-to-ingress (3 control-plane nodes), a forced steady-state verification,
// an endpoints-only change and the deletion. It creates and removes its own Neutron ports
// and prints one table. Run it from the repository root: go run ./test/bench/controller.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

const ns = framework.Namespace

// phase is one measured step.
type phase struct {
	Name    string         `json:"name"`
	Seconds float64        `json:"seconds"`
	Calls   int            `json:"calls"`
	Writes  int            `json:"writes"`
	ByOp    map[string]int `json:"byOperation"`
}

func main() {
	nodes := flag.Int("nodes", 3, "control-plane nodes")
	rounds := flag.Int("rounds", 3, "exposures measured one after the other, each from creation to deletion")
	asJSON := flag.Bool("json", false, "print every round as JSON instead of a table")
	flag.Parse()
	logf.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*rounds)*3*time.Minute)
	defer cancel()
	all, err := run(ctx, *nodes, max(*rounds, 1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller bench:", err)
		os.Exit(1)
	}
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(all)
		return
	}
	fmt.Printf("Controller against real Keystone+Neutron (%d control-plane nodes, %d rounds; wall median and max, calls and writes the most any round made)\n", *nodes, len(all))
	fmt.Printf("%-34s %9s %9s %6s %7s  %s\n", "phase", "median", "max", "calls", "writes", "calls by operation (most in one round)")
	for _, p := range summarize(all) {
		fmt.Printf("%-34s %8.3fs %8.3fs %6d %7d  %s\n", p.Name, p.Median, p.Max, p.Calls, p.Writes, formatOps(p.ByOp))
	}
}

// summary is one phase over all rounds.
type summary struct {
	Name        string
	Median, Max float64
	Calls       int
	Writes      int
	ByOp        map[string]int
}

// summarize folds the rounds phase by phase, in the order of the first round.
func summarize(all [][]phase) []summary {
	if len(all) == 0 {
		return nil
	}
	var out []summary
	for i, first := range all[0] {
		s := summary{Name: first.Name, ByOp: map[string]int{}}
		var walls []float64
		for _, r := range all {
			if i >= len(r) {
				continue
			}
			p := r[i]
			walls = append(walls, p.Seconds)
			s.Calls, s.Writes = max(s.Calls, p.Calls), max(s.Writes, p.Writes)
			for k, v := range p.ByOp {
				s.ByOp[k] = max(s.ByOp[k], v)
			}
		}
		sort.Float64s(walls)
		s.Median, s.Max = walls[len(walls)/2], walls[len(walls)-1]
		out = append(out, s)
	}
	return out
}

func formatOps(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// env is what every round shares: the control plane, the OpenStack environment and the
// bench's own (uncounted) Neutron client.
type env struct {
	cp      *framework.ControlPlane
	os      framework.OpenStackEnv
	neutron *openstack.Network
}

func run(ctx context.Context, nodeCount, rounds int) ([][]phase, error) {
	envFile, err := framework.OpenStackEnvFile()
	if err != nil {
		return nil, err
	}
	osEnv, err := framework.LoadOpenStackEnv(envFile)
	if err != nil {
		return nil, fmt.Errorf("%w (start it with hack/openstack.sh up)", err)
	}
	if err := osEnv.Ping(ctx); err != nil {
		return nil, fmt.Errorf("local OpenStack does not answer: %w", err)
	}
	cp, err := framework.NewControlPlane()
	if err != nil {
		return nil, err
	}
	defer func() { _ = cp.Stop() }()
	if err := framework.Bootstrap(ctx, cp.Client, osEnv.BootstrapOptions(framework.ApplicationCredential)); err != nil {
		return nil, err
	}
	own := openstack.NewClientFactory(openstack.FactoryOptions{})
	neutron, err := own.Network(ctx, openstack.AuthConfig{
		Credentials: &openstack.Credentials{DomainName: osEnv.DomainName, TenantName: osEnv.ProjectName, Username: osEnv.Username, Password: osEnv.Password},
		AuthURL:     osEnv.AuthURL, Region: osEnv.Region,
	})
	if err != nil {
		return nil, err
	}
	e := env{cp: cp, os: osEnv, neutron: neutron}
	var all [][]phase
	for range rounds {
		phases, err := e.round(ctx, nodeCount)
		if err != nil {
			return all, err
		}
		all = append(all, phases)
	}
	return all, nil
}

// round measures one exposure from creation to deletion with a new cluster identity, new
// node ports and a new manager whose client factory has no cached token, as for a new
// shoot.
func (e env) round(ctx context.Context, nodeCount int) (phases []phase, err error) {
	cp, osEnv, neutron := e.cp, e.os, e.neutron
	identity, err := setIdentity(ctx, cp.Client)
	if err != nil {
		return nil, err
	}
	var endpoints []extensionsv1alpha1.ControlPlaneEndpoint
	for i := range nodeCount {
		name := fmt.Sprintf("%s-cp-%d", identity, i)
		p, err := ports.Create(ctx, neutron.ServiceClient(), ports.CreateOpts{NetworkID: osEnv.NetworkID, Name: name, DeviceOwner: "compute:nova", DeviceID: name,
			FixedIPs: []ports.IP{{SubnetID: osEnv.SubnetID}}}).Extract()
		if err != nil {
			return nil, fmt.Errorf("creating node port: %w", err)
		}
		defer func() { _ = neutron.DeletePort(context.Background(), p.ID) }()
		ip := p.FixedIPs[0].IPAddress
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{exposure.LabelControlPlane: ""}}}
		if err := cp.Client.Create(ctx, node); err != nil {
			return nil, err
		}
		defer func() { _ = cp.Client.Delete(context.Background(), node) }()
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		if err := cp.Client.Status().Update(ctx, node); err != nil {
			return nil, err
		}
		endpoints = append(endpoints, extensionsv1alpha1.ControlPlaneEndpoint{NodeName: name, Addresses: node.Status.Addresses})
	}

	metrics := openstack.NewMetrics(nil)
	clock := clocktesting.NewFakeClock(time.Now())
	mgr, err := framework.NewManager(cp.Config, cp.Scheme, io.Discard)
	if err != nil {
		return nil, err
	}
	actuator := exposure.NewActuator(mgr, exposure.ActuatorOptions{
		ClientFactory: openstack.NewClientFactory(openstack.FactoryOptions{Metrics: metrics}),
		AgentImage:    "example.org/kube-vip-agent:bench", VerifyInterval: time.Hour, Clock: clock,
		// The controller's OpenStack calls are measured; no agent runs.
		FrontDoorProbe: exposure.FrontDoorOff,
	})
	if err := exposure.AddToManager(ctx, mgr, exposure.AddOptions{Actuator: actuator}); err != nil {
		return nil, err
	}
	// Start the informers the reconcilers read with the manager, so that the wait below
	// covers them: the measurement is of the controller, not of its start.
	for _, obj := range []client.Object{&extensionsv1alpha1.SelfHostedShootExposure{}, &extensionsv1alpha1.Cluster{}, &corev1.Node{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "the controller's manager: %v\n", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, errors.New("the manager's cache did not sync")
	}

	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: identity, Namespace: ns},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec:    extensionsv1alpha1.DefaultSpec{Type: exposure.DefaultType},
			CredentialsRef: &corev1.ObjectReference{Kind: "Secret", Namespace: ns, Name: framework.CloudProviderSecretName},
			Port:           6443,
			Endpoints:      endpoints,
		},
	}
	defer func() {
		// Whatever happened: leave nothing behind.
		_ = cp.Client.Delete(context.Background(), exp)
		waitCtx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		if gone := waitGone(waitCtx, cp.Client, exp); gone != nil && err == nil {
			err = gone
		}
	}()

	measure := func(name string, do func() error) error {
		before := metrics.Snapshot()
		start := time.Now()
		if err := do(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		d := metrics.Snapshot().Sub(before)
		phases = append(phases, phase{Name: name, Seconds: time.Since(start).Seconds(), Calls: d.Total(), Writes: d.Writes(), ByOp: d})
		return nil
	}

	if err := measure("create to ingress", func() error {
		if err := cp.Client.Create(ctx, exp); err != nil {
			return err
		}
		return waitSucceeded(ctx, cp.Client, exp, time.Time{})
	}); err != nil {
		return phases, err
	}
	clock.Step(2 * time.Hour)
	before, err := nextSecond(ctx, cp.Client, exp)
	if err != nil {
		return phases, err
	}
	if err := measure("steady state (forced verification)", func() error {
		return reconcileOnce(ctx, cp.Client, exp, before, nil)
	}); err != nil {
		return phases, err
	}
	if before, err = nextSecond(ctx, cp.Client, exp); err != nil {
		return phases, err
	}
	if err := measure("endpoints-only change", func() error {
		return reconcileOnce(ctx, cp.Client, exp, before, func(x *extensionsv1alpha1.SelfHostedShootExposure) {
			x.Spec.Endpoints = x.Spec.Endpoints[:len(x.Spec.Endpoints)-1]
		})
	}); err != nil {
		return phases, err
	}
	if err := measure("delete", func() error {
		if err := cp.Client.Delete(ctx, exp); err != nil {
			return err
		}
		return waitGone(ctx, cp.Client, exp)
	}); err != nil {
		return phases, err
	}
	left, err := neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(identity)}})
	if err != nil {
		return phases, err
	}
	if len(left) > 0 {
		return phases, fmt.Errorf("after deletion %d ports are still tagged for %s", len(left), identity)
	}
	return phases, nil
}

func setIdentity(ctx context.Context, c client.Client) (string, error) {
	id := framework.UniqueTechnicalID("kvbench-")
	return id, framework.SetTechnicalID(ctx, c, id)
}

// nextSecond returns the last operation's update time of exp once the wall clock has
// passed it by a second: lastOperation has a resolution of one second, and the next
// reconciliation must be told apart from the previous one. The wait is not measured.
func nextSecond(ctx context.Context, c client.Client, exp *extensionsv1alpha1.SelfHostedShootExposure) (time.Time, error) {
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		return time.Time{}, err
	}
	var before time.Time
	if lo := current.Status.LastOperation; lo != nil {
		before = lo.LastUpdateTime.Time
	}
	select {
	case <-ctx.Done():
		return before, ctx.Err()
	case <-time.After(time.Until(before.Add(time.Second))):
		return before, nil
	}
}

// reconcileOnce triggers a reconciliation with the operation annotation (as gardenlet
// does) and waits for a success that is newer than before.
func reconcileOnce(ctx context.Context, c client.Client, exp *extensionsv1alpha1.SelfHostedShootExposure, before time.Time, mutate func(*extensionsv1alpha1.SelfHostedShootExposure)) error {
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(exp), current); err != nil {
		return err
	}
	patch := client.MergeFrom(current.DeepCopy())
	metav1.SetMetaDataAnnotation(&current.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	if mutate != nil {
		mutate(current)
	}
	if err := c.Patch(ctx, current, patch); err != nil {
		return err
	}
	return waitSucceeded(ctx, c, exp, before)
}

func waitSucceeded(ctx context.Context, c client.Client, exp *extensionsv1alpha1.SelfHostedShootExposure, after time.Time) error {
	current := &extensionsv1alpha1.SelfHostedShootExposure{}
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(exp), current); err == nil {
			lo := current.Status.LastOperation
			_, annotated := current.Annotations[v1beta1constants.GardenerOperation]
			if !annotated && lo != nil && lo.State == "Succeeded" && lo.LastUpdateTime.After(after) &&
				current.Status.ObservedGeneration == current.Generation && len(current.Status.Ingress) > 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if le := current.Status.LastError; le != nil {
				return errors.New(le.Description)
			}
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func waitGone(ctx context.Context, c client.Client, exp *extensionsv1alpha1.SelfHostedShootExposure) error {
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(exp), &extensionsv1alpha1.SelfHostedShootExposure{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("exposure still exists: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
