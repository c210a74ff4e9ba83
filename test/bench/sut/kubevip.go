// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package sut

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// KubeVIP runs upstream kube-vip (v1.0.0) as `kube-vip manager` in ARP control-plane
// mode with leader election on the Lease kube-system/plndr-cp-lock.
//
// kube-vip v1.0.0's manager does not read its --k8sConfigPath: it takes
// /etc/kubernetes/admin.conf if that file exists, else $HOME/.kube/config, else the
// in-cluster config. Each node therefore gets its own HOME holding the node's kubeconfig;
// /etc/kubernetes/admin.conf must not exist on the machine (Prepare checks).
type KubeVIP struct {
	// Path is the kube-vip binary.
	Path string
	// Variant names this setting in tables, e.g. "defaults".
	Variant string
	// LeaseDuration, RenewDeadline and RetryPeriod are whole seconds (kube-vip takes
	// integers). Zero means kube-vip's own default (5/3/1).
	LeaseDuration, RenewDeadline, RetryPeriod int
	// Timeout overrides the scenario timeout; zero means 15s.
	Timeout time.Duration
}

// adminConf is where kube-vip looks first for a kubeconfig.
const adminConf = "/etc/kubernetes/admin.conf"

// Name implements System.
func (k KubeVIP) Name() string { return "kube-vip " + k.Variant }

// Describe implements System.
func (k KubeVIP) Describe() string {
	l, r, p := k.timings()
	return fmt.Sprintf("kube-vip v1.0.0 manager, ARP control plane, lease %d/%d/%d s, ARP tick 3 s", l, r, p)
}

// Binary implements System.
func (k KubeVIP) Binary() string { return k.Path }

// ScenarioTimeout implements System.
func (k KubeVIP) ScenarioTimeout() time.Duration { return orDefault(k.Timeout, 15*time.Second) }

// Settle implements System.
func (k KubeVIP) Settle() time.Duration { return 1500 * time.Millisecond }

// Preferred implements System: any node may lead.
func (k KubeVIP) Preferred() int { return -1 }

func (k KubeVIP) timings() (lease, renew, retry int) {
	lease, renew, retry = k.LeaseDuration, k.RenewDeadline, k.RetryPeriod
	if lease == 0 {
		lease = 5
	}
	if renew == 0 {
		renew = 3
	}
	if retry == 0 {
		retry = 1
	}
	return lease, renew, retry
}

// Validate applies client-go's leader-election checks that kube-vip hands its timings
// to: lease > renew > 1.2 x retry, all positive.
func (k KubeVIP) Validate() error {
	l, r, p := k.timings()
	if p <= 0 || r <= 0 || l <= 0 {
		return fmt.Errorf("kube-vip timings must be positive, got %d/%d/%d", l, r, p)
	}
	if l <= r {
		return fmt.Errorf("kube-vip lease duration %ds must exceed renew deadline %ds", l, r)
	}
	if float64(r) <= 1.2*float64(p) {
		return fmt.Errorf("kube-vip renew deadline %ds must exceed 1.2 x retry period %ds", r, p)
	}
	return nil
}

// Prepare implements System.
func (k KubeVIP) Prepare(c Cluster, i int, dir string) (Command, error) {
	if i < 0 || i >= len(c.Nodes) {
		return Command{}, fmt.Errorf("node %d out of range", i)
	}
	if err := k.Validate(); err != nil {
		return Command{}, err
	}
	if _, err := os.Stat(adminConf); err == nil {
		return Command{}, fmt.Errorf("%s exists: kube-vip would use it instead of the node's kubeconfig", adminConf)
	}
	n := c.Nodes[i]
	kubeconfig, err := os.ReadFile(n.Kubeconfig)
	if err != nil {
		return Command{}, fmt.Errorf("reading kubeconfig of %s: %w", n.Name, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".kube"), 0o700); err != nil {
		return Command{}, fmt.Errorf("kube-vip home of %s: %w", n.Name, err)
	}
	if err := writeFile(filepath.Join(dir, ".kube", "config"), string(kubeconfig), 0o600); err != nil {
		return Command{}, err
	}
	l, r, p := k.timings()
	return Command{
		Path: k.Path,
		Args: []string{"manager"},
		Env: []string{
			"HOME=" + dir,
			"vip_arp=true",
			"cp_enable=true",
			"cp_namespace=kube-system",
			"svc_enable=false",
			"vip_leaderelection=true",
			"vip_leasename=plndr-cp-lock",
			"vip_leaseduration=" + strconv.Itoa(l),
			"vip_renewdeadline=" + strconv.Itoa(r),
			"vip_retryperiod=" + strconv.Itoa(p),
			"vip_interface=" + n.Interface,
			"address=" + c.VIP.String(),
			"port=6443",
			"vip_nodename=" + n.Name,
			"prometheus_server=127.0.0.1:2112",
		},
	}, nil
}

// Previous implements Rollable. Only one release is built here, so the roll restarts
// the same one node by node: what any DaemonSet roll costs it.
func (k KubeVIP) Previous(c Cluster, i int, dir string) (Command, error) { return k.Prepare(c, i, dir) }
