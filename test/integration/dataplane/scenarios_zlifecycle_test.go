// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package dataplane_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/extension"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// The life of a self-hosted shoot's front door, driven by Gardener v1.150.0's own code
// (framework.Gardenadm), in order: init with the first node only, the other two join and a
// failover needs one of them, init runs again, the first node is replaced by a fourth, the
// extension is upgraded by its chart (from then on the chart's controller runs), the
// credentials are rotated, the exposure object is lost and re-created, destroy. Each step
// ends with the checks of checkFrontDoor and prints its figures (stepFigures). The tests run
// after the other scenarios (file order), whose exposure is gone by then, and share lifecycle.
var lifecycle struct {
	g *framework.Gardenadm
	// dns is the DNS value gardenadm computed at init, once.
	dns string
	// first is the node of the init.
	first *netns.Node
}

// TestLifecycle1InitFirstNode: gardenadm init with only the first node in the control
// plane; the exposure is named after the shoot, spec.port 443, spec.endpoints the first
// node, and the DNS value is computed from status.ingress.
func TestLifecycle1InitFirstNode(t *testing.T) {
	f, ctx := scenario(t)
	t.Cleanup(func() { destroyOnFailure(t, f) })
	f.removeExposure() // the other scenarios' exposure, when they ran
	nodes := f.cluster.Net().Nodes()
	lifecycle.first = nodes[0]
	// The Shoot carries the extension's configuration: Gardener writes no providerConfig.
	opts := f.dp.OpenStack.BootstrapOptions(framework.ApplicationCredential)
	opts.ExposureProviderConfig = &runtime.RawExtension{Raw: fmt.Appendf(nil,
		`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","vipAddress":%q,"agent":{"interface":%q}}`,
		f.cluster.Net().VIP(), netns.Interface)}
	if err := framework.Bootstrap(ctx, f.cl, opts); err != nil {
		t.Fatal(err)
	}
	if err := framework.SetTechnicalID(ctx, f.cl, f.identity); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		setControlPlane(t, ctx, f, n.Name(), false)
	}
	lifecycle.g = &framework.Gardenadm{Client: f.cl, WaitInterval: time.Second,
		Log: funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})}

	before := f.controllerCalls(t, ctx)
	start := time.Now()
	dns, err := lifecycle.g.Init(ctx)
	if err != nil {
		t.Fatalf("gardenadm init: %v (%s)", err, f.controllerLog(ctx))
	}
	calls := f.controllerCalls(t, ctx).Sub(before)
	if len(dns) != 1 {
		t.Fatalf("DNS values %v, want one", dns)
	}
	lifecycle.dns = dns[0]
	t.Logf("gardenadm init: DNS value %s after %s; %d OpenStack calls (%d writes): %v", lifecycle.dns, time.Since(start).Round(time.Millisecond), calls.Total(), calls.Writes(), calls)
	stepFigures(t, "init", nil, calls, "")

	exp := lifecycleExposure(t, ctx, f)
	if exp.Spec.Port != apiPort || len(exp.Spec.Endpoints) != 1 || exp.Spec.Endpoints[0].NodeName != lifecycle.first.Name() {
		t.Errorf("spec.port %d, spec.endpoints %+v: want 443 and the first node %s only", exp.Spec.Port, exp.Spec.Endpoints, lifecycle.first)
	}
	if holder := checkFrontDoor(t, ctx, f); holder != lifecycle.first {
		t.Errorf("the VIP is on %s, want the only control-plane node %s", holder, lifecycle.first)
	}
}

// releasedViaPeer matches the agent's log line of a release through another node's
// kube-apiserver.
var releasedViaPeer = regexp.MustCompile(`"msg":"Released the Lease"[^\n]*"via":"kube-apiserver [^"]*"`)

// TestLifecycle2JoinThenFailoverThroughJoinedNode: the second and third nodes join the
// control plane (spec.endpoints stays as init wrote it); their agents start and the VIP
// moves at most once, away from the etcd leader. Then the holder's kube-apiserver dies:
// its agent must release the Lease through a peer it found in the kubernetes EndpointSlice.
// joinRecovery bounds the outage of the join's VIP move: the L2 agent's delay (up to 6.6 s
// seen) plus one --arp-interval (5 s) until the next announcement.
const joinRecovery = 15 * time.Second

