// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://198.18.0.1:6443
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
users:
- name: u
  user:
    token: t
`

// parse parses args with the command's flags and completes the options like RunE does.
func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)

	opts := NewOptions()
	ctrls := &controllers{opts: opts}
	opts.Switches = ctrls.switchOptions()
	agg := opts.aggregator()
	cmd := NewControllerManagerCommand(context.Background())
	cmd.ResetFlags()
	agg.AddFlags(cmd.Flags())
	if err := cmd.ParseFlags(args); err != nil {
		return nil, err
	}
	if err := agg.Complete(); err != nil {
		return nil, err
	}
	return opts, opts.Heartbeat.Validate()
}

func TestDefaults(t *testing.T) {
	opts, err := parse(t, "--agent-image=registry.example/kube-vip-agent:v1", "--heartbeat-namespace=extension-kube-vip")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	ext := opts.Extension.Completed()
	if ext.Type != "kube-vip" || ext.VerifyInterval != 5*time.Minute || ext.AgentImage != "registry.example/kube-vip-agent:v1" {
		t.Errorf("extension config = %+v", ext)
	}
	if got := opts.Exposure.Completed().MaxConcurrentReconciles; got != 5 {
		t.Errorf("exposure concurrency = %d, want 5", got)
	}
	if !opts.Manager.Completed().LeaderElection || opts.Manager.Completed().LeaderElectionID != "kube-vip-leader-election" {
		t.Errorf("leader election = %v %q", opts.Manager.Completed().LeaderElection, opts.Manager.Completed().LeaderElectionID)
	}
	if opts.General.Completed().SelfHostedShootCluster {
		t.Error("self-hosted shoot cluster on by default")
	}
	if opts.Reconciler.Completed().IgnoreOperationAnnotation {
		t.Error("ignore-operation-annotation on by default")
	}
}

func TestFlags(t *testing.T) {
	opts, err := parse(t,
		"--agent-image=a:b",
		"--extension-type=kube-vip-test",
		"--verify-interval=90s",
		"--selfhostedshootexposure-max-concurrent-reconciles=7",
		"--nodes-max-concurrent-reconciles=2",
		"--heartbeat-namespace=ns1",
		"--heartbeat-renew-interval-seconds=12",
		"--ignore-operation-annotation=true",
		"--self-hosted-shoot-cluster=true",
		"--extension-classes=shoot",
		"--disable-controllers=kube-vip-nodes",
		"--metrics-bind-address=:9090",
		"--health-bind-address=:9091",
	)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if ext := opts.Extension.Completed(); ext.Type != "kube-vip-test" || ext.VerifyInterval != 90*time.Second || ext.AgentImage != "a:b" {
		t.Errorf("extension config = %+v", ext)
	}
	if opts.Exposure.Completed().MaxConcurrentReconciles != 7 || opts.Nodes.Completed().MaxConcurrentReconciles != 2 {
		t.Errorf("concurrency = %d/%d", opts.Exposure.Completed().MaxConcurrentReconciles, opts.Nodes.Completed().MaxConcurrentReconciles)
	}
	if hb := opts.Heartbeat.Completed(); hb.Namespace != "ns1" || hb.RenewIntervalSeconds != 12 || hb.ExtensionName != ExtensionName {
		t.Errorf("heartbeat = %+v", hb)
	}
	if !opts.Reconciler.Completed().IgnoreOperationAnnotation || !opts.General.Completed().SelfHostedShootCluster {
		t.Error("ignore-operation-annotation or self-hosted-shoot-cluster not taken")
	}
	if classes := opts.General.Completed().ExtensionClasses; len(classes) != 1 || classes[0] != "shoot" {
		t.Errorf("extension classes = %v", classes)
	}
	if m := opts.Manager.Completed(); m.MetricsBindAddress != ":9090" || m.HealthBindAddress != ":9091" {
		t.Errorf("addresses = %q %q", m.MetricsBindAddress, m.HealthBindAddress)
	}
}

func TestAgentImageFromImageVector(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	overwrite := filepath.Join(t.TempDir(), "images_overwrite.yaml")
	if err := os.WriteFile(overwrite, []byte("images:\n- name: kube-vip-agent\n  repository: registry.example/mirror/kube-vip-agent\n  tag: "+digest+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		overwrite string
		args      []string
		want      string
	}{
		"embedded vector":          {want: "ghcr.io/gardener-extension-kube-vip/kube-vip-agent:v0.1.0"},
		"overwrite with a digest":  {overwrite: overwrite, want: "registry.example/mirror/kube-vip-agent@" + digest},
		"flag beats the overwrite": {overwrite: overwrite, args: []string{"--agent-image=a:b"}, want: "a:b"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("IMAGEVECTOR_OVERWRITE", tc.overwrite)
			opts, err := parse(t, tc.args...)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := opts.Extension.Completed().AgentImage; got != tc.want {
				t.Errorf("agent image = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("unreadable overwrite", func(t *testing.T) {
		t.Setenv("IMAGEVECTOR_OVERWRITE", filepath.Join(t.TempDir(), "missing.yaml"))
		if _, err := parse(t); err == nil || !strings.Contains(err.Error(), "image vector") {
			t.Fatalf("error = %v, want one about the image vector", err)
		}
	})
}

func TestInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"empty type":              {args: []string{"--agent-image=a", "--extension-type="}, want: "--extension-type"},
		"zero verify interval":    {args: []string{"--agent-image=a", "--verify-interval=0s"}, want: "--verify-interval"},
		"unknown controller":      {args: []string{"--agent-image=a", "--disable-controllers=nope"}, want: "nope"},
		"bad heartbeat interval":  {args: []string{"--agent-image=a", "--heartbeat-renew-interval-seconds=0"}, want: "heartbeat"},
		"unknown flag is refused": {args: []string{"--agent-image=a", "--agentimage=b"}, want: "agentimage"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestManagerOptionsLimitCache(t *testing.T) {
	t.Setenv(leaderElectionNamespaceEnv, "extension-kube-vip")
	opts, err := parse(t, "--agent-image=a", "--heartbeat-namespace=hb")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	mgrOpts, err := ManagerOptions(opts)
	if err != nil {
		t.Fatalf("ManagerOptions: %v", err)
	}
	if _, ok := mgrOpts.Cache.DefaultNamespaces[metav1.NamespaceSystem]; !ok || len(mgrOpts.Cache.DefaultNamespaces) != 1 {
		t.Errorf("cache namespaces = %v, want only kube-system", mgrOpts.Cache.DefaultNamespaces)
	}
	var leaseNamespaces []string
	for obj, byObject := range mgrOpts.Cache.ByObject {
		if _, ok := obj.(*coordinationv1.Lease); ok {
			for ns := range byObject.Namespaces {
				leaseNamespaces = append(leaseNamespaces, ns)
			}
		}
	}
	for _, want := range []string{metav1.NamespaceSystem, "extension-kube-vip", "hb"} {
		found := false
		for _, ns := range leaseNamespaces {
			found = found || ns == want
		}
		if !found {
			t.Errorf("Lease cache namespaces %v miss %q", leaseNamespaces, want)
		}
	}
	if !mgrOpts.LeaderElection || mgrOpts.LeaderElectionNamespace != "extension-kube-vip" {
		t.Errorf("leader election %v in %q", mgrOpts.LeaderElection, mgrOpts.LeaderElectionNamespace)
	}
	for _, gvk := range []struct{ group, kind string }{
		{"extensions.gardener.cloud", "SelfHostedShootExposure"},
		{"extensions.gardener.cloud", "Cluster"},
		{"kube-vip.extensions.gardener.cloud", "ExposureConfig"},
		{"apps", "DaemonSet"},
	} {
		found := false
		for k := range mgrOpts.Scheme.AllKnownTypes() {
			found = found || (k.Group == gvk.group && k.Kind == gvk.kind)
		}
		if !found {
			t.Errorf("scheme misses %s/%s", gvk.group, gvk.kind)
		}
	}
}
