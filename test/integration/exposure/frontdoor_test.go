// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/agent/election"
	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// The front-door tests check the front door for real over TCP: the VIP lives in network
// namespaces of a test/netns LAN, a node namespace that "holds" it carries the address and
// accepts connections on spec.port, and the controller dials from the LAN's client
// namespace. The kube-apiserver of these tests runs no kubelet and no DaemonSet
// controller, so the test plays them (the agent pod from the DaemonSet's template, Ready,
// and the DaemonSet's counts) and the agent (the Lease, renewed every 300 ms).

// frontDoorLAN is the netns LAN and the listeners on the VIP.
type frontDoorLAN struct {
	h *netns.Harness
	// stops closes the listener per node.
	mu    sync.Mutex
	stops map[string]func()
}

func newFrontDoorLAN(t *testing.T) *frontDoorLAN {
	t.Helper()
	// The /15 puts the floating IPs (198.19.0.0/24) on the LAN too: a node that carries one
	// plays the router's hairpin NAT.
	return &frontDoorLAN{h: netns.NewForTest(t, netns.Options{Prefix: "kvf-", Nodes: 2, Subnet: netip.MustParsePrefix("198.18.0.0/15")}), stops: map[string]func(){}}
}

// startProbingController starts the controller with the TCP front-door probe, which dials
// from the LAN's client, and the agents read every second; tweak (may be nil) sets more.
func (l *frontDoorLAN) startProbingController(t *testing.T, e *sharedEnv, tweak func(*exposure.ActuatorOptions)) {
	t.Helper()
	startController(t, e, actuatorOptions(func(o *exposure.ActuatorOptions) {
		o.FrontDoorProbe = exposure.FrontDoorTCP
		o.Dial = l.h.Client().DialContext
		o.AgentRefreshInterval = time.Second
		if tweak != nil {
			tweak(o)
		}
	}))
}

// hold puts the VIP on node i of the LAN and accepts TCP connections on VIP:port there.
func (l *frontDoorLAN) hold(t *testing.T, ctx context.Context, i int, vip string, port int32) {
	t.Helper()
	n := l.h.Nodes()[i]
	addr := netip.MustParseAddr(vip)
	if err := n.AddAddress(ctx, netip.PrefixFrom(addr, 32)); err != nil {
		t.Fatalf("adding the VIP to %s: %v", n, err)
	}
	ln, err := n.Listen(ctx, "tcp", net.JoinHostPort(vip, strconv.Itoa(int(port))))
	if err != nil {
		t.Fatalf("listening on the VIP in %s: %v", n, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	stop := func() {
		_ = ln.Close()
		_ = n.RemoveAddress(context.Background(), netip.PrefixFrom(addr, 32))
	}
	l.mu.Lock()
	l.stops[n.Name()] = stop
	l.mu.Unlock()
	t.Cleanup(stop)
}

// release drops the VIP from node i.
func (l *frontDoorLAN) release(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if stop := l.stops[l.h.Nodes()[i].Name()]; stop != nil {
		stop()
	}
}

// agentPlayer plays the kubelet, the DaemonSet controller and the agent: agent pods from
// the DaemonSet's template and the Lease with its renewals.
type agentPlayer struct {
	t *testing.T
	e *sharedEnv

	mu     sync.Mutex
	holder string
	since  time.Time
}

// runPod creates a Ready agent pod on node from the DaemonSet's template and sets the
// DaemonSet's counts to ready pods.
func (p *agentPlayer) runPods(ctx context.Context, nodes ...string) {
	t := p.t
	t.Helper()
	ds := &appsv1.DaemonSet{}
	if err := p.e.cp.Client.Get(ctx, clientKey(agentrollout.Name), ds); err != nil {
		t.Fatalf("reading the agent DaemonSet: %v", err)
	}
	for _, node := range nodes {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: agentrollout.Name + "-" + node, Namespace: ns, Labels: ds.Spec.Template.Labels},
			Spec:       *ds.Spec.Template.Spec.DeepCopy(),
		}
		pod.Spec.NodeName = node
		if err := p.e.cp.Client.Create(ctx, pod); err != nil {
			t.Fatalf("creating the agent pod on %s: %v", node, err)
		}
		t.Cleanup(func() {
			_ = p.e.cp.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
		})
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if err := p.e.cp.Client.Status().Update(ctx, pod); err != nil {
			t.Fatalf("making the agent pod on %s Ready: %v", node, err)
		}
	}
	ds.Status.DesiredNumberScheduled = int32(len(nodes))
	ds.Status.CurrentNumberScheduled = int32(len(nodes))
	ds.Status.NumberReady = int32(len(nodes))
	if err := p.e.cp.Client.Status().Update(ctx, ds); err != nil {
		t.Fatalf("setting the DaemonSet's counts: %v", err)
	}
}