func TestLifecycle2JoinThenFailoverThroughJoinedNode(t *testing.T) {
	f, ctx := scenario(t)
	t.Cleanup(func() { destroyOnFailure(t, f) })
	if lifecycle.g == nil {
		t.Skip("needs TestLifecycle1InitFirstNode")
	}
	sampler := f.cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{})
	joins := f.step(t, ctx)
	before := f.controllerCalls(t, ctx)
	for _, n := range f.cluster.Net().Nodes()[1:] {
		setControlPlane(t, ctx, f, n.Name(), true)
	}
	f.waitReady(t, ctx)
	if ds, err := f.cluster.Client().AppsV1().DaemonSets(framework.Namespace).Get(ctx, agentrollout.Name, metav1.GetOptions{}); err != nil || ds.Status.NumberReady != 3 {
		t.Fatalf("agents after the joins: %v, %v", daemonSetReady(ds), err)
	}
	// The init node leads etcd, so once a joined node is eligible its agent hands the VIP
	// over once (the etcd-leader yield, as with gardenadm's etcd): one move at most, never
	// two holders. The kill then goes to the settled holder, which does not lead etcd.
	if _, err := f.cluster.Net().WaitSingleHolder(ctx, func(n *netns.Node) bool {
		leads, err := n.EtcdLeads(ctx)
		return err == nil && !leads
	}); err != nil {
		t.Fatal(err)
	}
	// The taker's announcements are dropped at its own port until Neutron's L2 agent applies
	// the VIP's pair there (2.2-6.6 s after the API took it, measured), and the agent
	// announces again only every --arp-interval: the door comes back within about 12 s.
	if err := f.waitReachable(ctx, lifecycle.dns, true, joinRecovery); err != nil {
		t.Error(err)
	}
	time.Sleep(2 * time.Second)
	rep := sampler.Stop()
	joined := joins.Stop()
	// Changes: the first holder, then at most one handover (nobody for a moment, then the new holder).
	if len(rep.Changes) > 3 || len(rep.Overlaps) != 0 {
		t.Errorf("the VIP moved more than the one etcd-leader yield, or sat on two nodes, while the nodes joined: changes %+v, overlaps %+v", rep.Changes, rep.Overlaps)
		f.logAgents(t, ctx)
	}
	// The yield stays (docs/architecture.md, "The VIP at the first join"). Its move is
	// bounded only by joinRecovery: behind the router it cost 5.3-6.2 s in recorded runs,
	// against 0.08 s for a release (TestRouterGracefulHandover); the figure goes to the step's
	// line.
	joinOutage := joined.Longest().Round(time.Millisecond).String()
	if open := joined.Outages; len(open) > 0 && open[len(open)-1].Open() {
		// Longest counts only ended outages: without this the step's line said 0s.
		last := open[len(open)-1]
		joinOutage = fmt.Sprintf("open>%s", joined.End.Sub(last.Start).Round(time.Millisecond))
		t.Errorf("the front door was still unreachable when the nodes had joined: %+v", last)
	}
	exp := lifecycleExposure(t, ctx, f)
	if len(exp.Spec.Endpoints) != 1 {
		t.Errorf("spec.endpoints changed to %+v", exp.Spec.Endpoints)
	}
	first := checkFrontDoor(t, ctx, f)

	pod := f.leaderPod(t, ctx, first.Name())
	p := f.probe(t, ctx, lifecycle.dns, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	first.KillAPIServer()
	res := p.Wait()
	netns.CheckOutage(t, "the holder's kube-apiserver killed (through the floating IP)", res, apiserverBound)
	holder, err := f.cluster.Net().WaitSingleHolder(ctx, func(n *netns.Node) bool { return n != first })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the VIP moved from %s to %s; longest outage through the floating IP %s", first, holder, res.Longest().Round(time.Millisecond))
	// From the file: the node's kubelet authorizes a log read through the kube-apiserver
	// that was just killed.
	log, err := f.cluster.ContainerLogFile(pod, agentrollout.Name, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if !releasedViaPeer.MatchString(log) {
		t.Errorf("%s's agent did not release the Lease through another node's kube-apiserver; its log:\n%s", first, log)
	}
	if err := first.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.WaitAPIServerReady(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitReady(t, ctx)
	checkFrontDoor(t, ctx, f)
	longest := res
	if joined.Longest() > res.Longest() {
		longest = joined
	}
	stepFigures(t, "join+failover", &longest, f.controllerCalls(t, ctx).Sub(before),
		fmt.Sprintf("join_outage=%s join_moves=%d failover_outage=%s", joinOutage, vipMoves(rep), res.Longest().Round(time.Millisecond)))
}

// TestLifecycle3InitAgain: gardenadm init runs again, now with three Ready nodes: the same
// address comes back and the controller writes nothing to OpenStack.
func TestLifecycle3InitAgain(t *testing.T) {
	f, ctx := scenario(t)
	t.Cleanup(func() { destroyOnFailure(t, f) })
	if lifecycle.g == nil {
		t.Skip("needs TestLifecycle1InitFirstNode")
	}
	holder := checkFrontDoor(t, ctx, f)
	p := f.step(t, ctx)
	before := f.controllerCalls(t, ctx)
	dns, err := lifecycle.g.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := f.controllerCalls(t, ctx).Sub(before)
	res := p.Stop()
	stepFigures(t, "init-again", &res, calls, "")
	netns.CheckOutage(t, "gardenadm init again (through the floating IP)", res, gracefulBound)
	t.Logf("gardenadm init again: DNS value %v; %d OpenStack calls (%d writes): %v", dns, calls.Total(), calls.Writes(), calls)
	if len(dns) != 1 || dns[0] != lifecycle.dns {
		t.Errorf("DNS value %v, want the first init's %s", dns, lifecycle.dns)
	}
	if calls.Writes() != 0 {
		t.Errorf("the second init wrote to OpenStack: %v", calls)
	}
	if now := checkFrontDoor(t, ctx, f); now != holder {
		t.Errorf("the VIP moved from %s to %s", holder, now)
	}
}

// TestLifecycle3bFirstNodeReplaced: the first node is replaced, as a cloud replaces a
// machine: its containers, kubelet, etcd member and kube-apiserver end, its Node is deleted
// and its Neutron port deleted; then a fourth machine gets a port like the others' (port
// security, the node security group) and joins the control plane. spec.endpoints still
// names only the departed node, as init wrote it. The controller must drop the departed
// node's pair and give the fourth node's port one. Then failovers between the remaining
// nodes: the holder's kube-apiserver dies and its agent releases the Lease through a peer,
// once with the fourth node's kube-apiserver as the only other one up: it was never in
// spec.endpoints, so the agents' peer list must follow the current control-plane nodes.
func TestLifecycle3bFirstNodeReplaced(t *testing.T) {
	f, ctx := scenario(t)
	t.Cleanup(func() { destroyOnFailure(t, f) })
	if lifecycle.g == nil {
		t.Skip("needs TestLifecycle1InitFirstNode")
	}
	checkFrontDoor(t, ctx, f)
	departed := f.cluster.Node(lifecycle.first.Name())
	if departed == nil {
		t.Fatalf("the init node %s is no node of the cluster", lifecycle.first)
	}
	departedPort := f.portOf(t, ctx, departed.Node)
	endpoints := lifecycleExposure(t, ctx, f).Spec.Endpoints
	sampler := f.cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{})
	p := f.step(t, ctx)
	before := f.controllerCalls(t, ctx)

	if err := f.cluster.RemoveNode(ctx, departed); err != nil {
		t.Fatalf("removing %s: %v", departed.Name(), err)
	}
	if err := f.neutron.DeletePort(ctx, departedPort.ID); err != nil {
		t.Fatalf("deleting %s's port: %v", departed.Name(), err)
	}
	// The environment's machine port comes back for the later tests of the run (the demo),
	// with its name and address and a new ID in the env file.
	t.Cleanup(func() { f.restoreMachinePort(t, departedPort) })
	machine := "control-plane-" + framework.UniqueTechnicalID("")
	port, err := f.dp.CreateMachinePort(ctx, machine)
	if err != nil {
		t.Fatal(err)
	}
	suite.Defer(func() {
		// After the cluster is closed: its NIC provider takes a deleted port as unplugged.
		if err := f.neutron.DeletePort(context.Background(), port.ID); err != nil && !openstack.IsNotFound(err) {
			fmt.Fprintln(os.Stderr, "dataplane: deleting the fourth machine's port:", err)
		}
	})
	f.nic.Add(port.ID)
	joined, err := f.cluster.AddNode(ctx)
	if err != nil {
		t.Fatalf("joining a fourth node: %v", err)
	}
	t.Logf("%s replaced by %s (%s, port %s)", departed.Name(), joined.Name(), joined.IP(), port.ID)
	f.waitReady(t, ctx)
	st := f.waitNodePorts(t, ctx)
	if err := f.waitReachable(ctx, lifecycle.dns, true, joinRecovery); err != nil {
		t.Error(err)
	}
	time.Sleep(2 * time.Second)
	replaced := p.Stop()
	rep := sampler.Stop()
	if len(rep.Overlaps) != 0 {
		t.Errorf("the VIP sat on two nodes at once during the replacement: %+v", rep.Overlaps)
	}
	for _, np := range st.NodePorts {
		if np.NodeName == departed.Name() || np.PortID == departedPort.ID {
			t.Errorf("the exposure still records the departed node's port: %+v", np)
		}
	}
	if !openstack.HasPair(f.portOf(t, ctx, joined.Node), st.VIPAddress) {
		t.Errorf("the fourth node %s's port has no pair for the VIP %s", joined.Name(), st.VIPAddress)
	}
	if _, err := f.neutron.GetPort(ctx, departedPort.ID); !openstack.IsNotFound(err) {
		t.Errorf("the departed node's port %s is still there (get: %v)", departedPort.ID, err)
	}
	t.Logf("holders during the replacement %+v; outages through the floating IP %+v", rep.Changes, replaced.Outages)
	// gardenadm wrote spec.endpoints at its last init; nothing updates it after.
	if now := lifecycleExposure(t, ctx, f).Spec.Endpoints; !equality.Semantic.DeepEqual(now, endpoints) {
		t.Errorf("spec.endpoints changed from %+v to %+v", endpoints, now)
	}
	for _, ep := range endpoints {
		if ep.NodeName == joined.Name() {
			t.Fatalf("spec.endpoints names the fourth node %s: the step cannot show a peer that was never in it", joined.Name())
		}
	}
	checkFrontDoor(t, ctx, f)
	// The failovers below may put the VIP on the fourth node, whose pair the L2 agent may
	// not have let through its port yet: their bound is the failover's, not the agent's lag.
	if _, err := f.dp.WaitARP(ctx, port.ID, st.VIPAddress, true); err != nil {
		t.Fatal(err)
	}

	// Failovers between the remaining nodes. The holder's kube-apiserver dies; while the
	// fourth node holds the VIP there is no release through it to see, so it hands over first.
	var outages []string
	longest := replaced
	failover := func(down ...*netns.Node) *netns.Node {
		t.Helper()
		holder := checkFrontDoor(t, ctx, f)
		for _, n := range down {
			n.KillAPIServer()
		}
		pod := f.leaderPod(t, ctx, holder.Name())
		// From the file, here and below: the holder's kubelet authorizes a log read through
		// its own kube-apiserver, which the step kills.
		log, err := f.cluster.ContainerLogFile(pod, agentrollout.Name, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		releases := len(releasedViaPeer.FindAllString(log, -1))
		probe := f.probe(t, ctx, lifecycle.dns, 10*time.Second)
		time.Sleep(500 * time.Millisecond)
		holder.KillAPIServer()
		res := probe.Wait()
		netns.CheckOutage(t, "the holder's kube-apiserver killed (through the floating IP)", res, apiserverBound)
		if res.Longest() > longest.Longest() {
			longest = res
		}
		outages = append(outages, res.Longest().Round(time.Millisecond).String())
		next, err := f.cluster.Net().WaitSingleHolder(ctx, func(n *netns.Node) bool { return n != holder })
		if err != nil {
			t.Fatal(err)
		}
		if log, err = f.cluster.ContainerLogFile(pod, agentrollout.Name, 64<<10); err != nil {
			t.Fatal(err)
		}
		if got := releasedViaPeer.FindAllString(log, -1); len(got) <= releases {
			t.Errorf("%s's agent did not release the Lease through another node's kube-apiserver (kube-apiservers down: %v); its log:\n%s", holder, netns.Names(append(down, holder)), log)
		} else {
			via := got[len(got)-1]
			t.Logf("the VIP moved from %s to %s (kube-apiservers down: %v), longest outage %s, released via %s", holder, next, netns.Names(append(down, holder)), res.Longest().Round(time.Millisecond), via[strings.LastIndex(via, `"via":`):])
		}
		for _, n := range append(down, holder) {
			if err := n.StartAPIServer(ctx); err != nil {
				t.Fatal(err)
			}
			if err := n.WaitAPIServerReady(ctx); err != nil {
				t.Fatal(err)
			}
		}
		f.waitReady(t, ctx)
		return next
	}
	holder := failover()
	if holder == joined.Node {
		holder = failover()
	}
	// Only the fourth node's kube-apiserver is up besides the holder's: the release needs it.
	var other *netns.Node
	for _, n := range f.cluster.Net().Nodes() {
		if n != holder && n != joined.Node {
			other = n
		}
	}
	if got := failover(other); got != joined.Node {
		t.Errorf("with %s's and %s's kube-apiservers down the VIP went to %s, want the fourth node %s", holder, other, got, joined.Name())
	}
	checkFrontDoor(t, ctx, f)
	stepFigures(t, "node-replaced", &longest, f.controllerCalls(t, ctx).Sub(before),
		fmt.Sprintf("replace_outage=%s replace_moves=%d failover_outages=%v", replaced.Longest().Round(time.Millisecond), vipMoves(rep), outages))
}

// waitNodePorts waits until the exposure's status records exactly the ports of the
// current nodes, and returns it.
func (f *frontDoor) waitNodePorts(t *testing.T, ctx context.Context) *v1alpha1.ExposureStatus {
	t.Helper()
	var st *v1alpha1.ExposureStatus
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if st, err = exposure.DecodeStatus(lifecycleExposure(t, ctx, f)); err != nil {
			return false, err
		}
		var names []string
		for _, np := range st.NodePorts {
			names = append(names, np.NodeName)
		}
		slices.Sort(names)
		want := netns.Names(f.cluster.Net().Nodes())
		slices.Sort(want)
		return slices.Equal(names, want), nil
	})
	if err != nil {
		t.Fatalf("the exposure's node ports %+v, want those of %v: %v (%s)", st, netns.Names(f.cluster.Net().Nodes()), err, f.controllerLog(ctx))
	}
	return st
}

