package nodes_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// capNetAdminRaw is CAP_NET_ADMIN (12) | CAP_NET_RAW (13).
const capNetAdminRaw = 1<<12 | 1<<13

// TestAgentDaemonSetOnRealNodes deploys the agent the way the controller does
// (agentrollout) onto the real cluster: kube-controller-manager's DaemonSet controller
// creates the pods, the scheduler binds them, each kubelet runs one as a container under
// containerd-shim-runc-v2, with exactly CAP_NET_ADMIN and CAP_NET_RAW effective, and one
// of them puts the VIP on its node.
func TestAgentDaemonSetOnRealNodes(t *testing.T) {
	framework.RequireRoot(t)
	if _, err := exec.LookPath("containerd"); err != nil {
		framework.Unavailable(t, "containerd is not installed (hack/install-deps.sh): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := nodes.New(ctx, nodes.Options{Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer closeCluster(t, c)
	t.Logf("bring-up took %s: %+v", time.Since(start).Round(time.Millisecond), c.BringUp)

	cl, err := client.New(c.Net().Nodes()[0].RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := agentrollout.Spec{Namespace: "kube-system", Image: c.ImageRef("kube-vip-agent"), VIP: c.Net().VIP().String(), Interface: "eth0"}
	if err := agentrollout.New(cl).Deploy(ctx, spec); err != nil {
		t.Fatal(err)
	}
	deployed := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := c.Client().AppsV1().DaemonSets(spec.Namespace).Get(ctx, agentrollout.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		return dsReady(ds, len(c.Nodes())), nil
	}); err != nil {
		t.Fatalf("DaemonSet not 3/3 ready: %v", err)
	}
	t.Logf("DaemonSet %d/%d ready %s after the deploy", len(c.Nodes()), len(c.Nodes()), time.Since(deployed).Round(time.Millisecond))
	holder, err := c.Net().WaitSingleHolder(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VIP on %s", holder.Name())

	for _, n := range c.Nodes() {
		agents, err := n.Processes("kube-vip-agent")
		if err != nil {
			t.Fatal(err)
		}
		if len(agents) != 1 {
			t.Fatalf("%s runs %d agent processes, want 1", n.Name(), len(agents))
		}
		a := agents[0]
		parent, err := nodes.ReadProcStatus(a.PPID)
		if err != nil {
			t.Fatal(err)
		}
		if parent.Name != "containerd-shim" { // comm of containerd-shim-runc-v2, cut at 15
			t.Errorf("%s: the agent's parent is %q, want containerd-shim-runc-v2", n.Name(), parent.Name)
		}
		if a.CapEff != capNetAdminRaw {
			t.Errorf("%s: agent CapEff %#x, want exactly NET_ADMIN|NET_RAW (%#x)", n.Name(), a.CapEff, capNetAdminRaw)
		}
	}
	mem, err := c.Memory()
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for n, b := range mem {
		t.Logf("memory %s: %d MiB", n, b>>20)
		total += b
	}
	t.Logf("memory total: %d MiB", total>>20)
}

func dsReady(ds *appsv1.DaemonSet, want int) bool {
	s := ds.Status
	return s.ObservedGeneration == ds.Generation && int(s.DesiredNumberScheduled) == want &&
		int(s.NumberReady) == want && int(s.UpdatedNumberScheduled) == want
}

// closeCluster closes the cluster and fails the test for anything left behind.
func closeCluster(t *testing.T, c *nodes.Cluster) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("closing the cluster: %v", err)
	}
	if left := c.Leftovers(); len(left) > 0 {
		t.Errorf("left behind after Close: %q", left)
	}
}

// cancelAt is a log sink that cancels a context when a message names the phase.
type cancelAt struct {
	phase  string
	cancel context.CancelFunc
}

func (s *cancelAt) Init(logr.RuntimeInfo)          {}
func (s *cancelAt) Enabled(int) bool               { return true }
func (s *cancelAt) Error(error, string, ...any)    {}
func (s *cancelAt) WithValues(...any) logr.LogSink { return s }
func (s *cancelAt) WithName(string) logr.LogSink   { return s }
func (s *cancelAt) Info(_ int, _ string, kv ...any) {
	for _, v := range kv {
		if v == s.phase {
			s.cancel()
		}
	}
}

// TestFailedBringUpLeavesNothing cancels the bring-up once containerd runs and its images
// are imported on every node, while the kubelets start: New fails, and what it had
// created (namespaces, processes, mounts, cgroups, sysctls) is gone.
func TestFailedBringUpLeavesNothing(t *testing.T) {
	framework.RequireRoot(t)
	if _, err := exec.LookPath("containerd"); err != nil {
		framework.Unavailable(t, "containerd is not installed (hack/install-deps.sh): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := nodes.New(ctx, nodes.Options{Log: logr.New(&cancelAt{phase: "containerd and images imported", cancel: cancel})})
	if err == nil {
		closeCluster(t, c)
		t.Fatal("New succeeded although its context was cancelled during the bring-up")
	}
	t.Logf("New failed as it should: %v", err)
	if c == nil {
		t.Fatal("New returned no cluster to check")
	}
	if left := c.Leftovers(); len(left) > 0 {
		t.Errorf("left behind after a failed bring-up: %q", left)
	}
}
