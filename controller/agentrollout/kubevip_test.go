// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package agentrollout

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestKubeVIPTimings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent *v1alpha1.AgentConfig
		want  KubeVIPTimings
	}{
		{"unset: 3/2/1", nil, KubeVIPTimings{3, 2, 1}},
		{"whole seconds kept", &v1alpha1.AgentConfig{LeaseDuration: dur(5 * time.Second), RenewDeadline: dur(3 * time.Second), RetryPeriod: dur(time.Second)}, KubeVIPTimings{5, 3, 1}},
		{"rounded up", &v1alpha1.AgentConfig{LeaseDuration: dur(4200 * time.Millisecond), RenewDeadline: dur(2100 * time.Millisecond), RetryPeriod: dur(300 * time.Millisecond)}, KubeVIPTimings{5, 3, 1}},
		{"renew raised above 1.2 x retry", &v1alpha1.AgentConfig{LeaseDuration: dur(20 * time.Second), RenewDeadline: dur(5500 * time.Millisecond), RetryPeriod: dur(5 * time.Second)}, KubeVIPTimings{20, 7, 5}},
		{"lease raised above renew", &v1alpha1.AgentConfig{LeaseDuration: dur(2500 * time.Millisecond), RenewDeadline: dur(2100 * time.Millisecond), RetryPeriod: dur(time.Second)}, KubeVIPTimings{4, 3, 1}},
	} {
		if got := kubeVIPTimings(Spec{Agent: tc.agent}); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// Whatever the input, the result satisfies client-go's leader election and is never
	// shorter than asked.
	for lease := 100 * time.Millisecond; lease <= 12*time.Second; lease += 700 * time.Millisecond {
		for renew := 100 * time.Millisecond; renew < lease; renew += 300 * time.Millisecond {
			for retry := 100 * time.Millisecond; retry < renew; retry += 500 * time.Millisecond {
				got := kubeVIPTimings(Spec{Agent: &v1alpha1.AgentConfig{LeaseDuration: dur(lease), RenewDeadline: dur(renew), RetryPeriod: dur(retry)}})
				l, r, p := time.Duration(got.LeaseDuration)*time.Second, time.Duration(got.RenewDeadline)*time.Second, time.Duration(got.RetryPeriod)*time.Second
				if l <= r || float64(r) <= 1.2*float64(p) || p <= 0 {
					t.Fatalf("%s/%s/%s -> %+v breaks lease > renew > 1.2 x retry > 0", lease, renew, retry, got)
				}
				if l < lease || r < renew || p < retry {
					t.Fatalf("%s/%s/%s -> %+v is shorter than asked", lease, renew, retry, got)
				}
			}
		}
	}
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			out[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
			continue
		}
		out[e.Name] = e.Value
	}
	return out
}

func TestKubeVIPDaemonSet(t *testing.T) {
	spec := Spec{
		Namespace: "kube-system", Implementation: v1alpha1.AgentImplementationKubeVIP, Image: "ghcr.io/kube-vip/kube-vip:v1.0.0",
		VIP: "198.18.0.50", APIServerPort: 443, Agent: &v1alpha1.AgentConfig{Interface: ptr.To("eth1")},
	}
	ds, err := RenderDaemonSet(spec)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != KubeVIPName || ds.Spec.Template.Spec.ServiceAccountName != KubeVIPName || !ds.Spec.Template.Spec.HostNetwork {
		t.Fatalf("name=%q serviceAccount=%q hostNetwork=%v", ds.Name, ds.Spec.Template.Spec.ServiceAccountName, ds.Spec.Template.Spec.HostNetwork)
	}
	if ds.Spec.Selector.MatchLabels[LabelAppName] != KubeVIPName {
		t.Errorf("selector = %v: it must not select kube-vip-agent's pods", ds.Spec.Selector.MatchLabels)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if c.Image != spec.Image || len(c.Args) != 1 || c.Args[0] != "manager" || len(c.Command) != 0 {
		t.Errorf("image=%q command=%q args=%q", c.Image, c.Command, c.Args)
	}
	want := map[string]string{
		"vip_arp": "true", "vip_arpRate": "1000", "cp_enable": "true", "cp_namespace": "kube-system", "svc_enable": "false",
		"vip_leaderelection": "true", "vip_leasename": KubeVIPLeaseName,
		"vip_leaseduration": "3", "vip_renewdeadline": "2", "vip_retryperiod": "1",
		"address": "198.18.0.50", "port": "443", "vip_interface": "eth1",
		"vip_nodename": "fieldRef:spec.nodeName", "prometheus_server": "127.0.0.1:9483",
		"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "443",
	}
	got := envOf(c)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env %s=%q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("env = %v, want exactly %v", got, want)
	}
	sc := c.SecurityContext
	if sc == nil || len(sc.Capabilities.Add) != 2 || sc.Capabilities.Add[0] != "NET_ADMIN" || sc.Capabilities.Add[1] != "NET_RAW" || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || ptr.Deref(sc.Privileged, true) {
		t.Errorf("security context = %+v", sc)
	}

	// Without an interface, kube-vip picks it (the default route's); port defaults.
	spec.Agent, spec.APIServerPort = nil, 0
	ds, err = RenderDaemonSet(spec)
	if err != nil {
		t.Fatal(err)
	}
	got = envOf(ds.Spec.Template.Spec.Containers[0])
	if _, ok := got["vip_interface"]; ok || got["KUBERNETES_SERVICE_PORT"] != "6443" || got["port"] != "6443" {
		t.Errorf("env without interface and port = %v", got)
	}
}

