// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package sut

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
)

func testCluster(t *testing.T, iface string) Cluster {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Cluster{VIP: netip.MustParseAddr("198.18.0.200")}
	for i, name := range []string{"n1", "n2", "n3"} {
		c.Nodes = append(c.Nodes, Node{
			Name: name, IP: netip.AddrFrom4([4]byte{198, 18, 0, byte(11 + i)}),
			Interface: iface, Kubeconfig: kc,
		})
	}
	return c
}

// hostInterface returns a non-loopback interface of this machine, so that keepalived's
// configuration check finds it.
func hostInterface(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
			return i.Name
		}
	}
	t.Fatal("no non-loopback interface that is up")
	return ""
}

// TestKeepalivedConfigAccepted has keepalived itself check the rendered configurations.
func TestKeepalivedConfigAccepted(t *testing.T) {
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		t.Fatalf("keepalived not installed (hack/bench/ensure-keepalived.sh installs it): %v", err)
	}
	c := testCluster(t, hostInterface(t))
	for _, k := range []Keepalived{KeepalivedGuide(bin), KeepalivedTuned(bin, 200*time.Millisecond)} {
		t.Run(k.Variant, func(t *testing.T) {
			dir := t.TempDir()
			cmd, err := k.Prepare(c, 1, dir)
			if err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "keepalived.conf")
			if !slices.Contains(cmd.Args, "--use-file="+cfg) {
				t.Fatalf("args %v do not name %s", cmd.Args, cfg)
			}
			out, err := exec.Command(bin, "--config-test", "--use-file="+cfg).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				b, _ := os.ReadFile(cfg)
				t.Fatalf("keepalived --config-test: %v\n%s\nconfig:\n%s", err, out, b)
			}
		})
	}
}

func TestKeepalivedConfigShape(t *testing.T) {
	c := testCluster(t, "eth1")
	guide, err := KeepalivedGuide("").Config(c, 0, "/x/check.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"interval 3\n", "fall 10\n", "rise 2\n", "weight -2\n", "advert_int 1\n", "priority 101\n", "auth_type PASS", "198.18.0.200/32", "interface eth1\n", "state BACKUP\n"} {
		if !strings.Contains(guide, want) {
			t.Errorf("guide config lacks %q:\n%s", want, guide)
		}
	}
	tuned, err := KeepalivedTuned("", 300*time.Millisecond).Config(c, 2, "/x/check.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"interval 1\n", "fall 2\n", "advert_int 0.3\n", "version 3\n", "priority 100\n", "garp_master_delay 1\n"} {
		if !strings.Contains(tuned, want) {
			t.Errorf("tuned config lacks %q:\n%s", want, tuned)
		}
	}
	if strings.Contains(guide, "garp_master_delay") {
		t.Errorf("guide config changes garp_master_delay:\n%s", guide)
	}
	if strings.Contains(tuned, "authentication") {
		t.Errorf("VRRPv3 config carries authentication:\n%s", tuned)
	}
	bad := KeepalivedTuned("", 5*time.Millisecond)
	if _, err := bad.Config(c, 0, "/x"); err == nil {
		t.Error("advert_int 5ms accepted")
	}
}

func TestKubeVIPTimings(t *testing.T) {
	for _, tc := range []struct {
		l, r, p int
		ok      bool
	}{
		{0, 0, 0, true}, // 5/3/1
		{3, 2, 1, true},
		{2, 1, 1, false}, // renew must exceed 1.2 x retry
		{2, 2, 1, false}, // lease must exceed renew
	} {
		err := KubeVIP{LeaseDuration: tc.l, RenewDeadline: tc.r, RetryPeriod: tc.p}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%d/%d/%d: err %v, want ok=%v", tc.l, tc.r, tc.p, err, tc.ok)
		}
	}
}

func TestKubeVIPPrepare(t *testing.T) {
	c := testCluster(t, "eth1")
	dir := t.TempDir()
	cmd, err := KubeVIP{Path: "/bin/kube-vip", Variant: "fast", LeaseDuration: 3, RenewDeadline: 2, RetryPeriod: 1}.Prepare(c, 2, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HOME=" + dir, "vip_nodename=n3", "address=198.18.0.200", "vip_interface=eth1", "vip_leaseduration=3", "vip_renewdeadline=2", "vip_retryperiod=1", "cp_enable=true", "vip_arp=true"} {
		if !slices.Contains(cmd.Env, want) {
			t.Errorf("env %v lacks %q", cmd.Env, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".kube", "config")); err != nil {
		t.Errorf("kubeconfig not placed in HOME: %v", err)
	}
	if len(cmd.Args) != 1 || cmd.Args[0] != "manager" {
		t.Errorf("args %v", cmd.Args)
	}
}

// TestKubeVIPDeployedPrepare: the row runs kube-vip with the DaemonSet's own environment.
func TestKubeVIPDeployedPrepare(t *testing.T) {
	c := testCluster(t, "eth0")
	dir := t.TempDir()
	cmd, err := KubeVIPDeployed{Path: "/bin/kube-vip"}.Prepare(c, 1, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmd.Args) != 1 || cmd.Args[0] != "manager" {
		t.Errorf("args = %q", cmd.Args)
	}
	for _, want := range []string{
		"HOME=" + dir, "vip_leasename=" + agentrollout.KubeVIPLeaseName, "vip_leaseduration=3", "vip_renewdeadline=2", "vip_retryperiod=1",
		"vip_nodename=n2", "vip_interface=eth0", "address=198.18.0.200", "cp_namespace=kube-system", "svc_enable=false",
	} {
		if !slices.Contains(cmd.Env, want) {
			t.Errorf("env %q lacks %s", cmd.Env, want)
		}
	}
}
