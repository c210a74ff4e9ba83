// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package faults_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/test/faults"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// controllerBinary builds cmd/gardener-extension-kube-vip once per test binary.
func controllerBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		root, err := framework.RepoRoot()
		if err != nil {
			binaryErr = err
			return
		}
		dir, err := os.MkdirTemp("", "kube-vip-faults-")
		if err != nil {
			binaryErr = err
			return
		}
		suite.Defer(func() { _ = os.RemoveAll(dir) })
		binaryPath = filepath.Join(dir, "gardener-extension-kube-vip")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/gardener-extension-kube-vip")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("building the controller: %w: %s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// process is the controller binary running against the test's kube-apiserver.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func startProcess(t *testing.T, e *sharedEnv, n int) *process {
	t.Helper()
	dir := t.TempDir()
	kubeconfig, err := e.cp.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, fmt.Sprintf("controller-%d.log", n))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(controllerBinary(t),
		"--kubeconfig="+path,
		"--agent-image=example.org/kube-vip-agent:test",
		// Crashes between Neutron calls: no agent runs, so the front door is not checked.
		"--front-door-probe=off",
		"--leader-election=false",
		"--disable-controllers=heartbeat",
		"--metrics-bind-address=0",
		"--health-bind-address=0",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the controller: %v", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		<-p.done
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("controller %d log (tail):\n%s", n, tail(string(out), 30))
		}
	})
	// Give the manager time to start its informers before the test acts.
	time.Sleep(time.Second)
	return p
}

// kill sends SIGKILL: no deferred function or shutdown path of the controller runs.
func (p *process) kill() { _ = p.cmd.Process.Signal(syscall.SIGKILL) }

func (p *process) waitExit(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("the controller was not killed within %s: the crash point was not reached", d)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// crashLifecycle creates and deletes an exposure with the controller binary; at the
// mutating call of a phase's fault in r, the proxy SIGKILLs the controller, and a new
// controller process takes over. It returns the mutating calls of each phase.
func crashLifecycle(t *testing.T, e *sharedEnv, r run) map[phase][]faults.Call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*converge)
	defer cancel()
	e.setControlPlane(t, ctx, true)
	n := 0
	proc := startProcess(t, e, n)
	e.proxy.OnCrash(proc.kill)
	// No controller of this run may outlive it: two controllers at once would race.
	defer func() {
		e.proxy.OnCrash(nil)
		proc.kill()
		<-proc.done
		// Nor may a failed run leave the proxy armed or crashed.
		e.proxy.Arm(nil)
		e.proxy.Resume()
	}()

	calls := map[phase][]faults.Call{}
	step := func(p phase, act func(), until func(*observer)) {
		fault := r.fault(p)
		e.proxy.Arm(fault)
		act()
		ob := &observer{t: t, e: e}
		if fault != nil {
			proc.waitExit(t, converge)
			injected := e.proxy.Injected()
			calls[p] = e.proxy.Mutating()
			e.proxy.Arm(nil)
			e.proxy.Resume()
			r.checkInjected(t, p, injected)
			n++
			proc = startProcess(t, e, n)
			e.proxy.OnCrash(proc.kill)
		}
		until(ob)
		if fault == nil {
			calls[p] = e.proxy.Mutating()
			e.proxy.Arm(nil)
		}
	}

	exp, identity := newExposure(t, ctx, e, "crash")
	key := client.ObjectKeyFromObject(exp)
	step(phaseCreate, func() {
		if err := e.cp.Client.Create(ctx, exp); err != nil {
			t.Fatalf("creating exposure: %v", err)
		}
	}, func(ob *observer) { ob.key = key; ob.poll(ctx, "the exposure to succeed", succeeded) })
	vip := assertExact(t, ctx, e, identity, 3)

	step(phaseDelete, func() {
		if err := e.cp.Client.Delete(ctx, exp); err != nil {
			t.Fatalf("deleting exposure: %v", err)
		}
	}, func(ob *observer) { ob.key = key; ob.poll(ctx, "the exposure to be deleted", gone) })
	assertNothingLeft(t, ctx, e, identity, vip)
	return calls
}

// TestCrashBetweenEveryTwoCalls kills the controller binary (SIGKILL) right before and
// right after every mutating Neutron call of create and delete, and restarts it; every
// run must converge with exactly one port, one floating IP and three pairs, and nothing
// left after the deletion. Each exposure crashes once in its creation and once in its
// deletion: the exact state checked in between makes the deletion start clean.
func TestCrashBetweenEveryTwoCalls(t *testing.T) {
	e := env(t)
	controllerBinary(t)
	clean := crashLifecycle(t, e, run{})
	runs := pair(points(t, phaseCreate, clean[phaseCreate], every(faults.Crash, faults.CrashAfter)),
		points(t, phaseDelete, clean[phaseDelete], every(faults.Crash, faults.CrashAfter)))
	total := 0
	for _, r := range runs {
		t.Run(r.String(), func(t *testing.T) { crashLifecycle(t, e, r) })
		total += len(r.points)
	}
	t.Logf("%d crash points in %d exposures", total, len(runs))
}
