// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package sut

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Keepalived runs keepalived's VRRP subsystem in the foreground, the way the kubeadm HA
// guide (ha-considerations) configures it: one vrrp_instance on the LAN interface with the
// VIP, multicast adverts, state BACKUP on every node with priority 101 on the first and
// 100 on the others, and a track_script that curls the local kube-apiserver and lowers
// the priority by 2 when it fails. Every file (configuration, check script, pid files)
// lives in the node's own directory, so nothing on the machine is touched.
type Keepalived struct {
	// Path is the keepalived binary; empty means "keepalived" from PATH.
	Path string
	// Variant names this setting in tables, e.g. "guide".
	Variant string
	// AdvertInterval is advert_int. Below a second it needs VRRP version 3 (which has
	// no authentication); at whole seconds the guide's VRRPv2 with PASS authentication
	// is used.
	AdvertInterval time.Duration
	// CheckInterval, CheckFall, CheckRise and CheckTimeout are the track script's
	// interval, fall, rise and timeout; keepalived 2.2.7 takes whole seconds for interval.
	CheckInterval, CheckFall, CheckRise, CheckTimeout int
	// GARPMasterDelay is garp_master_delay in seconds: when a new master sends its second
	// burst of gratuitous ARPs. Zero keeps keepalived's default of 5 s. It matters when two
	// backups of equal priority both take over: the loser removes the VIP, and a client
	// that took the loser's ARP last is only corrected by this second burst.
	GARPMasterDelay int
	// Timeout overrides the scenario timeout; zero means 15s.
	Timeout time.Duration
}

// KeepalivedGuide is the kubeadm HA guide's setting: advert_int 1, check every 3 s,
// fall 10, rise 2.
func KeepalivedGuide(path string) Keepalived {
	return Keepalived{
		Path: path, Variant: "guide", AdvertInterval: time.Second,
		CheckInterval: 3, CheckFall: 10, CheckRise: 2, CheckTimeout: 2,
		Timeout: 45 * time.Second,
	}
}

// KeepalivedTuned is a faster setting: sub-second VRRPv3 adverts, a track script every
// second that fails after 2 misses, and the second gratuitous ARP burst after 1 s.
func KeepalivedTuned(path string, advert time.Duration) Keepalived {
	return Keepalived{
		Path: path, Variant: "tuned", AdvertInterval: advert,
		CheckInterval: 1, CheckFall: 2, CheckRise: 2, CheckTimeout: 1,
		GARPMasterDelay: 1,
	}
}

// Name implements System.
func (k Keepalived) Name() string { return "keepalived " + k.Variant }

// Describe implements System.
func (k Keepalived) Describe() string {
	d := fmt.Sprintf("keepalived VRRPv%d advert_int %ss, check interval %ds fall %d rise %d weight -2",
		k.vrrpVersion(), seconds(k.AdvertInterval), k.CheckInterval, k.CheckFall, k.CheckRise)
	if k.GARPMasterDelay > 0 {
		d += fmt.Sprintf(", garp_master_delay %d", k.GARPMasterDelay)
	}
	return d
}

// Binary implements System.
func (k Keepalived) Binary() string {
	if k.Path == "" {
		return "keepalived"
	}
	return k.Path
}

// ScenarioTimeout implements System.
func (k Keepalived) ScenarioTimeout() time.Duration { return orDefault(k.Timeout, 15*time.Second) }

// Settle implements System.
func (k Keepalived) Settle() time.Duration { return max(2*time.Second, 3*k.AdvertInterval) }

// Preferred implements System: the first node has the highest priority and, once its
// check passes again, takes the VIP back (preemption, as in the guide).
func (k Keepalived) Preferred() int { return 0 }

func (k Keepalived) vrrpVersion() int {
	if k.AdvertInterval%time.Second != 0 {
		return 3
	}
	return 2
}

