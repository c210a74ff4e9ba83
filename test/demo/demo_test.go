// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/hack/tools/imagebuild"
	"github.com/gardener/gardener-extension-kube-vip/test/dataplane"
	"github.com/gardener/gardener-extension-kube-vip/test/extension"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

const testTechnicalID = "kube-vip-demo-test"

// output collects the demo's stdout and signals its READY line.
type output struct {
	mu    sync.Mutex
	lines []string
	ready chan struct{}
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines, "\n")
}

func (o *output) read(t *testing.T, f *os.File) {
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if testing.Verbose() {
			t.Log(line)
		}
		o.mu.Lock()
		o.lines = append(o.lines, line)
		o.mu.Unlock()
		if strings.HasPrefix(line, "READY") {
			close(o.ready)
		}
	}
}

// testPrefix names the test's namespaces apart from those of a `make demo` that may run.
const testPrefix = "kvdt-"

// TestDemoEndToEnd runs the demo program as `make demo` does, against the local OpenStack
// and the real-node cluster, installed from the artifacts of make release-artifacts (the
// running pods' images are the OCI layouts' references and manifest digests): it must come
// up with the controller and the agents as pods under containerd (3/3 Ready, agents with exactly NET_ADMIN and NET_RAW), create the
// exposure with Gardener's code in gardenadm's layout (port 443), show the DNS value that
// Gardener computed from the floating IP and reach /readyz through it, fail over with a measured outage, write env.sh, and on SIGTERM release
// every Neutron resource and leave no namespace, process, mount or cgroup behind.
func TestDemoEndToEnd(t *testing.T) {
	framework.RequireRoot(t)
	osEnv := framework.OpenStack(t)
	envFile, err := framework.OpenStackEnvFile()
	if err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	bin := filepath.Join(dir, "demo")
	build := exec.Command("go", "build", "-o", bin, "./test/demo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./test/demo: %v: %s", err, out)
	}

	// The demo installs what an operator gets: the artifacts of make release-artifacts.
	releaseDir := filepath.Join(root, "bin", "release")
	release := makeRelease(t, root, releaseDir)
	requireBothArchitectures(t, root, release)
	requireReproducible(t, root, release)
	pushedAsTheWorkflowDoes(t, root, release)

	neutron := neutronClient(t, osEnv)
	args := []string{"--state-dir", state, "--openstack-env", envFile, "--prefix", testPrefix,
		"--technical-id", testTechnicalID, "--failover-probing", "5s", "--release", releaseDir}
	// With hack/dataplane.sh's dataplane up (make test-dataplane), the demo walks the front
	// door as make demo does; without it (a run outside make test), the VIP on a plain LAN.
	dpCtx, dpCancel := context.WithTimeout(context.Background(), 30*time.Second)
	dp, dpErr := dataplane.LoadEnv(dpCtx)
	dpCancel()
	frontDoor := dpErr == nil
	if frontDoor {
		args = append(args, "--front-door")
	}
	t.Logf("front door (Neutron dataplane up): %v", frontDoor)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the demo: %v", err)
	}
	_ = pw.Close()
	out := &output{ready: make(chan struct{})}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		out.read(t, pr)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	id := fmt.Sprintf("%s%d-", testPrefix, pid)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				t.Logf("demo stopped: %v", err)
			case <-time.After(5 * time.Minute):
				_ = cmd.Process.Kill()
				t.Logf("demo killed after 5 min: %v", <-exited)
			}
		}
	})

	select {
	case <-out.ready:
	case err := <-exited:
		stopped = true
		<-readDone
		t.Fatalf("the demo exited before READY (%v):\n%s", err, out)
	case <-time.After(15 * time.Minute):
		t.Fatalf("no READY within 15 minutes:\n%s", out)
	}

	text := out.String()
	m := regexp.MustCompile(`status\.ingress: ip=(198\.19\.0\.\d+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no floating IP in status.ingress in the output:\n%s", text)
	}
	// The DNS value is Gardener's (DNSValuesFromIngress at init), and it is the floating IP.
	dns := regexp.MustCompile(`DNS value \(DNSValuesFromIngress, computed once at init\): (\S+)`).FindStringSubmatch(text)
	if dns == nil || dns[1] != m[1] {
		t.Fatalf("the output's DNS value %q, want the floating IP %s:\n%s", dns, m[1], text)
	}
	wants := []*regexp.Regexp{
		regexp.MustCompile(`Gardener's component created it: type kube-vip, spec\.port 443, spec\.endpoints \[node\d node\d node\d\]`),
		regexp.MustCompile(`new leader node\d holds the Lease and the VIP`),
		regexp.MustCompile(`OUTAGE: `),
		regexp.MustCompile(`the DaemonSet replaced the pod: \S+ runs on node\d again`),
	}
	if !frontDoor {
		wants = append(wants, regexp.MustCompile(`GET https://198\.18\.0\.100:443/readyz from \S+ \(198\.18\.0\.5\): "ok"`))
	} else {
		wants = append(wants,
			regexp.MustCompile(`FRONT DOOR: GET https://`+regexp.QuoteMeta(dns[1])+`/readyz from `+dp.ClientNS+` .*: "ok"`),
			regexp.MustCompile(`prober: GET https://`+regexp.QuoteMeta(dns[1])+`:443/readyz .* from outside, through the floating IP \(the DNS value\)`),
			regexp.MustCompile(`the router's neighbour entry: 198\.18\.0\.100 .*lladdr`))
	}
	for _, want := range wants {
		if !want.MatchString(text) {
			t.Errorf("the output lacks %q", want)
		}
	}

	// What the demo says must be so in Neutron.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fip, err := neutron.FindFloatingIPByAddress(ctx, m[1])
	if err != nil || fip == nil {
		t.Fatalf("floating IP %s not in Neutron: %v", m[1], err)
	}
	if fip.FixedIP != "198.18.0.100" {
		t.Errorf("floating IP %s points to %q, want the VIP 198.18.0.100", m[1], fip.FixedIP)
	}
	for i, id := range osEnv.NodePortIDs {
		p, err := neutron.GetPort(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !openstack.HasPair(p, "198.18.0.100") {
			t.Errorf("node port %d (%s) lacks the VIP pair while the demo runs", i, id)
		}
	}

	// The agents and the controller are pods: children of containerd's shim; the agents
	// hold exactly NET_ADMIN and NET_RAW.
	env := readEnv(t, filepath.Join(state, "env.sh"))
	if env["DEMO_INGRESS"] != m[1] {
		t.Errorf("env.sh: DEMO_INGRESS=%q, want the floating IP %s", env["DEMO_INGRESS"], m[1])
	}
	if frontDoor && env["DEMO_CLIENT_NS"] != dp.ClientNS {
		t.Errorf("env.sh: DEMO_CLIENT_NS=%q, want the external client %s", env["DEMO_CLIENT_NS"], dp.ClientNS)
	}
	agents, controllers := 0, 0
	for _, ns := range namespacesWithPrefix(id) {
		if !strings.Contains(ns, "-node") {
			continue
		}
		for _, p := range processesIn(t, ns) {
			switch p.Name {
			case "kube-vip-agent":
				agents++
				if p.CapEff != 1<<12|1<<13 {
					t.Errorf("%s: agent pid %d has CapEff %#x, want exactly NET_ADMIN|NET_RAW", ns, p.PID, p.CapEff)
				}
			case "gardener-extens": // comm is cut at 15 characters
				controllers++
			default:
				continue
			}
			if parent, err := nodes.ReadProcStatus(p.PPID); err != nil || parent.Name != "containerd-shim" {
				t.Errorf("%s: %s pid %d runs under %q, want containerd-shim-runc-v2 (%v)", ns, p.Name, p.PID, parent.Name, err)
			}
		}
	}
	if agents != 3 || controllers != 1 {
		t.Errorf("%d agent and %d controller processes in the demo's nodes, want 3 and 1", agents, controllers)
	}
	ready, err := exec.CommandContext(ctx, "ip", "netns", "exec", env["DEMO_NODE_NS"], env["KUBECTL"], "--kubeconfig", env["KUBECONFIG"],
		"-n", "kube-system", "get", "daemonset", "kube-vip-agent", "-o", "jsonpath={.status.numberReady}/{.status.desiredNumberScheduled}").CombinedOutput()
	if err != nil || string(ready) != "3/3" {
		t.Errorf("kubectl get ds with env.sh: %q (%v), want 3/3 ready", ready, err)
	}
	// The running pods are the release's images: the reference the chart and the embedded
	// image vector name, and the manifest digest of the OCI layout.
	kubectl := func(args ...string) string {
		t.Helper()
		full := append([]string{"netns", "exec", env["DEMO_NODE_NS"], env["KUBECTL"], "--kubeconfig", env["KUBECONFIG"]}, args...)
		b, err := exec.CommandContext(ctx, "ip", full...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v: %s", args, err, b)
		}
		return string(b)
	}
	running := map[string][]string{}
	for _, ns := range []string{"kube-system", extension.ReleaseNamespace} {
		lines := kubectl("-n", ns, "get", "pods", "-o", `jsonpath={range .items[*].status.containerStatuses[*]}{.image}{" "}{.imageID}{"\n"}{end}`)
		for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
			if ref, imageID, ok := strings.Cut(line, " "); ok {
				running[ref] = append(running[ref], imageID)
			}
		}
	}
	for name, want := range map[string]int{"gardener-extension-kube-vip": 1, "kube-vip-agent": 3} {
		img := release.Images[name]
		ids := running[img.Ref]
		if len(ids) != want {
			t.Errorf("%d containers run %s, want %d (running: %v)", len(ids), img.Ref, want, running)
		}
		repo := img.Ref[:strings.LastIndex(img.Ref, ":")]
		for _, id := range ids {
			if id != repo+"@"+img.Digest {
				t.Errorf("a container of %s runs image %s, want the release's %s@%s", img.Ref, id, repo, img.Digest)
			}
		}
	}
	if n := len(namespacesWithPrefix(id)); n != 5 {
		t.Errorf("want 5 namespaces (bridge, 3 nodes, client) of the running demo, have %v", namespacesWithPrefix(id))
	}

	// Teardown as hack/demo.sh down does it.
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		<-readDone
		if err != nil {
			t.Fatalf("the demo's teardown failed (%v):\n%s", err, out)
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("the demo did not stop within 5 minutes of SIGTERM:\n%s", out)
	}
	t.Logf("teardown took %s", time.Since(start).Round(100*time.Millisecond))
	if left := namespacesWithPrefix(id); len(left) > 0 {
		t.Errorf("namespaces left after the teardown: %v", left)
	}
	if left := leftUnder(t, state); len(left) > 0 {
		t.Errorf("left after the teardown: %v", left)
	}
	if list, err := neutron.ListFloatingIPs(ctx, floatingips.ListOpts{FloatingIP: m[1]}); err != nil || len(list) > 0 {
		t.Errorf("floating IP %s still in Neutron after the teardown (%d found, %v)", m[1], len(list), err)
	}
	tagged, err := neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(testTechnicalID)}})
	if err != nil || len(tagged) > 0 {
		t.Errorf("after the teardown: %d ports tagged %s (%v)", len(tagged), openstack.ClusterTag(testTechnicalID), err)
	}
	for _, id := range osEnv.NodePortIDs {
		if p, err := neutron.GetPort(ctx, id); err != nil || openstack.HasPair(p, "198.18.0.100") {
			t.Errorf("node port %s still allows the VIP after the teardown (%v)", id, err)
		}
	}
}

