// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ProcessOptions describe a process to start inside a node's namespace.
type ProcessOptions struct {
	// Name names the log file (<harness dir>/<node>-<Name>.log); required.
	Name string
	// Path is the executable.
	Path string
	// Args are the arguments after the executable.
	Args []string
	// Env is added to the test process's environment.
	Env []string
	// Dir is the working directory; empty means the harness directory.
	Dir string
}

// Process is a process started with `ip netns exec` in its own process group. Signals go
// to the whole group.
type Process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}

	mu      sync.Mutex
	waitErr error
}

func startProcess(nsName string, opts ProcessOptions, logDir, logPrefix string) (*Process, error) {
	if opts.Name == "" || opts.Path == "" {
		return nil, errors.New("process needs a name and a path")
	}
	logPath := filepath.Join(logDir, logPrefix+opts.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file for %s: %w", opts.Name, err)
	}
	fmt.Fprintf(logFile, "=== %s start %s %v\n", time.Now().Format(time.RFC3339Nano), opts.Path, opts.Args)

	cmd := exec.Command("ip", append([]string{"netns", "exec", nsName, opts.Path}, opts.Args...)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Dir = opts.Dir
	if cmd.Dir == "" {
		cmd.Dir = logDir
	}
	// Own process group, so that group signals reach children too; killed if the test
	// binary dies (the harness never retires the threads that fork).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s in %s: %w", opts.Name, nsName, err)
	}
	p := &Process{name: opts.Name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logFile, "=== %s exit: %v\n", time.Now().Format(time.RFC3339Nano), cmd.ProcessState)
		_ = logFile.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Name is the name given at start.
func (p *Process) Name() string { return p.name }

// PID is the process id (also its process group id).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// LogPath is the file that holds stdout and stderr.
func (p *Process) LogPath() string { return p.logPath }

// Signal sends sig to the process group. Signalling an exited process is not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	if err := syscall.Kill(-p.PID(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to %s: %w", sig, p.name, err)
	}
	return nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits until the process exits or ctx ends, and returns the exit error of the
// process (nil for exit code 0).
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.waitErr
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", p.name, ctx.Err())
	}
}

// ExitCode is the exit code, -1 while running or when killed by a signal.
func (p *Process) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Stop sends SIGTERM (and SIGCONT, in case the group is stopped) and, if the process has
// not exited after grace, SIGKILL. It waits for the exit and returns the exit error.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return p.Wait(context.Background())
	}
	_ = p.Signal(syscall.SIGTERM)
	_ = p.Signal(syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Signal(syscall.SIGKILL)
		<-p.done
	}
	return p.Wait(context.Background())
}

// Kill sends SIGKILL to the group and waits for the exit.
func (p *Process) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}