// restoreMachinePort creates the environment's machine port that a step deleted again and
// records its new ID in the env file.
func (f *frontDoor) restoreMachinePort(t *testing.T, was *ports.Port) {
	if !slices.Contains(f.dp.OpenStack.NodePortIDs, was.ID) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := f.dp.RecreatePort(ctx, was)
	if err != nil {
		t.Errorf("restoring the machine port %s: %v", was.Name, err)
		return
	}
	if err := framework.ReplaceNodePort(was.ID, p.ID); err != nil {
		t.Error(err)
	}
}

// TestLifecycle4ExtensionUpgraded: the extension is upgraded as an operator's Gardener
// does it, by a chart upgrade. The in-process controller first hands the exposure over to
// the chart's controller (this build's controller image, the running agent image), which
// must take over without writing to OpenStack; the later steps run with the chart's
// controller. Then the chart is upgraded to a controller image and an agent image built
// with another version and loaded into the nodes' containerd: the new controller pod
// replaces the old one and Gardener's next reconcile lets it roll the agents one node at a
// time. The VIP never sits on two nodes, the exposure keeps its port and floating IP, and
// the front door answers after.
func TestLifecycle4ExtensionUpgraded(t *testing.T) {
	f, ctx := scenario(t)
	t.Cleanup(func() { destroyOnFailure(t, f) })
	if lifecycle.g == nil {
		t.Skip("needs TestLifecycle1InitFirstNode")
	}
	checkFrontDoor(t, ctx, f)
	was, err := exposure.DecodeStatus(lifecycleExposure(t, ctx, f))
	if err != nil {
		t.Fatal(err)
	}
	p := f.step(t, ctx)
	took, calls := f.handOverToChart(t, ctx)
	res := p.Stop()
	t.Logf("the chart's controller reconciles after %s: %d OpenStack calls (%d writes): %v", took.Round(time.Millisecond), calls.Total(), calls.Writes(), calls)
	stepFigures(t, "handover", &res, calls, "")
	if calls.Writes() != 0 {
		t.Errorf("the chart's controller wrote to OpenStack when it took the exposure over: %v", calls)
	}
	checkFrontDoor(t, ctx, f)

	var images extension.Images
	for name, ref := range map[string]*string{"gardener-extension-kube-vip": &images.Controller, "kube-vip-agent": &images.Agent} {
		if *ref, err = f.cluster.LoadImage(ctx, name, "lifecycle-upgrade"); err != nil {
			t.Fatal(err)
		}
	}
	if images.Controller == f.cluster.ImageRef("gardener-extension-kube-vip") || images.Agent == f.agentImage {
		t.Fatalf("the upgrade's images %+v are the running ones", images)
	}
	sampler := f.cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{})
	p = f.step(t, ctx)
	// The old pod's last reading: it has nothing to do until it ends (the reconcile comes
	// after the new one has replaced it), so no call of it goes unseen.
	before := f.controllerCalls(t, ctx)
	start := time.Now()
	if err := f.chart.Upgrade(ctx, images); err != nil {
		t.Fatalf("upgrading the chart: %v; %s", err, f.controllerLog(ctx))
	}
	f.agentImage = images.Agent
	f.waitSucceeded(t, ctx, lifecycleExposure(t, ctx, f))
	f.waitReady(t, ctx)
	time.Sleep(2 * time.Second)
	res = p.Stop()
	rep := sampler.Stop()
	calls = f.controllerCalls(t, ctx).Sub(before)
	moves := vipMoves(rep)
	t.Logf("upgraded to %+v in %s: %d VIP moves, longest outage through the floating IP %s; %d OpenStack calls (%d writes): %v",
		images, time.Since(start).Round(time.Millisecond), moves, res.Longest().Round(time.Millisecond), calls.Total(), calls.Writes(), calls)
	stepFigures(t, "upgrade", &res, calls, fmt.Sprintf("moves=%d", moves))
	// Not bounded yet (a run of the former in-process restart had a 16.7 s outage here):
	// when and where it was.
	t.Logf("holders during the upgrade %+v; outages through the floating IP %+v", rep.Changes, res.Outages)
	if len(rep.Overlaps) != 0 {
		t.Errorf("the VIP sat on two nodes at once during the upgrade: %+v", rep.Overlaps)
	}
	if err := f.chart.WaitRunning(ctx, images.Controller, time.Second); err != nil {
		t.Errorf("after the upgrade: %v", err)
	}
	agents, err := f.cluster.Client().CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: agentrollout.LabelAppName + "=" + agentrollout.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range agents.Items {
		if img := pod.Spec.Containers[0].Image; img != images.Agent {
			t.Errorf("after the upgrade the agent pod %s on %s runs %s, want %s", pod.Name, pod.Spec.NodeName, img, images.Agent)
		}
	}
	now, err := exposure.DecodeStatus(lifecycleExposure(t, ctx, f))
	if err != nil {
		t.Fatal(err)
	}
	if now.PortID != was.PortID || now.FloatingIPID != was.FloatingIPID {
		t.Errorf("after the upgrade the exposure records port %s and floating IP %s, before %s and %s", now.PortID, now.FloatingIPID, was.PortID, was.FloatingIPID)
	}
	checkFrontDoor(t, ctx, f)
}