// readEnv reads the KEY=VALUE lines of an env.sh the demo wrote.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if ok && !strings.HasPrefix(line, "#") {
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			env[k] = v
		}
	}
	return env
}

// namespacesWithPrefix lists the network namespaces whose name starts with prefix.
func namespacesWithPrefix(prefix string) []string {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// processesIn is what runs in the network namespace.
func processesIn(t *testing.T, ns string) []nodes.ProcStatus {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", ns, err)
	}
	var procs []nodes.ProcStatus
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		if st, err := nodes.ReadProcStatus(pid); err == nil {
			procs = append(procs, st)
		}
	}
	return procs
}

// leftUnder lists the mounts below dir and the processes whose command line names it.
func leftUnder(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			left = append(left, "mount "+f[1])
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), dir+"/") {
			left = append(left, "process "+filepath.Base(filepath.Dir(p)))
		}
	}
	return left
}

func neutronClient(t *testing.T, env framework.OpenStackEnv) *openstack.Network {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	factory := openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)})
	n, err := factory.Network(ctx, openstack.AuthConfig{
		Credentials: &openstack.Credentials{DomainName: env.DomainName, TenantName: env.ProjectName, Username: env.Username, Password: env.Password},
		AuthURL:     env.AuthURL,
		Region:      env.Region,
	})
	if err != nil {
		t.Fatalf("authenticating at Keystone: %v", err)
	}
	return n
}

