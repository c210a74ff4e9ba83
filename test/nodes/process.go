// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// daemon is a process started with `nsenter --net` in a node's namespace, in its own
// process group.
type daemon struct {
	name, netns, logPath string
	argv                 []string
	cmd                  *exec.Cmd
	done                 chan struct{}
}

func startDaemon(name, netnsName, logPath string, argv ...string) (*daemon, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file for %s: %w", name, err)
	}
	args := append([]string{"--net=" + filepath.Join("/run/netns", netnsName), "--"}, argv...)
	cmd := exec.Command("nsenter", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &daemon{name: name, netns: netnsName, logPath: logPath, argv: argv, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(d.done)
	}()
	return d, nil
}

// PID is the process id (nsenter execs the daemon, so it is the daemon's).
func (d *daemon) PID() int { return d.cmd.Process.Pid }

// Exited says whether the process has ended.
func (d *daemon) Exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the group, and SIGKILL after grace. A nil daemon is stopped.
func (d *daemon) Stop(grace time.Duration) error {
	if d == nil {
		return nil
	}
	pgid := d.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s: %w", d.name, err)
	}
	select {
	case <-d.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-d.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", d.name, pgid)
	}
}

// logTail is the last lines of the daemon's log, or why it cannot be read.
func (d *daemon) logTail(lines int) string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// again starts the same command line once more, in the same namespace and log file.
func (d *daemon) again() (*daemon, error) {
	return startDaemon(d.name, d.netns, d.logPath, d.argv...)
}