// lead makes node the holder of the Lease and renews it every 300 ms until ctx ends.
func (p *agentPlayer) lead(ctx context.Context, node string) {
	p.mu.Lock()
	first := p.holder == ""
	p.holder, p.since = node, time.Now()
	p.mu.Unlock()
	p.renew(ctx)
	if !first {
		return
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(300 * time.Millisecond):
				p.renew(ctx)
			}
		}
	}()
}

func (p *agentPlayer) renew(ctx context.Context) {
	p.mu.Lock()
	holder, since := p.holder, p.since
	p.mu.Unlock()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: agentrollout.LeaseName, Namespace: ns}}
	err := p.e.cp.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease)
	now := metav1.NewMicroTime(time.Now())
	lease.Annotations = map[string]string{election.LeaseDurationAnnotation: "1500"}
	lease.Spec = coordinationv1.LeaseSpec{
		HolderIdentity: &holder, LeaseDurationSeconds: ptr.To[int32](2),
		AcquireTime: &metav1.MicroTime{Time: since}, RenewTime: &now,
	}
	if err == nil {
		err = p.e.cp.Client.Update(ctx, lease)
	} else {
		err = p.e.cp.Client.Create(ctx, lease)
	}
	if err != nil && ctx.Err() == nil {
		p.t.Logf("renewing the Lease: %v", err)
	}
}

func (p *agentPlayer) cleanup() {
	_ = p.e.cp.Client.Delete(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: agentrollout.LeaseName, Namespace: ns}})
}

func providerStatus(t *testing.T, exp *extensionsv1alpha1.SelfHostedShootExposure) *v1alpha1.ExposureStatus {
	t.Helper()
	s, err := exposure.DecodeStatus(exp)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func condition(t *testing.T, exp *extensionsv1alpha1.SelfHostedShootExposure, typ string) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(providerStatus(t, exp).Conditions, typ)
}

// eventReasons lists the reasons of the Events on the exposure.
func eventReasons(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) []string {
	t.Helper()
	var reasons []string
	for _, ev := range exposureEvents(t, ctx, e, exp) {
		reasons = append(reasons, ev.Reason)
	}
	return reasons
}

// eventMessage is the note of exp's first Event with the reason; "" when there is none.
func eventMessage(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure, reason string) string {
	t.Helper()
	for _, ev := range exposureEvents(t, ctx, e, exp) {
		if ev.Reason == reason {
			return ev.Note
		}
	}
	return ""
}

// exposureEvents are the Events regarding exp.
func exposureEvents(t *testing.T, ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := e.cp.Client.List(ctx, list, client.InNamespace(exp.Namespace)); err != nil {
		t.Fatalf("listing Events: %v", err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.UID == exp.UID {
			out = append(out, ev)
		}
	}
	return out
}

// checkKeystoneTLS checks that OpenStackVerified is True and warns in its message exactly
// when Keystone is reached over plain http (the local Keystone is; framework.KeystoneTLS puts
// TLS in front of it). The Warning Event that goes with the warning is checked where it is
// awaited.
func checkKeystoneTLS(t *testing.T, exp *extensionsv1alpha1.SelfHostedShootExposure, tls bool) {
	t.Helper()
	c := condition(t, exp, v1alpha1.ConditionOpenStackVerified)
	if c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("OpenStackVerified %+v, want True", c)
		return
	}
	if want := !tls; (c.Reason == "VerifiedWithoutTLS") != want || strings.Contains(c.Message, "plain http") != want {
		t.Errorf("Keystone over TLS %v: OpenStackVerified reason %q, message %q; want the plain-http warning %v", tls, c.Reason, c.Message, want)
	}
}

