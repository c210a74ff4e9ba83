// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener/pkg/utils/kubernetes/health"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// usersKubeVIPMetricsPort is where a user's kube-vip from its chart serves its metrics: the
// chart sets no prometheus_server, so kube-vip's default, every address of the node.
const usersKubeVIPMetricsPort = 2112

// kubeVIPImage is upstream kube-vip's image, built and loaded into every node once for the
// package's tests.
var kubeVIPImage string

// loadKubeVIPTimeout bounds building kube-vip from the module proxy and loading its image:
// on a cold 2-core machine the build alone took 5 to 6.5 minutes.
const loadKubeVIPTimeout = 15 * time.Minute

// loadKubeVIP builds and loads upstream kube-vip's image once, under a deadline of its own:
// a scenario starts its clock after it, so that a cold build does not eat the scenario's time.
func loadKubeVIP(t *testing.T) string {
	t.Helper()
	if kubeVIPImage == "" {
		ctx, cancel := context.WithTimeout(context.Background(), loadKubeVIPTimeout)
		defer cancel()
		ref, err := cluster.LoadKubeVIP(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kube-vip image %s loaded into every node", ref)
		kubeVIPImage = ref
	}
	return kubeVIPImage
}

// usersKubeVIP is a user's own upstream kube-vip release in kube-system, services mode, as
// its Helm chart installs it (framework.UsersKubeVIP), running on every node.
type usersKubeVIP struct {
	objs []client.Object
	// selector selects the DaemonSet's pods.
	selector string
	// pods are the DaemonSet's pods by node, as they ran after the install.
	pods map[string]*corev1.Pod
}

// installUsersKubeVIP installs a user's kube-vip and waits until it runs on every node and
// serves its metrics there; the test's cleanup removes it and waits for its pods to end.
// Its container reaches the node's own kube-apiserver as the extension's kube-vip does: the
// nodes run no kube-proxy for the kubernetes Service.
func installUsersKubeVIP(t *testing.T, ctx context.Context, apiServerPort int32) *usersKubeVIP {
	t.Helper()
	objs := framework.UsersKubeVIP(loadKubeVIP(t),
		corev1.EnvVar{Name: "vip_interface", Value: netns.Interface},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(int(apiServerPort))})
	u := &usersKubeVIP{selector: metav1.FormatLabelSelector(objs[len(objs)-1].(*appsv1.DaemonSet).Spec.Selector)}
	t.Cleanup(func() { u.remove(t) })
	for _, o := range objs {
		if err := ext.Client.Create(ctx, o); err != nil {
			t.Fatalf("installing the user's %T %s: %v", o, o.GetName(), err)
		}
		u.objs = append(u.objs, o)
	}
	want := len(cluster.Nodes())
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := u.podsByNode(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		u.pods = pods
		return len(pods) == want && !slices.ContainsFunc(slices.Collect(maps.Values(pods)), func(p *corev1.Pod) bool { return !health.IsPodReady(p) }), nil
	}); err != nil {
		t.Fatalf("the user's kube-vip is not Ready on %d nodes: %v; its pods: %s", want, err, u.report(ctx))
	}
	u.serving(t, ctx, "after the install")
	return u
}

// check fails unless every object of the user's release keeps its UID and is not being
// deleted, the pods that ran after the install still run, Ready and never restarted, and
// each node's serves the user's metrics.
func (u *usersKubeVIP) check(t *testing.T, ctx context.Context, step string) {
	t.Helper()
	for _, want := range u.objs {
		got := want.DeepCopyObject().(client.Object)
		if err := ext.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			t.Errorf("%s: the user's %T %s: %v", step, want, want.GetName(), err)
			continue
		}
		if got.GetUID() != want.GetUID() || got.GetDeletionTimestamp() != nil {
			t.Errorf("%s: the user's %T %s was replaced or is being deleted: uid %s (was %s), deleting %v", step, want, want.GetName(), got.GetUID(), want.GetUID(), got.GetDeletionTimestamp())
		}
	}
	pods, err := u.podsByNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for node, was := range u.pods {
		now, ok := pods[node]
		switch {
		case !ok:
			t.Errorf("%s: the user's kube-vip pod %s on %s is gone", step, was.Name, node)
		case now.UID != was.UID:
			t.Errorf("%s: the user's kube-vip pod on %s was replaced: %s, was %s", step, node, now.Name, was.Name)
		case !health.IsPodReady(now) || restarts(now) != restarts(was):
			t.Errorf("%s: the user's kube-vip pod %s on %s: ready %v, %d restarts (%d after the install)", step, now.Name, node, health.IsPodReady(now), restarts(now), restarts(was))
		}
	}
	u.serving(t, ctx, step)
}

// serving fails unless every node answers on its own address at the user's metrics port
// (the extension's kube-vip listens on loopback only, so the answer is the user's).
func (u *usersKubeVIP) serving(t *testing.T, ctx context.Context, step string) {
	t.Helper()
	for _, n := range cluster.Net().Nodes() {
		url := "http://" + netip.AddrPortFrom(n.IP(), usersKubeVIPMetricsPort).String() + "/metrics"
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			last = netns.GetOK(ctx, n.HTTPClient(2*time.Second, nil), url)
			return last == nil, nil
		}); err != nil {
			t.Errorf("%s: the user's kube-vip on %s does not serve its metrics at %s: %v; its log:\n%s", step, n, url, last, u.log(ctx, n.Name()))
		}
	}
}

// podsByNode lists the user's kube-vip pods by the node they run on.
func (u *usersKubeVIP) podsByNode(ctx context.Context) (map[string]*corev1.Pod, error) {
	list, err := cluster.Client().CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: u.selector})
	if err != nil {
		return nil, err
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		if p := &list.Items[i]; p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = p
		}
	}
	return out, nil
}

// report is each of the user's kube-vip pods' node, phase, restarts, waiting reason and
// the end of its log, for failure messages.
func (u *usersKubeVIP) report(ctx context.Context) string {
	list, err := cluster.Client().CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: u.selector})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range list.Items {
		waiting := ""
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil {
				waiting = s.State.Waiting.Reason + ": " + s.State.Waiting.Message
			}
		}
		fmt.Fprintf(&b, "\n%s on %q: %s, ready %v, %d restarts %s\n%s", p.Name, p.Spec.NodeName, p.Status.Phase, health.IsPodReady(&p), restarts(&p), waiting, logOf(ctx, &p))
	}
	return b.String()
}

// log is the end of the log of the user's kube-vip container on node, for failure messages.
func (u *usersKubeVIP) log(ctx context.Context, node string) string {
	pods, err := u.podsByNode(ctx)
	if err != nil || pods[node] == nil {
		return fmt.Sprintf("(no pod: %v)", err)
	}
	return logOf(ctx, pods[node])
}

// logOf is the end of the log of the user's kube-vip container in p.
func logOf(ctx context.Context, p *corev1.Pod) string {
	out, err := cluster.ContainerLog(ctx, p, framework.UsersKubeVIPName, 4096)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return out
}

// remove deletes the user's release, the DaemonSet first as helm uninstall does, and waits
// until its pods are gone, so that the next scenario's nodes run only the extension's agents.
func (u *usersKubeVIP) remove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, o := range slices.Backward(u.objs) {
		if err := ext.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing the user's %T %s: %v", o, o.GetName(), err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cluster.Client().CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: u.selector})
		return err == nil && len(list.Items) == 0, nil
	}); err != nil {
		t.Errorf("the user's kube-vip pods did not end: %v", err)
	}
}