// makeRelease runs make release-artifacts into dir, both architectures as the release
// workflow builds them, and loads what it wrote.
func makeRelease(t *testing.T, root, dir string) *extension.Release {
	t.Helper()
	mk := exec.Command("make", "--no-print-directory", "release-artifacts", "RELEASE_DIR="+dir)
	mk.Dir = root
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make release-artifacts: %v: %s", err, out)
	}
	release, err := extension.LoadRelease(dir)
	if err != nil {
		t.Fatal(err)
	}
	return release
}

// requireBothArchitectures: each release image is what the release workflow publishes, an
// index of a linux/amd64 and a linux/arm64 image, both with the OCI labels and each with
// its binary built for its architecture.
func requireBothArchitectures(t *testing.T, root string, r *extension.Release) {
	t.Helper()
	keys := imagebuild.OCILabels("", "", "", "") // present, with any value
	for _, img := range imagebuild.ReleaseImages() {
		s, err := imagebuild.Config{Root: root}.Stage(img)
		if err != nil {
			t.Fatal(err)
		}
		got := r.Images[img.Name]
		if err := imagebuild.CheckLayout(got.Layout, imagebuild.LayoutWant{Ref: got.Ref, Arches: []string{"amd64", "arm64"}, Labels: keys, Binary: s.Copies[0].Dst}); err != nil {
			t.Error(err)
		}
	}
}

// requireReproducible runs make release-artifacts a second time, into another directory, and
// wants the digests of the first run: a tag rebuilt gives the images it gave before. It runs
// here, where the release is built anyway, so that the suite builds the release binaries once
// (the second go build comes from Go's build cache; -trimpath keeps a cold build with the
// same toolchain the same).
func requireReproducible(t *testing.T, root string, r *extension.Release) {
	t.Helper()
	again := makeRelease(t, root, t.TempDir())
	for name, img := range r.Images {
		if again.Images[name].Digest != img.Digest {
			t.Errorf("the release image %s was %s, then %s built again from the same sources", name, img.Digest, again.Images[name].Digest)
		}
	}
	t.Logf("the release images, built twice, have the same digests: %v", r.Images)
}