func TestValidateImplementation(t *testing.T) {
	root := field.NewPath("agent")
	kubeVIP := ptr.To(v1alpha1.AgentImplementationKubeVIP)
	for _, tc := range []struct {
		name  string
		agent *v1alpha1.AgentConfig
		want  []string
	}{
		{"nil", nil, nil},
		{"default with timings", &v1alpha1.AgentConfig{VIPLifetime: dur(2 * time.Second)}, nil},
		{"unknown", &v1alpha1.AgentConfig{Implementation: ptr.To(v1alpha1.AgentImplementation("keepalived"))}, []string{"agent.implementation"}},
		{"image on kube-vip-agent", &v1alpha1.AgentConfig{Image: ptr.To("x")}, []string{"agent.image"}},
		{"kube-vip with its settings", &v1alpha1.AgentConfig{Implementation: kubeVIP, Image: ptr.To("x"), Interface: ptr.To("eth0"), LeaseDuration: dur(5 * time.Second)}, nil},
		{"kube-vip with ours only", &v1alpha1.AgentConfig{Implementation: kubeVIP, VIPLifetime: dur(time.Second), ARPInterval: dur(time.Second), HealthCheck: &v1alpha1.HealthCheck{}},
			[]string{"agent.vipLifetime", "agent.arpInterval", "agent.healthCheck"}},
		{"kube-vip timings out of order", &v1alpha1.AgentConfig{Implementation: kubeVIP, LeaseDuration: dur(2 * time.Second), RenewDeadline: dur(3 * time.Second), RetryPeriod: dur(3 * time.Second)},
			[]string{"agent.leaseDuration", "agent.renewDeadline"}},
		{"kube-vip empty image", &v1alpha1.AgentConfig{Implementation: kubeVIP, Image: ptr.To("")}, []string{"agent.image"}},
	} {
		errs := ValidateImplementation(tc.agent, root)
		var got []string
		for _, e := range errs {
			got = append(got, e.Field)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: errors %v, want fields %v", tc.name, errs, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: errors %v, want fields %v", tc.name, errs, tc.want)
			}
		}
	}
}

// agentPod is a running kube-vip-agent pod in ns.
func agentPod(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-vip-agent-abcde", Namespace: ns, Labels: kubeVIPAgentNames().labels()},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: Name, Image: "agent"}}},
	}
}

// TestDeployWaitsForTheOldPodsToStop: a pod of the old implementation that goes away while
// Deploy waits lets the same Deploy call write the new DaemonSet, within a tick or two of
// its removal, rather than at a requeue.
func TestDeployWaitsForTheOldPodsToStop(t *testing.T) {
	ctx := context.Background()
	ns := "kube-system"
	running := agentPod(ns)
	c := fake.NewClientBuilder().WithObjects(running).Build()
	const stopsAfter = 500 * time.Millisecond
	removed := make(chan time.Time, 1)
	go func() {
		time.Sleep(stopsAfter)
		if err := c.Delete(ctx, running); err != nil {
			t.Error(err)
		}
		removed <- time.Now()
	}()

	err := New(c).Deploy(ctx, Spec{Namespace: ns, Implementation: v1alpha1.AgentImplementationKubeVIP, Image: "kube-vip:v1.0.0", VIP: "198.18.0.50"})
	returned := time.Now()
	if err != nil {
		t.Fatalf("Deploy while the old pod stops within the handover wait = %v, want nil", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: KubeVIPName}, &appsv1.DaemonSet{}); err != nil {
		t.Fatalf("the kube-vip DaemonSet: %v", err)
	}
	if lag := returned.Sub(<-removed); lag > 2*HandoverTick {
		t.Errorf("Deploy wrote the new DaemonSet %s after the old pod was gone, want at most %s", lag, 2*HandoverTick)
	}
}

// TestDeployHandsOver: the new implementation's DaemonSet is written only when no pod of
// the old one is left.
func TestDeployHandsOver(t *testing.T) {
	ctx := context.Background()
	ns := "kube-system"
	running := agentPod(ns)
	deletes := 0
	c := fake.NewClientBuilder().WithObjects(running).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			deletes++
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	d := New(c).WithHandoverWait(3 * HandoverTick)
	spec := Spec{Namespace: ns, Implementation: v1alpha1.AgentImplementationKubeVIP, Image: "kube-vip:v1.0.0", VIP: "198.18.0.50"}

	err := d.Deploy(ctx, spec)
	var requeue *reconcilerutils.RequeueAfterError
	if !errors.As(err, &requeue) || requeue.RequeueAfter != HandoverPoll {
		t.Fatalf("Deploy while a kube-vip-agent pod runs = %v, want a requeue after %s", err, HandoverPoll)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: KubeVIPName}, &appsv1.DaemonSet{}); err == nil {
		t.Fatal("the kube-vip DaemonSet exists while a kube-vip-agent pod runs")
	}

	if err := c.Delete(ctx, running); err != nil {
		t.Fatal(err)
	}
	if err := d.Deploy(ctx, spec); err != nil {
		t.Fatalf("Deploy after the old pods are gone: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: KubeVIPName}, &appsv1.DaemonSet{}); err != nil {
		t.Fatalf("the kube-vip DaemonSet: %v", err)
	}
	// Once nothing of kube-vip-agent is left, a Deploy deletes nothing.
	deletes = 0
	if err := d.Deploy(ctx, spec); err != nil || deletes != 0 {
		t.Fatalf("Deploy after the handover = %v with %d deletions, want none", err, deletes)
	}
	status, err := d.Status(ctx, ns)
	if err != nil || status.LeaseHolder != "" {
		t.Fatalf("Status = %+v, %v", status, err)
	}
}