// TestLifecycle5CredentialsRotated: the Shoot's credentials are rotated: a new application
// credential goes into the Secret and the old one is deleted in Keystone (which revokes its
// tokens). gardenadm init's next run reconciles with the new one: it reaches OpenStack and
// succeeds, and the front door stays as it was. The environment's own credential is never
// deleted: the step rotates from a credential of its own, and back at the end.
func TestLifecycle5CredentialsRotated(t *testing.T) {
	f, ctx := scenario(t)
	t.Cleanup(func() { destroyOnFailure(t, f) })
	if lifecycle.g == nil {
		t.Skip("needs TestLifecycle1InitFirstNode")
	}
	env := f.dp.OpenStack
	creds, err := env.ApplicationCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	suffix := framework.UniqueTechnicalID("")
	oldID, oldSecret, err := creds.Create(ctx, "kube-vip-rotation-old-"+suffix)
	if err != nil {
		t.Fatal(err)
	}
	newID, newSecret, err := creds.Create(ctx, "kube-vip-rotation-new-"+suffix)
	if err != nil {
		t.Fatal(err)
	}
	oldDeleted := false
	t.Cleanup(func() {
		// Back to the environment's credential; the step's own ones go.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := framework.SetApplicationCredential(cctx, f.cl, env.ApplicationCredentialID, env.ApplicationCredentialSecret); err != nil {
			t.Error(err)
		}
		if !oldDeleted {
			_ = creds.Delete(cctx, oldID)
		}
		if err := creds.Delete(cctx, newID); err != nil {
			t.Error(err)
		}
	})
	// The shoot runs with the old credential first.
	if err := framework.SetApplicationCredential(ctx, f.cl, oldID, oldSecret); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.g.Init(ctx); err != nil {
		t.Fatalf("gardenadm init with the old credential: %v (%s)", err, f.controllerLog(ctx))
	}
	holder := checkFrontDoor(t, ctx, f)
	was, err := exposure.DecodeStatus(lifecycleExposure(t, ctx, f))
	if err != nil {
		t.Fatal(err)
	}

	p := f.step(t, ctx)
	before := f.controllerCalls(t, ctx)
	start := time.Now()
	if err := framework.SetApplicationCredential(ctx, f.cl, newID, newSecret); err != nil {
		t.Fatal(err)
	}
	if err := creds.Delete(ctx, oldID); err != nil {
		t.Fatal(err)
	}
	oldDeleted = true
	dns, err := lifecycle.g.Init(ctx)
	if err != nil {
		t.Fatalf("gardenadm init after the rotation: %v (%s)", err, f.controllerLog(ctx))
	}
	calls := f.controllerCalls(t, ctx).Sub(before)
	res := p.Stop()
	t.Logf("gardenadm init after the rotation: DNS value %v after %s; %d OpenStack calls (%d writes): %v", dns, time.Since(start).Round(time.Millisecond), calls.Total(), calls.Writes(), calls)
	// As for a loss: the agents need no OpenStack, a roll would be a graceful handover.
	netns.CheckOutage(t, "credentials rotated (through the floating IP)", res, gracefulBound)
	stepFigures(t, "credentials-rotated", &res, calls, "")
	if calls.Total() == 0 {
		t.Errorf("the reconcile after the rotation made no OpenStack call: it did not show that the new credential works")
	}
	if len(dns) != 1 || dns[0] != lifecycle.dns {
		t.Errorf("DNS value %v, want the first init's %s", dns, lifecycle.dns)
	}
	if now := checkFrontDoor(t, ctx, f); now != holder {
		t.Errorf("the VIP moved from %s to %s", holder, now)
	}
	// Nothing re-created: the reconcile with the new credential found the same objects.
	now, err := exposure.DecodeStatus(lifecycleExposure(t, ctx, f))
	if err != nil {
		t.Fatal(err)
	}
	if now.PortID != was.PortID || now.FloatingIPID != was.FloatingIPID {
		t.Errorf("after the rotation the exposure records port %s and floating IP %s, before %s and %s", now.PortID, now.FloatingIPID, was.PortID, was.FloatingIPID)
	}
}