// Validate checks what keepalived 2.2.7 would reject or silently change.
func (k Keepalived) Validate() error {
	switch {
	case k.AdvertInterval < 10*time.Millisecond || k.AdvertInterval%(10*time.Millisecond) != 0:
		return fmt.Errorf("advert_int %v: keepalived counts centiseconds", k.AdvertInterval)
	case k.CheckInterval < 1:
		return fmt.Errorf("track script interval %ds: keepalived wants whole seconds >= 1", k.CheckInterval)
	case k.CheckFall < 1 || k.CheckRise < 1 || k.CheckTimeout < 1:
		return fmt.Errorf("track script fall/rise/timeout must be >= 1")
	case k.GARPMasterDelay < 0:
		return fmt.Errorf("garp_master_delay %d: must not be negative", k.GARPMasterDelay)
	}
	return nil
}

// Priority is the VRRP priority of node i: 101 for the first node, 100 for the others.
func Priority(i int) int {
	if i == 0 {
		return 101
	}
	return 100
}

// Config renders keepalived.conf for node i; script is the check script's path.
func (k Keepalived) Config(c Cluster, i int, script string) (string, error) {
	if i < 0 || i >= len(c.Nodes) {
		return "", fmt.Errorf("node %d out of range", i)
	}
	if err := k.Validate(); err != nil {
		return "", err
	}
	n := c.Nodes[i]
	var b strings.Builder
	fmt.Fprintf(&b, "global_defs {\n  router_id %s\n  enable_script_security\n  script_user root\n}\n", n.Name)
	fmt.Fprintf(&b, "vrrp_script check_apiserver {\n  script %q\n  interval %d\n  timeout %d\n  weight -2\n  fall %d\n  rise %d\n}\n",
		script, k.CheckInterval, k.CheckTimeout, k.CheckFall, k.CheckRise)
	fmt.Fprintf(&b, "vrrp_instance VI_1 {\n  state BACKUP\n  interface %s\n  virtual_router_id 51\n  priority %d\n  advert_int %s\n",
		n.Interface, Priority(i), seconds(k.AdvertInterval))
	if k.vrrpVersion() == 3 {
		b.WriteString("  version 3\n")
	} else {
		b.WriteString("  authentication {\n    auth_type PASS\n    auth_pass 42\n  }\n")
	}
	if k.GARPMasterDelay > 0 {
		fmt.Fprintf(&b, "  garp_master_delay %d\n", k.GARPMasterDelay)
	}
	fmt.Fprintf(&b, "  virtual_ipaddress {\n    %s/%d\n  }\n  track_script {\n    check_apiserver\n  }\n}\n", c.VIP, c.VIP.BitLen())
	return b.String(), nil
}

// checkScript is the guide's check_apiserver.sh, asking /readyz of the local apiserver.
func checkScript(timeout int) string {
	return fmt.Sprintf(`#!/bin/sh
errorExit() {
  echo "*** $*" 1>&2
  exit 1
}
curl -sfk --max-time %d https://localhost:6443/readyz -o /dev/null || errorExit "Error GET https://localhost:6443/readyz"
`, timeout)
}

// Prepare implements System.
func (k Keepalived) Prepare(c Cluster, i int, dir string) (Command, error) {
	script := filepath.Join(dir, "check_apiserver.sh")
	cfg, err := k.Config(c, i, script)
	if err != nil {
		return Command{}, err
	}
	if err := writeFile(script, checkScript(k.CheckTimeout), 0o755); err != nil {
		return Command{}, err
	}
	cfgPath := filepath.Join(dir, "keepalived.conf")
	if err := writeFile(cfgPath, cfg, 0o644); err != nil {
		return Command{}, err
	}
	pids := []string{filepath.Join(dir, "keepalived.pid"), filepath.Join(dir, "vrrp.pid"), filepath.Join(dir, "checkers.pid")}
	return Command{
		Path: k.Binary(),
		Args: []string{
			"--dont-fork", "--log-console", "--log-detail", "--no-syslog", "--vrrp",
			"--use-file=" + cfgPath,
			"--pid=" + pids[0],
			"--vrrp_pid=" + pids[1],
			"--checkers_pid=" + pids[2],
		},
		Stale: pids,
	}, nil
}

// Previous implements Rollable. Only one release is built here, so the roll restarts
// the same one node by node: what any DaemonSet roll costs it.
func (k Keepalived) Previous(c Cluster, i int, dir string) (Command, error) {
	return k.Prepare(c, i, dir)
}
