// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"

	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
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

// TestDemoEndToEnd runs the demo program as `make demo` does, against the local OpenStack
// and the kube binaries: it must come up, show the floating IP, fail over with a measured
// outage, and on SIGTERM release every Neutron resource and remove its namespaces.
func TestDemoEndToEnd(t *testing.T) {
	framework.RequireRoot(t)
	osEnv := framework.OpenStack(t)
	envFile, err := framework.OpenStackEnvFile()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := framework.KubeBinaries()
	if err != nil {
		t.Fatalf("kube binaries: %v", err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for target, pkg := range map[string]string{"kube-vip-agent": "./cmd/kube-vip-agent", "demo": "./test/demo"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, target), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v: %s", pkg, err, out)
		}
	}

	neutron := neutronClient(t, osEnv)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "demo"),
		"--state-dir", filepath.Join(dir, "state"),
		"--kube-bin-dir", assets,
		"--agent-binary", filepath.Join(bin, "kube-vip-agent"),
		"--openstack-env", envFile,
		"--technical-id", testTechnicalID,
		"--metrics-address", "127.0.0.1:0",
		"--failover-probing", "5s",
	)
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
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				t.Logf("demo stopped: %v", err)
			case <-time.After(4 * time.Minute):
				_ = cmd.Process.Kill()
				t.Logf("demo killed after 4 min: %v", <-exited)
			}
		}
		// Whatever happened: no namespace of this run may stay.
		for _, ns := range leftoverNamespaces(fmt.Sprintf("kvd-%d", pid)) {
			_ = exec.Command("ip", "netns", "delete", ns).Run()
		}
	})

	select {
	case <-out.ready:
	case err := <-exited:
		stopped = true
		<-readDone
		t.Fatalf("the demo exited before READY (%v):\n%s", err, out)
	case <-time.After(10 * time.Minute):
		t.Fatalf("no READY within 10 minutes:\n%s", out)
	}

	text := out.String()
	m := regexp.MustCompile(`status\.ingress: ip=(198\.19\.0\.\d+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no floating IP in status.ingress in the output:\n%s", text)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`GET https://198\.18\.0\.100:6443/readyz from \S+ \(198\.18\.0\.5\): "ok"`),
		regexp.MustCompile(`new leader node-\d holds the Lease and the VIP`),
		regexp.MustCompile(`OUTAGE: `),
		regexp.MustCompile(`the agent on node-\d runs again`),
	} {
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
	if len(leftoverNamespaces(fmt.Sprintf("kvd-%d", pid))) != 5 {
		t.Errorf("want 5 namespaces (bridge, 3 nodes, client) of the running demo, have %v", leftoverNamespaces(fmt.Sprintf("kvd-%d", pid)))
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
	case <-time.After(4 * time.Minute):
		t.Fatalf("the demo did not stop within 4 minutes of SIGTERM:\n%s", out)
	}
	t.Logf("teardown took %s", time.Since(start).Round(100*time.Millisecond))
	if left := leftoverNamespaces(fmt.Sprintf("kvd-%d", pid)); len(left) > 0 {
		t.Errorf("namespaces left after the teardown: %v", left)
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