// TestLifecycle6ExposureLostAndRecreated: the exposure object is lost (its finalizer
// removed, then deleted) and gardenadm init creates it again with Gardener's Deploy: a new
// UID and no status. The controller must take over the cluster's front door: the same VIP
// port, floating IP and DNS value, and nothing new in Neutron. The agents keep running, so
// the front door stays up throughout.
func TestLifecycle6ExposureLostAndRecreated(t *testing.T) {
	f, ctx := scenario(t)
	t.Cleanup(func() { destroyOnFailure(t, f) })
	if lifecycle.g == nil {
		t.Skip("needs TestLifecycle1InitFirstNode")
	}
	checkFrontDoor(t, ctx, f)
	lost := lifecycleExposure(t, ctx, f)
	was, err := exposure.DecodeStatus(lost)
	if err != nil {
		t.Fatal(err)
	}
	fipsBefore := f.projectFloatingIPs(t, ctx)
	p := f.step(t, ctx)
	before := f.controllerCalls(t, ctx)

	patch := client.MergeFrom(lost.DeepCopy())
	lost.Finalizers = nil
	if err := f.cl.Patch(ctx, lost, patch); err != nil {
		t.Fatal(err)
	}
	if err := f.cl.Delete(ctx, lost); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(f.cl.Get(ctx, client.ObjectKeyFromObject(lost), &extensionsv1alpha1.SelfHostedShootExposure{})), nil
	}); err != nil {
		t.Fatalf("the exposure without finalizer was not deleted: %v", err)
	}
	start := time.Now()
	dns, err := lifecycle.g.Init(ctx)
	if err != nil {
		t.Fatalf("gardenadm init after the loss: %v (%s)", err, f.controllerLog(ctx))
	}
	calls := f.controllerCalls(t, ctx).Sub(before)
	res := p.Stop()
	t.Logf("gardenadm init after the loss: DNS value %v after %s; %d OpenStack calls (%d writes): %v", dns, time.Since(start).Round(time.Millisecond), calls.Total(), calls.Writes(), calls)
	// The agents run on; were the controller to roll them, a graceful handover is the most.
	netns.CheckOutage(t, "the exposure lost and re-created (through the floating IP)", res, gracefulBound)
	stepFigures(t, "lost+recreated", &res, calls, "")

	again := lifecycleExposure(t, ctx, f)
	if again.UID == lost.UID {
		t.Fatalf("the re-created exposure has the lost one's UID %s", again.UID)
	}
	if len(dns) != 1 || dns[0] != lifecycle.dns {
		t.Errorf("gardenadm init computed the DNS value %v, want the first init's %s, where DNS still points", dns, lifecycle.dns)
	}
	now, err := exposure.DecodeStatus(again)
	if err != nil {
		t.Fatal(err)
	}
	if now.PortID != was.PortID || now.VIPAddress != was.VIPAddress || now.FloatingIPID != was.FloatingIPID {
		t.Errorf("the re-created exposure recorded port %s, VIP %s, floating IP %s; want the lost one's %s, %s, %s",
			now.PortID, now.VIPAddress, now.FloatingIPID, was.PortID, was.VIPAddress, was.FloatingIPID)
	}
	if fipsAfter := f.projectFloatingIPs(t, ctx); len(fipsAfter) != len(fipsBefore) {
		t.Errorf("the project had %d floating IPs before the loss and has %d after: %v", len(fipsBefore), len(fipsAfter), fipsAfter)
	}
	checkFrontDoor(t, ctx, f)
}

