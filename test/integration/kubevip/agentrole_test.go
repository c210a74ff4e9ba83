// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package kubevip_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/test/integration/agent"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// serviceAccountKubeconfigs writes, per node, the node's kubeconfig with a token of the
// ServiceAccount sa instead of the admin's certificate: the agent then runs under exactly
// its Role, as in its pod.
func serviceAccountKubeconfigs(ctx context.Context, t *testing.T, cs kubernetes.Interface, h *netns.Harness, sa string) func(*netns.Node) string {
	t.Helper()
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of ServiceAccount %s: %v", sa, err)
	}
	paths := map[string]string{}
	for _, n := range h.Nodes() {
		cfg, err := clientcmd.LoadFromFile(n.Kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{sa: {Token: tr.Status.Token}}
		for _, kctx := range cfg.Contexts {
			kctx.AuthInfo = sa
		}
		path := filepath.Join(h.Dir(), n.Name()+"-"+sa+".kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		paths[n.Name()] = path
	}
	return func(n *netns.Node) string { return paths[n.Name()] }
}

// TestAgentUnderItsRole runs kube-vip-agent with a token of its ServiceAccount, so under
// exactly the Role that agentrollout deploys (get, watch, update on its own Lease; no
// create): it elects a leader on the Lease the controller created; when somebody deletes
// the Lease, the agents wait without crashing, the controller's next deploy (which the agent
// refresh starts on Deployer.Status's ErrLeaseMissing) creates it again, and a leader is
// elected on it.
func TestAgentUnderItsRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h, c, cs, d := deployOnNewHarness(ctx, t, oursSpec)
	created := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: agentrollout.LeaseName}, created); err != nil {
		t.Fatalf("Deploy created no Lease: %v", err)
	}
	ac := agent.NewCluster(h, agentBin)
	ac.Kubeconfig = serviceAccountKubeconfigs(ctx, t, cs, h, agentrollout.Name)
	if err := ac.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	stableCtx, stableCancel := context.WithTimeout(ctx, 30*time.Second)
	leader, err := ac.WaitStable(stableCtx, time.Second)
	stableCancel()
	if err != nil {
		t.Fatalf("no leader on the controller's Lease: %v", err)
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: agentrollout.LeaseName}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.UID != created.UID {
		t.Errorf("the agents elected on another Lease (uid %s) than the controller created (uid %s)", lease.UID, created.UID)
	}
	t.Logf("leader on the controller's Lease: %s", leader)

	// Somebody deletes the Lease. Nobody may create it but the controller, so the leader's
	// renewals fail and it drops the VIP; nobody takes over.
	deleted := time.Now()
	if err := c.Delete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	waitNoHolder(t, h, deleted, "the VIP stays without a Lease")
	t.Logf("without its Lease the leader dropped the VIP after %s", time.Since(deleted).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	if _, err := cs.CoordinationV1().Leases(namespace).Get(ctx, agentrollout.LeaseName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("an agent created the Lease again (or reading it failed): %v", err)
	}
	for _, n := range h.Nodes() {
		if p := ac.Agent(n); p.Exited() {
			t.Errorf("the agent on %s exited without its Lease (see %s)", n, p.LogPath())
		}
	}

	// The controller's next agent refresh finds it missing and reconciles; the deploy step
	// creates it again, and the agents elect on it.
	if _, err := d.Status(ctx, namespace); !errors.Is(err, agentrollout.ErrLeaseMissing) {
		t.Fatalf("Status without the Lease: %v, want ErrLeaseMissing", err)
	}
	if err := d.Deploy(ctx, oursSpec(h)); err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	recreated := time.Now()
	stableCtx, stableCancel = context.WithTimeout(ctx, 30*time.Second)
	next, err := ac.WaitStable(stableCtx, time.Second)
	stableCancel()
	if err != nil {
		t.Fatalf("no leader after the controller re-created the Lease: %v", err)
	}
	t.Logf("leader %s on the re-created Lease %s after it came back", next, time.Since(recreated).Round(time.Millisecond))

	for _, n := range h.Nodes() {
		data, err := os.ReadFile(ac.Agent(n).LogPath())
		if err != nil {
			t.Fatal(err)
		}
		// The only request RBAC refuses is the create of the missing Lease.
		refusedCreates := 0
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(strings.ToLower(line), "forbidden") {
				continue
			}
			if strings.Contains(line, "cannot create resource") && strings.Contains(line, "leases") {
				refusedCreates++
				continue
			}
			t.Errorf("the agent on %s was refused something other than creating the Lease: %s", n, line)
		}
		t.Logf("the agent on %s logged %d refused creates of the missing Lease", n, refusedCreates)
	}
}