// watchWaiting records the first lastError, and the first ingress shown before the
// exposure succeeded, until stop is called.
func watchWaiting(ctx context.Context, e *sharedEnv, exp *extensionsv1alpha1.SelfHostedShootExposure) (stop func() (sawError, earlyIngress string)) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg                  sync.WaitGroup
		sawError, sawIngres string
	)
	wg.Go(func() {
		for ctx.Err() == nil {
			cur := &extensionsv1alpha1.SelfHostedShootExposure{}
			if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(exp), cur); err == nil {
				if le := cur.Status.LastError; le != nil && sawError == "" {
					sawError = le.Description
				}
				lo := cur.Status.LastOperation
				succeeded := lo != nil && lo.State == gardencorev1beta1.LastOperationStateSucceeded
				if len(cur.Status.Ingress) > 0 && !succeeded && sawIngres == "" {
					sawIngres = cur.Status.Ingress[0].IP
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return func() (string, string) {
		cancel()
		wg.Wait()
		return sawError, sawIngres
	}
}

// TestInternalOnlyDoorSaysHowFarItWasProven: an internal-only exposure publishes its VIP,
// which no floating IP's hairpin proves; the controller, whose node is unknown here, dials
// it across a real LAN and Succeeded says that the door was reached from its host only.
func TestInternalOnlyDoorSaysHowFarItWasProven(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lan := newFrontDoorLAN(t)
	lan.startProbingController(t, e, nil)
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 2)
	exp := newExposure(exposureOptions{name: "internal-" + id[len(id)-8:], nodes: nodes, providerConfig: fmt.Sprintf(`{%s,"internalOnly":true}`, exposureConfigHead)})
	create(t, ctx, e, exp, id)
	// OpenStack done and the agents deployed, none of them running yet.
	cur := waitFor(t, ctx, e, exp, "OpenStack verified, waiting for the agents", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		c := meta.FindStatusCondition(providerStatus(t, x).Conditions, v1alpha1.ConditionVIPHeld)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "NoHolder"
	})
	vip := providerStatus(t, cur).VIPAddress
	player := &agentPlayer{t: t, e: e}
	t.Cleanup(player.cleanup)
	player.runPods(ctx, nodes[0].name, nodes[1].name)
	player.lead(ctx, nodes[0].name)
	lan.hold(t, ctx, 0, vip, exp.Spec.Port)
	cur = waitFor(t, ctx, e, exp, "Succeeded", succeeded)
	c := condition(t, cur, v1alpha1.ConditionVIPHeld)
	t.Logf("VIPHeld: %s", c.Message)
	door := net.JoinHostPort(vip, strconv.Itoa(int(exp.Spec.Port)))
	if want := "The VIP door " + door + " was reached from the controller's host only"; !strings.Contains(c.Message, want) {
		t.Errorf("VIPHeld message %q does not say %q", c.Message, want)
	}
}

// TestSucceededOnlyOnceTheFrontDoorWorks: the exposure stays in Processing, without
// lastError and without ingress, while no agent holds the Lease and while the holder's VIP
// does not answer; it becomes Succeeded with the floating IP once both hold. Conditions
// and Events say so, and a failover is reported in providerStatus.agent.
func TestSucceededOnlyOnceTheFrontDoorWorks(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	lan := newFrontDoorLAN(t)
	lan.startProbingController(t, e, func(o *exposure.ActuatorOptions) { o.FrontDoorWait = 2 * time.Minute })
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 2)
	exp := newExposure(exposureOptions{name: "frontdoor-" + id[len(id)-8:], nodes: nodes})
	create(t, ctx, e, exp, id)
	player := &agentPlayer{t: t, e: e}
	t.Cleanup(player.cleanup)
	// The player's renewals end with playCtx, so that the Lease can be deleted for good.
	playCtx, stopPlaying := context.WithCancel(ctx)
	defer stopPlaying()
	stopWatch := watchWaiting(ctx, e, exp)

	// OpenStack done, no agent: Processing.
	cur := waitFor(t, ctx, e, exp, "OpenStack verified, waiting for the agents", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		c := meta.FindStatusCondition(providerStatus(t, x).Conditions, v1alpha1.ConditionVIPHeld)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "NoHolder"
	})
	checkKeystoneTLS(t, cur, false)
	if c := condition(t, cur, v1alpha1.ConditionAgentsReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("AgentsReady %+v, want False", c)
	}
	vip, fip := providerStatus(t, cur).VIPAddress, providerStatus(t, cur).FloatingIPAddress
	if vip == "" || fip == "" {
		t.Fatalf("no VIP or floating IP recorded: %s", describe(cur))
	}

	// A ready agent on cp-0 holds the Lease, but the VIP does not answer yet.
	player.runPods(ctx, nodes[0].name, nodes[1].name)
	player.lead(playCtx, nodes[0].name)
	waitFor(t, ctx, e, exp, "the holder seen, the VIP not answering", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		c := meta.FindStatusCondition(providerStatus(t, x).Conditions, v1alpha1.ConditionVIPHeld)
		return c != nil && c.Reason == "NotAnswering"
	})
	time.Sleep(2 * time.Second) // several checks
	cur = waitFor(t, ctx, e, exp, "the exposure", func(*extensionsv1alpha1.SelfHostedShootExposure) bool { return true })
	if lo := cur.Status.LastOperation; lo == nil || lo.State != gardencorev1beta1.LastOperationStateProcessing {
		t.Fatalf("last operation %+v while the VIP does not answer, want Processing", lo)
	}

	// The node answers on the VIP, the floating IP does not: still Processing, and the
	// condition says which path is missing.
	lan.hold(t, ctx, 0, vip, exp.Spec.Port)
	cur = waitFor(t, ctx, e, exp, "the VIP answering, the floating IP not", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		c := meta.FindStatusCondition(providerStatus(t, x).Conditions, v1alpha1.ConditionVIPHeld)
		return c != nil && c.Reason == "FloatingIPNotAnswering"
	})
	c := condition(t, cur, v1alpha1.ConditionVIPHeld)
	t.Logf("VIPHeld while the floating IP is silent: %s", c.Message)
	if !strings.Contains(c.Message, fip) || !strings.Contains(c.Message, "probeFloatingIP: false") {
		t.Errorf("VIPHeld message %q names neither the floating IP %s nor the opt-out", c.Message, fip)
	}
	time.Sleep(2 * time.Second) // several checks
	cur = waitFor(t, ctx, e, exp, "the exposure", func(*extensionsv1alpha1.SelfHostedShootExposure) bool { return true })
	if lo := cur.Status.LastOperation; lo == nil || lo.State != gardencorev1beta1.LastOperationStateProcessing {
		t.Fatalf("last operation %+v while the floating IP does not answer, want Processing", lo)
	}

	// The floating IP answers (a node of the LAN plays the router's DNAT): Succeeded,
	// through the floating IP.
	lan.hold(t, ctx, 1, fip, exp.Spec.Port)
	cur = waitFor(t, ctx, e, exp, "Succeeded", succeeded)
	if p := providerStatus(t, cur).FrontDoorPath; p != v1alpha1.FrontDoorPathFloatingIP {
		t.Errorf("frontDoorPath %q, want %q", p, v1alpha1.FrontDoorPathFloatingIP)
	}
	sawError, earlyIngress := stopWatch()
	if sawError != "" {
		t.Errorf("lastError while waiting for the front door: %s", sawError)
	}
	if earlyIngress != "" {
		t.Errorf("ingress %s shown before Succeeded", earlyIngress)
	}
	if got := cur.Status.Ingress[0].IP; got != fip {
		t.Errorf("ingress %s, want the floating IP %s", got, fip)
	}
	st := providerStatus(t, cur)
	if st.Agent == nil || st.Agent.LeaseHolder != nodes[0].name || !st.Agent.HolderReady || st.Agent.HolderSince == nil {
		t.Errorf("providerStatus.agent %+v, want holder %s, ready, with since", st.Agent, nodes[0].name)
	}
	for _, typ := range []string{v1alpha1.ConditionOpenStackVerified, v1alpha1.ConditionAgentsReady, v1alpha1.ConditionVIPHeld} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition %s %+v, want True", typ, c)
		}
	}

	// Failover: cp-1 takes the Lease and the VIP. The status follows without a reconcile.
	lan.release(0)
	lan.hold(t, ctx, 1, vip, exp.Spec.Port)
	// The agent announces a move with gratuitous ARP; the test drops the client's stale
	// neighbour entry instead.
	if out, err := lan.h.Client().Run(ctx, "ip", "neigh", "flush", "to", vip); err != nil {
		t.Fatalf("flushing the neighbour entry: %v: %s", err, out)
	}
	player.lead(playCtx, nodes[1].name)
	cur = waitFor(t, ctx, e, exp, "the new holder in providerStatus.agent", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		a := providerStatus(t, x).Agent
		return a != nil && a.LeaseHolder == nodes[1].name && a.HolderReady
	})
	if lo := cur.Status.LastOperation; lo == nil || lo.State != gardencorev1beta1.LastOperationStateSucceeded {
		t.Errorf("last operation %+v after the failover, want it to stay Succeeded", lo)
	}
	want := []string{"VerifiedWithoutTLS", "VIPPortCreated", "FloatingIPCreated", "NodePortsChanged", "WaitingForFrontDoor", "FrontDoorReady", "HolderChanged"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := eventReasons(t, ctx, e, exp)
		missing := slices.DeleteFunc(slices.Clone(want), func(r string) bool { return slices.Contains(got, r) })
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("Events %v, missing %v", got, missing)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The agents' Lease deleted out of band (the agents may not create it): the next agent
	// refresh finds it missing and the reconciliation it starts deploys it again, unheld.
	stopPlaying()
	time.Sleep(time.Second) // a renewal in flight lands first
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: agentrollout.LeaseName, Namespace: ns}}
	if err := e.cp.Client.Delete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease)
		return err == nil && lease.Spec.HolderIdentity == nil && lease.Labels[agentrollout.LabelManagedBy] == agentrollout.ManagedByValue, client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the deleted Lease did not come back unheld within 30 s (agent refresh every 1 s): %v", err)
	}
	t.Logf("the deleted Lease was back %s later", time.Since(deleted).Round(time.Millisecond))
}

