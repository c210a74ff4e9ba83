// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// kubeVIPBounds are docs/kube-vip.md's bounds on the outage, from the timings the
// controller put into the kube-vip DaemonSet (kube-vip-agent's defaults mapped to whole
// seconds: 3/2/1 s, ARP tick 1 s).
type kubeVIPBounds struct {
	// crash: after a SIGKILL of the leader, a follower may have seen the last renewal up
	// to 1.2 retry periods late, takes the Lease once it expired (lease duration), tries
	// every 1.2 retry periods, and adds the VIP on its next ARP tick:
	// leaseDuration + 3 × retryPeriod + vip_arpRate.
	crash time.Duration
	// takeover: a switch's new kube-vip leader, from its container's start (as its kubelet
	// reports it) until the client reaches it: it wins its fresh Lease at once (the lease
	// duration covers its start) and adds the VIP on its next ARP tick:
	// leaseDuration + vip_arpRate.
	takeover time.Duration
}

// A switch's outage is the kubelets' work (stopping the old pods, starting the new ones),
// which the test measures and reports, around the parts this project owns, which it bounds.
const (
	// handoverBound: from the moment the last old pod cannot hold the VIP (all its
	// containers exited with 0 while terminating, or removed) until the new DaemonSet's
	// first pod exists: the controller, waiting within its reconciliation, looks every
	// HandoverTick, then writes the DaemonSet, and the DaemonSet controller creates the pods.
	handoverBound = agentrollout.HandoverTick + 800*time.Millisecond
	// agentTakeoverBound: as kubeVIPBounds.takeover for kube-vip-agent, which takes the
	// Lease the controller created as a release record at once: its start, its first health
	// probe, the takeover guard and the gratuitous ARP.
	agentTakeoverBound = time.Second
	// switchWait caps the wait for the VIP to answer after a switch, the kubelets' work
	// included.
	switchWait = time.Minute
)

// boundsOf reads the timings from the kube-vip container's environment.
func boundsOf(t *testing.T, ds *appsv1.DaemonSet) kubeVIPBounds {
	t.Helper()
	env := map[string]string{}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	num := func(name string) time.Duration {
		n, err := strconv.Atoi(env[name])
		if err != nil {
			t.Fatalf("kube-vip's %s is %q: %v", name, env[name], err)
		}
		return time.Duration(n)
	}
	lease, retry, arp := num("vip_leaseduration")*time.Second, num("vip_retryperiod")*time.Second, num("vip_arpRate")*time.Millisecond
	return kubeVIPBounds{
		crash:    lease + 3*retry + arp,
		takeover: lease + arp,
	}
}

// TestKubeVIP switches the live exposure to upstream kube-vip, as an operator does (the
// Shoot's exposure providerConfig's agent.implementation, then gardenadm init's step
// again), with kube-vip's
// image built from the module proxy and loaded into the nodes under the name the image
// vector gives it. kube-vip's DaemonSet comes up 3/3 Ready after ours is gone, the VIP is
// on one node and the API answers through it, within the switch's bound and never on two
// nodes; kube-vip runs under containerd-shim with only NET_ADMIN and NET_RAW and its
// service-account token. A SIGKILL of the leader's kube-vip (an OOM kill), and a second
// one in the kubelet's back-off, which another node must take over, stay within the crash
// bound; the time with the VIP on two nodes is reported, not asserted (kube-vip has no
// guard against it). A user's own kube-vip from its Helm chart (services mode, in
// kube-system) then starts beside the extension's and serves its metrics on every node.
// Then the exposure switches back to kube-vip-agent, which comes back 3/3 with the VIP on
// one node, as the other scenarios expect it, and the user's kube-vip runs on, its objects
// and pods unchanged; a failed step switches back in the test's cleanup.
func TestKubeVIP(t *testing.T) {
	ref := loadKubeVIP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	deployed(t, ctx)
	exp := exposed(t, ctx)
	s := &kubeVIPScenario{port: int(exp.Spec.Port)}
	restored := false
	t.Cleanup(func() {
		if !restored {
			s.switchImplementation(t, ctx, nil)
			waitReady(t, ctx)
		}
	})

	if !t.Run("switch to kube-vip", func(t *testing.T) { s.switchToKubeVIP(t, ctx, ref) }) {
		return
	}
	t.Run("runs as its DaemonSet says", func(t *testing.T) { s.checkProcesses(t, ctx) })
	t.Run("leader's kube-vip SIGKILLed", func(t *testing.T) { s.killLeader(t, ctx) })
	// A user's own kube-vip for LoadBalancer Services starts beside the extension's: each
	// must serve its metrics, and the user's must run on through the switch back.
	users := installUsersKubeVIP(t, ctx, exp.Spec.Port)
	t.Run("switch back to kube-vip-agent", func(t *testing.T) {
		restored = true
		s.switchBack(t, ctx)
	})
	users.check(t, ctx, "after the switch back to kube-vip-agent")
}