// TestLifecycle7Destroy: Gardener's Destroy and WaitCleanup; nothing of the exposure is left
// in Neutron or Kubernetes, and the DNS value answers no more.
func TestLifecycle7Destroy(t *testing.T) {
	f, ctx := scenario(t)
	if lifecycle.g == nil {
		t.Skip("needs TestLifecycle1InitFirstNode")
	}
	st, err := exposure.DecodeStatus(lifecycleExposure(t, ctx, f))
	if err != nil {
		t.Fatal(err)
	}
	before := f.controllerCalls(t, ctx)
	if err := lifecycle.g.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v (%s)", err, f.controllerLog(ctx))
	}
	calls := f.controllerCalls(t, ctx).Sub(before)
	t.Logf("destroy: %d OpenStack calls (%d writes): %v", calls.Total(), calls.Writes(), calls)
	stepFigures(t, "destroy", nil, calls, "")
	if left, err := f.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(f.identity)}}); err != nil || len(left) != 0 {
		t.Errorf("Neutron still holds %d ports of the exposure (%v)", len(left), err)
	}
	if _, err := f.neutron.GetFloatingIP(ctx, st.FloatingIPID); !openstack.IsNotFound(err) {
		t.Errorf("the floating IP %s is still in Neutron (get: %v)", st.FloatingIPAddress, err)
	}
	for _, n := range f.cluster.Net().Nodes() {
		if p := f.portOf(t, ctx, n); openstack.HasPair(p, st.VIPAddress) {
			t.Errorf("%s's port still has the VIP pair", n)
		}
	}
	for _, obj := range []struct {
		key client.ObjectKey
		obj client.Object
	}{
		{client.ObjectKey{Namespace: framework.Namespace, Name: agentrollout.Name}, &appsv1.DaemonSet{}},
		{client.ObjectKey{Namespace: framework.Namespace, Name: agentrollout.Name}, &rbacv1.Role{}},
		{client.ObjectKey{Namespace: agentrollout.PeerNamespace, Name: agentrollout.Name}, &rbacv1.Role{}},
		{client.ObjectKey{Namespace: agentrollout.PeerNamespace, Name: agentrollout.Name}, &rbacv1.RoleBinding{}},
	} {
		if err := f.cl.Get(ctx, obj.key, obj.obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s is still there (%v)", obj.obj, obj.key, err)
		}
	}
	if err := f.waitReachable(ctx, lifecycle.dns, false, 30*time.Second); err != nil {
		t.Error(err)
	}
}