// TestFrontDoorThatNeverWorksBecomesAClearError: without any agent the wait is bounded;
// then the exposure shows a retryable infrastructure-dependency error that says what is
// missing, and never the private VIP as its ingress.
func TestFrontDoorThatNeverWorksBecomesAClearError(t *testing.T) {
	e := env(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	startController(t, e, actuatorOptions(func(o *exposure.ActuatorOptions) {
		o.FrontDoorProbe = exposure.FrontDoorTCP
		o.FrontDoorWait = 5 * time.Second
		o.Dial = func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("not expected: no agent holds the Lease")
		}
	}))
	id := useIdentity(t, ctx, e)
	nodes := createNodes(t, ctx, e, id, 1)
	exp := newExposure(exposureOptions{name: "frontdoor-err-" + id[len(id)-8:], nodes: nodes})
	create(t, ctx, e, exp, id)

	cur := waitFor(t, ctx, e, exp, "the front-door error", func(x *extensionsv1alpha1.SelfHostedShootExposure) bool {
		return x.Status.LastError != nil
	})
	le := cur.Status.LastError
	t.Logf("lastError: %s %v", le.Description, le.Codes)
	if !strings.Contains(le.Description, "No kube-vip-agent holds the Lease") {
		t.Errorf("lastError %q does not say what is missing", le.Description)
	}
	if !slices.Contains(le.Codes, gardencorev1beta1.ErrorRetryableInfraDependencies) {
		t.Errorf("codes %v, want %s", le.Codes, gardencorev1beta1.ErrorRetryableInfraDependencies)
	}
	st := providerStatus(t, cur)
	for _, ing := range cur.Status.Ingress {
		if ing.IP == st.VIPAddress {
			t.Errorf("the public exposure shows its private VIP %s as ingress", ing.IP)
		}
	}
	if st.Ingress != "" {
		t.Errorf("providerStatus.ingress %q recorded although the front door never worked", st.Ingress)
	}
	b, _ := json.Marshal(st.Conditions)
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionVIPHeld); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("VIPHeld not False: %s", b)
	}
}