// kubeVIPScenario is the shared exposure's port and what the switch to kube-vip showed.
type kubeVIPScenario struct {
	// port is the exposure's kube-apiserver port.
	port int
	// bounds are set by switchToKubeVIP.
	bounds kubeVIPBounds
}

// switchImplementation sets (nil: removes, back to the default) agent.implementation in
// the Shoot's exposure providerConfig and runs gardenadm init's step again, as an operator
// changes the Shoot's configuration; Gardener's Deploy asks for a reconciliation and waits
// for it.
func (s *kubeVIPScenario) switchImplementation(t *testing.T, ctx context.Context, impl *v1alpha1.AgentImplementation) {
	t.Helper()
	if err := ext.Configure(ctx, ptr.Deref(impl, "")); err != nil {
		t.Fatalf("switching agent.implementation to %v: %v\n%s", ptr.Deref(impl, "the default"), err, controllerLog(ctx))
	}
}

// implementationSwitch is one switch between the agent implementations.
type implementationSwitch struct {
	what string
	// from and to are the implementations' app names (agentrollout.Name, KubeVIPName).
	from, to string
	// do switches and returns the bound on the new agent's takeover.
	do func() time.Duration
}

// switchover starts the client's prober, a holder sampler and a timeline of the agent
// pods, runs the switch and returns once the VIP answers again. It checks that the VIP was
// never on two nodes, that the controller started the new DaemonSet within handoverBound
// of the old pods' end, and that the new agent took over within the switch's bound of its
// start; it reports the kubelets' parts.
func (s *kubeVIPScenario) switchover(t *testing.T, ctx context.Context, sw implementationSwitch) {
	t.Helper()
	p := probe(t, ctx, 3*time.Minute)
	sampler := cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{})
	start := time.Now()
	pods, err := watchPods(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	takeoverBound := sw.do()
	holder, err := cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.waitAnswers(t, ctx, switchWait)
	// Let the prober's probes in flight end with successes.
	time.Sleep(300 * time.Millisecond)
	res, rep := p.Stop(), sampler.Stop()
	pods.Stop()
	var (
		total   time.Duration
		back    time.Duration
		outages []string
	)
	for i, o := range res.Outages {
		total += o.Duration()
		if i == 0 {
			// A later outage is kube-vip-agent's offer of the lead, when the first agent to
			// start runs on the node whose etcd member leads.
			back = o.End.Sub(start)
		}
		outages = append(outages, fmt.Sprintf("+%s..+%s", o.Start.Sub(start).Round(time.Millisecond), o.End.Sub(start).Round(time.Millisecond)))
	}
	t.Logf("%s: done after %s, VIP on %s; outages %v, %s in all; holders %s; the agent pods:\n%s", sw.what, time.Since(start).Round(time.Millisecond), holder.Name(),
		outages, total.Round(time.Millisecond), changesSince(rep, start), pods)
	if rep.MaxHolders() > 1 || len(rep.Overlaps) > 0 {
		t.Errorf("%s: the VIP was on two nodes at once: %+v", sw.what, rep.Overlaps)
	}
	unable, okUnable := pods.lastUnableToHold(sw.from)
	created, okCreated := pods.first(sw.to, "", stepCreated)
	running, okRunning := pods.first(sw.to, holder.Name(), stepRunning)
	switch {
	case !okUnable || !okCreated:
		t.Errorf("%s: the timeline misses the old pods' end or the new pods' creation", sw.what)
	case created-unable > handoverBound:
		t.Errorf("%s: the new DaemonSet's first pod came %s after the last old pod could no longer hold the VIP, want at most %s",
			sw.what, (created - unable).Round(time.Millisecond), handoverBound)
	}
	switch {
	case !okRunning:
		t.Errorf("%s: the timeline misses the start of the new holder's pod on %s", sw.what, holder.Name())
	case back-running > takeoverBound:
		t.Errorf("%s: the client reached the new holder %s %s after its pod ran, want at most %s",
			sw.what, holder.Name(), (back - running).Round(time.Millisecond), takeoverBound)
	}
	t.Logf("%s: the old pods could no longer hold the VIP %s after the switch began; the controller created the new DaemonSet's pods %s later (bound %s); their kubelets started the holder's %s later; the client reached it %s after that (bound %s)",
		sw.what, unable.Round(time.Millisecond), (created - unable).Round(time.Millisecond), handoverBound,
		(running - created).Round(time.Millisecond), (back - running).Round(time.Millisecond), takeoverBound)
	if t.Failed() {
		t.Logf("%s: the agents:\n%s", sw.what, agentsReport(ctx))
	}
}