// stepFigures logs one line per lifecycle step, to be quoted: the longest outage through
// the floating IP (none where no front door was up before the step) and the controller's
// OpenStack calls during the step; extra adds the step's own figures.
func stepFigures(t *testing.T, step string, res *netns.ProbeResult, calls openstack.Snapshot, extra string) {
	t.Helper()
	outage := "-"
	if res != nil {
		outage = fmt.Sprintf("%s (%d of %d probes failed)", res.Longest().Round(time.Millisecond), res.Failures, res.Probes)
	}
	t.Logf("LIFECYCLE-FIGURES step=%s outage=%s calls=%d writes=%d %s by-call=%v", step, outage, calls.Total(), calls.Writes(), extra, calls)
}

// vipMoves counts the moves of the VIP from one node to another in a sampler's report; a
// moment with no holder in between belongs to the move.
func vipMoves(rep netns.SamplerReport) int {
	moves, last := 0, ""
	for _, c := range rep.Changes {
		if len(c.Holders) != 1 {
			continue
		}
		if last != "" && c.Holders[0] != last {
			moves++
		}
		last = c.Holders[0]
	}
	return moves
}

// destroyOnFailure destroys the exposure when the test failed, so that the later steps do
// not build on a broken one and nothing is left in Neutron.
func destroyOnFailure(t *testing.T, f *frontDoor) {
	if !t.Failed() || lifecycle.g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := lifecycle.g.Destroy(ctx); err != nil {
		t.Logf("destroying the exposure after the failure: %v", err)
	}
	lifecycle.g = nil
}

// checkFrontDoor checks what holds after every step: the init-time DNS value answers
// https://<value>/readyz from the external client, the VIP is on exactly one node (which
// it returns), and Neutron holds exactly one VIP port with one floating IP of the exposure.
func checkFrontDoor(t *testing.T, ctx context.Context, f *frontDoor) *netns.Node {
	t.Helper()
	holder, err := f.cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := exposure.DecodeStatus(lifecycleExposure(t, ctx, f))
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return f.httpsReadyz(ctx, lifecycle.dns, st.VIPAddress) == nil, nil
	}); err != nil {
		t.Errorf("https://%s/readyz from the external client: %v", lifecycle.dns, f.httpsReadyz(ctx, lifecycle.dns, st.VIPAddress))
	}
	vipPorts, err := f.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(f.identity)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(vipPorts) != 1 {
		t.Fatalf("Neutron holds %d VIP ports of the exposure, want 1", len(vipPorts))
	}
	fips, err := f.neutron.FloatingIPsOfPort(ctx, vipPorts[0].ID)
	if err != nil || len(fips) != 1 || fips[0].FloatingIP != lifecycle.dns {
		t.Errorf("the VIP port has floating IPs %+v (%v), want exactly the DNS value %s", fips, err, lifecycle.dns)
	}
	return holder
}

// lifecycleExposure is the exposure Gardener created, named after the shoot.
func lifecycleExposure(t *testing.T, ctx context.Context, f *frontDoor) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := f.cl.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: framework.DefaultShootName}, exp); err != nil {
		t.Fatal(err)
	}
	return exp
}

// step starts probing the DNS value's port from the external client, for the outage of a
// lifecycle step; Stop ends it. TCP connects every 10 ms, as the failovers of this tier
// measure: HTTPS requests with a short timeout failed for tens of seconds while the
// joined nodes' pods started on the 2 shared cores, with the VIP where it should be.
func (f *frontDoor) step(t *testing.T, ctx context.Context) *netns.Prober {
	t.Helper()
	p, err := f.client.StartProber(ctx, netns.ProbeOptions{Target: netipAddrPort(t, lifecycle.dns, apiPort), Duration: 4 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// projectFloatingIPs are the addresses of the project's floating IPs.
func (f *frontDoor) projectFloatingIPs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	list, err := f.neutron.ListFloatingIPs(ctx, floatingips.ListOpts{ProjectID: f.dp.OpenStack.ProjectID})
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, 0, len(list))
	for _, fip := range list {
		addrs = append(addrs, fip.FloatingIP)
	}
	return addrs
}

func daemonSetReady(ds *appsv1.DaemonSet) string {
	if ds == nil {
		return "no DaemonSet"
	}
	return fmt.Sprintf("%d/%d ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
}