// switchToKubeVIP switches to kube-vip and checks its DaemonSet, image, the API through
// the VIP and the Lease; it sets the bounds from the DaemonSet's timings.
func (s *kubeVIPScenario) switchToKubeVIP(t *testing.T, ctx context.Context, ref string) {
	s.switchover(t, ctx, implementationSwitch{what: "switch kube-vip-agent -> kube-vip", from: agentrollout.Name, to: agentrollout.KubeVIPName, do: func() time.Duration {
		s.switchImplementation(t, ctx, ptr.To(v1alpha1.AgentImplementationKubeVIP))
		exposed(t, ctx)
		ds := waitDaemonSetReady(t, ctx, agentrollout.KubeVIPName)
		if img := ds.Spec.Template.Spec.Containers[0].Image; img != ref {
			t.Errorf("kube-vip runs %s, want the image vector's %s", img, ref)
		}
		waitDaemonSetGone(t, ctx, agentrollout.Name)
		s.bounds = boundsOf(t, ds)
		return s.bounds.takeover
	}})
	t.Logf("bounds from the DaemonSet's timings: crash %s, takeover %s", s.bounds.crash, s.bounds.takeover)
	// The API answers through the VIP, and the Lease names the node that holds it.
	holder, err := cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cluster.Net().Client().StartProber(ctx, netns.ProbeOptions{Mode: netns.ProbeHTTPS, Count: 20, Interval: 50 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.Wait(); res.Failures > 0 {
		t.Errorf("GET https://VIP:%d/readyz from the client failed %d of %d times: %+v", s.port, res.Failures, res.Probes, res.Outages)
	}
	lease, err := cluster.Client().CoordinationV1().Leases(framework.Namespace).Get(ctx, agentrollout.KubeVIPLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != holder.Name() {
		t.Errorf("Lease %s is held by %v, but the VIP is on %s", lease.Name, lease.Spec.HolderIdentity, holder.Name())
	}
}

// checkProcesses: on every node one kube-vip process, a child of
// containerd-shim-runc-v2, with exactly NET_ADMIN and NET_RAW effective, under a seccomp
// filter and no_new_privs, on a read-only root file system, the in-cluster
// config on the node's own kube-apiserver, and in its file system the service-account
// token and no kubeconfig (kube-vip prefers /etc/kubernetes/admin.conf and
// $HOME/.kube/config when they exist).
func (s *kubeVIPScenario) checkProcesses(t *testing.T, ctx context.Context) {
	for _, n := range cluster.Nodes() {
		procs, err := n.Processes("kube-vip")
		if err != nil {
			t.Fatal(err)
		}
		if len(procs) != 1 {
			t.Errorf("%s runs %d kube-vip processes, want 1", n.Name(), len(procs))
			continue
		}
		p := procs[0]
		checkParentShim(t, n.Name(), "kube-vip", p)
		if p.CapEff != capNetAdminRaw {
			t.Errorf("%s: kube-vip CapEff %#x, want exactly NET_ADMIN|NET_RAW (%#x)", n.Name(), p.CapEff, capNetAdminRaw)
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
		if err != nil {
			t.Fatal(err)
		}
		// RuntimeDefault seccomp is a filter (mode 2); allowPrivilegeEscalation: false is
		// no_new_privs.
		for _, want := range []string{"Seccomp:\t2\n", "NoNewPrivs:\t1\n"} {
			if !strings.Contains(string(status), want) {
				t.Errorf("%s: kube-vip's /proc status lacks %q", n.Name(), strings.TrimSpace(want))
			}
		}
		if !readOnlyRoot(t, p.PID) {
			t.Errorf("%s: kube-vip's root file system is not mounted read-only", n.Name())
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
		if err != nil {
			t.Fatal(err)
		}
		vars := strings.Split(string(env), "\x00")
		for _, want := range []string{"KUBERNETES_SERVICE_HOST=127.0.0.1", fmt.Sprintf("KUBERNETES_SERVICE_PORT=%d", s.port)} {
			if !slices.Contains(vars, want) {
				t.Errorf("%s: kube-vip's environment lacks %s", n.Name(), want)
			}
		}
		root := fmt.Sprintf("/proc/%d/root", p.PID)
		if _, err := os.Stat(filepath.Join(root, "var/run/secrets/kubernetes.io/serviceaccount/token")); err != nil {
			t.Errorf("%s: kube-vip has no service-account token: %v", n.Name(), err)
		}
		for _, kc := range []string{"etc/kubernetes/admin.conf", "etc/kubernetes/super-admin.conf", "root/.kube/config", ".kube/config"} {
			if _, err := os.Stat(filepath.Join(root, kc)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: kube-vip's file system has /%s (stat: %v): it must use its token", n.Name(), kc, err)
			}
		}
	}
	for _, pod := range kubeVIPPods(t, ctx) {
		if pod.Spec.ServiceAccountName != agentrollout.KubeVIPName || (pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken) {
			t.Errorf("kube-vip pod %s does not run with the token of service account %s", pod.Name, agentrollout.KubeVIPName)
		}
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			if m.MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
				t.Errorf("kube-vip pod %s mounts %s at %s; only the token is expected", pod.Name, m.Name, m.MountPath)
			}
		}
	}
}

// readOnlyRoot tells whether the process's root is mounted read-only (the options of
// the mount at "/" in its mount namespace).
func readOnlyRoot(t *testing.T, pid int) bool {
	t.Helper()
	mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mounts", pid))
	if err != nil {
		t.Fatal(err)
	}
	ro := false
	for _, line := range strings.Split(string(mounts), "\n") {
		// The last mount at "/" is the one the process sees.
		if f := strings.Fields(line); len(f) > 3 && f[1] == "/" {
			ro = slices.Contains(strings.Split(f[3], ","), "ro")
		}
	}
	return ro
}

// killLeader SIGKILLs the leader's kube-vip, as an OOM kill. The kubelet restarts
// the container at once; if the restarted kube-vip took the VIP back (its Lease names its
// node, so it renews without waiting for expiry), a second kill follows at once: in that
// crash loop the kubelet holds the restart back for its back-off (10 s), so another node
// must take over within the crash bound. Each outage stays within the crash bound.
func (s *kubeVIPScenario) killLeader(t *testing.T, ctx context.Context) {
	leader, err := cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := s.kill(t, ctx, leader, "OOM kill")
	if first.takeover > 0 {
		return
	}
	if first.holder != leader.Name() {
		t.Fatalf("the VIP moved from %s to %s with no other node seen holding it", leader.Name(), first.holder)
	}
	second := s.kill(t, ctx, leader, "second kill, in crash-loop back-off")
	if second.takeover == 0 || second.takeover > s.bounds.crash {
		t.Errorf("no other node took the VIP over within the crash bound %s while the kubelet held %s's kube-vip in back-off (takeover after %s)", s.bounds.crash, leader.Name(), second.takeover)
	}
}

// crash is what one kill of a kube-vip process showed.
type crash struct {
	// takeover is the time from the kill until a node other than the killed one was first
	// seen holding the VIP; zero if none was.
	takeover time.Duration
	// holder holds the VIP alone once the kubelet has restarted the container.
	holder string
}

// kill SIGKILLs node's kube-vip process under containerd-shim while the client
// probes and every node's addresses are sampled every millisecond, checks the outage
// against the crash bound and the kubelet's restart, and reports the time with the VIP on
// two nodes: kube-vip has no guard against it, so it is reported, not asserted.
func (s *kubeVIPScenario) kill(t *testing.T, ctx context.Context, node *netns.Node, what string) crash {
	t.Helper()
	procs, err := nodeOf(node).Processes("kube-vip")
	if err != nil || len(procs) != 1 {
		t.Fatalf("kube-vip process on %s: %v (%d found)", node.Name(), err, len(procs))
	}
	checkParentShim(t, node.Name(), "kube-vip", procs[0])
	before := restarts(kubeVIPPodOn(t, ctx, node.Name()))
	// Long enough for the kubelet's first crash-loop back-off (10 s) and a takeover.
	p := probe(t, ctx, 25*time.Second)
	sampler := cluster.Net().StartHolderSampler(ctx, netns.SamplerOptions{Interval: time.Millisecond})
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	if err := syscall.Kill(procs[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := p.Wait()
	rep := sampler.Stop()
	checkOutage(t, "kube-vip on "+node.Name()+" SIGKILLed ("+what+")", res, s.bounds.crash)
	waitDaemonSetReady(t, ctx, agentrollout.KubeVIPName)
	if after := restarts(kubeVIPPodOn(t, ctx, node.Name())); after != before+1 {
		t.Errorf("kube-vip container restarts on %s: %d before the kill, %d after, want one more", node.Name(), before, after)
	}
	holder, err := cluster.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := crash{holder: holder.Name()}
	for _, ch := range rep.Changes {
		if ch.At.After(killed) && slices.ContainsFunc(ch.Holders, func(h string) bool { return h != node.Name() }) {
			c.takeover = ch.At.Sub(killed)
			break
		}
	}
	dual, longest := dualHolders(rep)
	t.Logf("%s of kube-vip on %s: takeover by another node after %s, VIP now on %s alone; holders after the kill: %s; VIP on two nodes for %s in all (longest %s), %d confirmed overlap samples in %d sweeps",
		what, node.Name(), c.takeover.Round(time.Millisecond), c.holder, changesSince(rep, killed), dual.Round(time.Millisecond), longest.Round(time.Millisecond), len(rep.Overlaps), rep.Sweeps)
	return c
}

// switchBack switches the exposure back to kube-vip-agent: our agents come back 3/3 Ready
// after kube-vip is gone, with the VIP on one node.
func (s *kubeVIPScenario) switchBack(t *testing.T, ctx context.Context) {
	s.switchover(t, ctx, implementationSwitch{what: "switch kube-vip -> kube-vip-agent", from: agentrollout.KubeVIPName, to: agentrollout.Name, do: func() time.Duration {
		s.switchImplementation(t, ctx, nil)
		exposed(t, ctx)
		waitReady(t, ctx)
		waitDaemonSetGone(t, ctx, agentrollout.KubeVIPName)
		return agentTakeoverBound
	}})
	if _, err := cluster.Client().CoordinationV1().Leases(framework.Namespace).Get(ctx, agentrollout.KubeVIPLeaseName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-vip's Lease %s is left after the switch back (get: %v)", agentrollout.KubeVIPLeaseName, err)
	}
}

// waitAnswers waits until the client can connect to the VIP's kube-apiserver port, at
// most timeout.
func (s *kubeVIPScenario) waitAnswers(t *testing.T, ctx context.Context, timeout time.Duration) {
	t.Helper()
	target := net.JoinHostPort(cluster.Net().VIP().String(), strconv.Itoa(s.port))
	var last error
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		dialCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		conn, err := cluster.Net().Client().DialContext(dialCtx, "tcp", target)
		if last = err; err != nil {
			return false, nil
		}
		return true, conn.Close()
	})
	if err != nil {
		t.Fatalf("the client cannot reach %s: %v (last: %v)", target, err, last)
	}
}

// waitDaemonSetReady waits until the named DaemonSet is rolled out on every node with every
// pod Ready, and returns it.
func waitDaemonSetReady(t *testing.T, ctx context.Context, name string) *appsv1.DaemonSet {
	t.Helper()
	want := int32(len(cluster.Nodes()))
	var ds *appsv1.DaemonSet
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if ds, err = cluster.Client().AppsV1().DaemonSets(framework.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		s := ds.Status
		return s.ObservedGeneration == ds.Generation && s.DesiredNumberScheduled == want &&
			s.NumberReady == want && s.UpdatedNumberScheduled == want && s.NumberAvailable == want, nil
	})
	if err != nil {
		t.Fatalf("DaemonSet %s not %d/%d Ready: %v\n%s", name, want, want, err, controllerLog(ctx))
	}
	return ds
}

// waitDaemonSetGone waits until the named DaemonSet and its pods are gone.
func waitDaemonSetGone(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: agentrollout.LabelAppName + "=" + name}
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cluster.Client().AppsV1().DaemonSets(framework.Namespace).Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			left = []string{"DaemonSet " + name}
			return false, nil
		}
		pods, err := cluster.Client().CoreV1().Pods(framework.Namespace).List(ctx, sel)
		left = podNames(pods)
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("%s is not gone: %v left: %v", name, left, err)
	}
}

func kubeVIPPods(t *testing.T, ctx context.Context) []corev1.Pod {
	t.Helper()
	pods, err := cluster.Client().CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: agentrollout.LabelAppName + "=" + agentrollout.KubeVIPName})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != len(cluster.Nodes()) {
		t.Errorf("%d kube-vip pods, want %d: %v", len(pods.Items), len(cluster.Nodes()), podNames(pods))
	}
	return pods.Items
}

func kubeVIPPodOn(t *testing.T, ctx context.Context, node string) *corev1.Pod {
	t.Helper()
	for _, p := range kubeVIPPods(t, ctx) {
		if p.Spec.NodeName == node {
			return &p
		}
	}
	t.Fatalf("no kube-vip pod on %s", node)
	return nil
}

// dualHolders sums the time the sampler saw the VIP on two or more nodes and returns the
// longest such stretch.
func dualHolders(rep netns.SamplerReport) (total, longest time.Duration) {
	for _, sp := range rep.TwoHolderSpans() {
		total += sp.To.Sub(sp.From)
		longest = max(longest, sp.To.Sub(sp.From))
	}
	return total, longest
}

// changesSince renders the holder changes after t as "+offset [holders]".
func changesSince(rep netns.SamplerReport, t0 time.Time) string {
	var b strings.Builder
	for _, c := range rep.Changes {
		if c.At.Before(t0) {
			continue
		}
		fmt.Fprintf(&b, " +%s %v", c.At.Sub(t0).Round(time.Millisecond), c.Holders)
	}
	return strings.TrimSpace(b.String())
}
