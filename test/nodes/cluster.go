// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gardener/gardener-extension-kube-vip/hack/tools/imagebuild"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// ControlPlaneRole is the label and taint key gardenadm gives its control-plane nodes.
const ControlPlaneRole = "node-role.kubernetes.io/control-plane"

// sysctls are the host-wide (not per network namespace) settings a kubelet changes at
// start-up; the cluster puts the host's values back.
var sysctls = []string{"kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory"}

// hostDirs are the host paths containerd and the kubelet use whatever their configuration
// says: containerd 1.6 puts the shims' sockets into /run/containerd/s, the kubelet its
// device-plugin socket into /var/lib/kubelet/device-plugins and the container log links
// into /var/log/containers. The cluster removes those it created.
var hostDirs = []string{"/run/containerd", "/var/lib/kubelet", "/var/log/containers"}

// Options configure a cluster. The zero value of each field picks its default.
type Options struct {
	// Nodes is the number of control-plane nodes; default 3.
	Nodes int
	// Dir holds everything (logs, state, images); default a new temporary directory.
	Dir string
	// ImageVersion tags the images built for the cluster; default "dev".
	ImageVersion string
	// Prefix starts the names of the network namespaces; default "kvn-".
	Prefix string
	// Log receives progress messages; default discards.
	Log logr.Logger
	// NIC, if set, gives the nodes their LAN interface (netns.Options.NIC), e.g. Neutron
	// ports (test/dataplane).
	NIC netns.NIC
	// APIServerPort is the kube-apiservers' secure port (netns.Options.APIServerPort).
	APIServerPort uint16
	// Subnet6, if set, is the nodes' IPv6 subnet (netns.Options.Subnet6): the
	// kube-apiservers listen on IPv6 too, so that an IPv6 VIP is a front door.
	Subnet6 netip.Prefix
}

// Cluster is the running cluster.
type Cluster struct {
	opts   Options
	dir    string
	binDir string
	log    logr.Logger
	net    *netns.Harness
	images imagebuild.Config
	nodes  []*Node
	// departed are the nodes RemoveNode took out; Close cleans up after them too.
	departed []*Node
	kcm      *netns.Process
	sched    *netns.Process
	// controllersOn is the node kube-controller-manager and kube-scheduler run on.
	controllersOn *netns.Node
	saved         map[string]string
	made          []string // host directories that did not exist before New
	client        kubernetes.Interface

	// BringUp is how long New took, by phase.
	BringUp []Phase

	closeOnce sync.Once
	closeErr  error
}

// Phase is one step of the bring-up and how long it took.
type Phase struct {
	Name string
	Took time.Duration
}

// Node is one node: a namespace of the LAN with containerd and a kubelet.
type Node struct {
	*netns.Node
	dir        string
	cgroupRoot string
	containerd *daemon
	kubelet    *daemon
}

// Socket is the node's containerd socket.
func (n *Node) Socket() string { return filepath.Join(n.dir, "containerd.sock") }

// Net is the LAN and control plane underneath.
func (c *Cluster) Net() *netns.Harness { return c.net }

// Nodes are the cluster's nodes.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns the node of that name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.nodes {
		if n.Name() == name {
			return n
		}
	}
	return nil
}

// Client is an admin client of the cluster's kube-apiservers (netns.Harness.RESTConfig).
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// BinDir holds the kube binaries the cluster runs, and kubectl.
func (c *Cluster) BinDir() string { return c.binDir }

// Images is where the images were built and how they are named.
func (c *Cluster) Images() imagebuild.Config { return c.images }

// ImageRef is the reference of one of the project's images in the nodes' containerd.
func (c *Cluster) ImageRef(name string) string {
	for _, img := range imagebuild.Images {
		if img.Name == name {
			return c.images.Ref(img)
		}
	}
	return ""
}

// New builds the images, the LAN with the control plane, and starts containerd and a
// kubelet on every node, kube-controller-manager and kube-scheduler on the first, and
// returns when every node is Ready. On error the partly built cluster has been closed; it
// is returned (when anything was created) so that the caller can check its Leftovers.
func New(ctx context.Context, opts Options) (cl *Cluster, err error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.ImageVersion == "" {
		opts.ImageVersion = "dev"
	}
	if opts.Prefix == "" {
		opts.Prefix = "kvn-"
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	for _, tool := range []string{"containerd", "runc", "ctr", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is missing (hack/install-deps.sh installs it): %w", tool, err)
		}
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kvn-"); err != nil {
			return nil, fmt.Errorf("cluster directory: %w", err)
		}
	}
	c := &Cluster{opts: opts, dir: dir, log: opts.Log}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			cl = c
		}
	}()
	if c.saved, err = readSysctls(); err != nil {
		return nil, err
	}
	phase := func(name string, start time.Time) {
		c.BringUp = append(c.BringUp, Phase{Name: name, Took: time.Since(start)})
		c.log.Info("bring-up", "phase", name, "took", time.Since(start).Round(time.Millisecond))
	}

	start := time.Now()
	binDir, err := kubeBinaries(ctx, root)
	if err != nil {
		return nil, err
	}
	c.binDir = binDir
	phase("kube binaries", start)

	start = time.Now()
	c.images = imagebuild.Config{Root: root, Out: filepath.Join(dir, "images"), Registry: "localhost/kube-vip", Version: opts.ImageVersion, CABundle: "/etc/ssl/certs/ca-certificates.crt"}
	if err := imagebuild.BuildAll(ctx, c.images, imagebuild.Images); err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	phase("images", start)

	start = time.Now()
	if c.net, err = netns.New(ctx, netns.Options{Prefix: opts.Prefix, Nodes: opts.Nodes, ControlPlane: true, BinDir: binDir, Dir: filepath.Join(dir, "net"), Log: opts.Log, NIC: opts.NIC, APIServerPort: opts.APIServerPort, Subnet6: opts.Subnet6}); err != nil {
		return nil, err
	}
	phase("LAN, etcd and kube-apiserver", start)
	if c.client, err = kubernetes.NewForConfig(c.net.RESTConfig()); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}

	start = time.Now()
	for _, d := range hostDirs {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			c.made = append(c.made, d)
		}
	}
	for _, hn := range c.net.Nodes() {
		n := &Node{Node: hn, dir: filepath.Join(dir, hn.Name()), cgroupRoot: "/" + filepath.Base(dir) + "-" + hn.Name()}
		c.nodes = append(c.nodes, n)
		if err := c.startContainerd(ctx, n); err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name(), err)
		}
	}
	phase("containerd and images imported", start)

	start = time.Now()
	if err := c.startControllers(ctx, binDir); err != nil {
		return nil, err
	}
	for _, n := range c.nodes {
		if err := c.startKubelet(n, binDir); err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name(), err)
		}
	}
	if err := c.waitNodesReady(ctx); err != nil {
		return nil, err
	}
	// The kubelets have set their sysctls by now (they do it once, at start-up).
	if err := writeSysctls(c.saved); err != nil {
		return nil, err
	}
	phase("kubelets registered and Ready", start)
	return c, nil
}

func (c *Cluster) startContainerd(ctx context.Context, n *Node) error {
	for _, d := range []string{"root", "state", "runc", "cni", "pod-logs", "kubelet"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := makeCgroupRoot(n.cgroupRoot); err != nil {
		return err
	}
	// A loopback-only network makes the runtime report NetworkReady; the cluster's pods
	// use the host network, which never calls CNI.
	conflist := `{"cniVersion": "1.0.0", "name": "loopback", "plugins": [{"type": "loopback"}]}`
	if err := os.WriteFile(filepath.Join(n.dir, "cni", "10-loopback.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	var pause imagebuild.Image
	for _, img := range imagebuild.Images {
		if img.Name == "pause" {
			pause = img
		}
	}
	cfg := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = "%[3]s.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  # No CAP_SYS_RESOURCE on this machine kind: runc cannot lower oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[5]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[6]q
`, filepath.Join(n.dir, "root"), filepath.Join(n.dir, "state"), n.Socket(), c.images.Ref(pause), filepath.Join(n.dir, "runc"), filepath.Join(n.dir, "cni"))
	cfgPath := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	var err error
	if n.containerd, err = startDaemon("containerd", n.Namespace(), filepath.Join(n.dir, "containerd.log"), "containerd", "--config", cfgPath); err != nil {
		return err
	}
	if err := n.waitContainerd(ctx); err != nil {
		return err
	}
	for _, img := range imagebuild.Images {
		if err := n.ImportImage(ctx, c.images.Tarball(img)); err != nil {
			return err
		}
	}
	return nil
}

// LoadImage builds one of the project's images with another tag and imports it into
// every node's containerd; it returns the reference.
func (c *Cluster) LoadImage(ctx context.Context, name, version string) (string, error) {
	cfg := c.images
	cfg.Version = version
	cfg.Out = filepath.Join(c.images.Out, version)
	for _, img := range imagebuild.Images {
		if img.Name != name {
			continue
		}
		if err := imagebuild.BuildAll(ctx, cfg, []imagebuild.Image{img}); err != nil {
			return "", err
		}
		for _, n := range c.nodes {
			if err := n.ImportImage(ctx, cfg.Tarball(img)); err != nil {
				return "", fmt.Errorf("%s: %w", n.Name(), err)
			}
		}
		return cfg.Ref(img), nil
	}
	return "", fmt.Errorf("no image %s", name)
}

// ImportImage loads a docker-archive tarball into the node's containerd (namespace k8s.io).
func (n *Node) ImportImage(ctx context.Context, tarball string) error {
	if out, err := n.ctr(ctx, "images", "import", tarball); err != nil {
		return fmt.Errorf("importing %s: %w: %s", tarball, err, out)
	}
	return nil
}

func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", n.Socket(), "-n", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *Cluster) startControllers(ctx context.Context, binDir string) error {
	first := c.net.Nodes()[0]
	c.controllersOn = first
	kc := first.Kubeconfig()
	common := []string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc, "--bind-address=127.0.0.1", "--leader-elect=false", "--v=1"}
	var err error
	c.kcm, err = first.Start(ctx, netns.ProcessOptions{Name: "kube-controller-manager", Path: filepath.Join(binDir, "kube-controller-manager"), Args: append(slices.Clone(common),
		"--secure-port=10257",
		"--root-ca-file="+c.net.CAFile(),
		"--service-account-private-key-file="+filepath.Join(filepath.Dir(c.net.CAFile()), "sa.key"),
		"--controllers=*,-node-ipam-controller,-certificatesigningrequest-signing-controller",
		"--node-monitor-grace-period=20s",
	)})
	if err != nil {
		return err
	}
	c.sched, err = first.Start(ctx, netns.ProcessOptions{Name: "kube-scheduler", Path: filepath.Join(binDir, "kube-scheduler"), Args: append(slices.Clone(common), "--secure-port=10259")})
	return err
}

func (c *Cluster) startKubelet(n *Node, binDir string) error {
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 host: kubelet >= 1.35 refuses it unless told otherwise.
failCgroupV1: false
# containerd 1.6 has no RuntimeConfig RPC; the kubelet falls back to this driver.
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
podLogsDir: %[3]s
address: %[4]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
# No CAP_SYS_RESOURCE: the kubelet cannot lower its own oom_score_adj.
oomScoreAdj: 0
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: %[5]s}}
authorization: {mode: Webhook}
clusterDNS: []
resolvConf: /etc/resolv.conf
failSwapOn: false
imageGCHighThresholdPercent: 100
evictionHard: {}
serializeImagePulls: false
registerWithTaints:
- {key: %[6]s, effect: NoSchedule}
`, n.cgroupRoot, n.Socket(), filepath.Join(n.dir, "pod-logs"), n.IP(), c.net.CAFile(), ControlPlaneRole)
	cfgPath := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	var err error
	n.kubelet, err = startDaemon("kubelet", n.Namespace(), filepath.Join(n.dir, "kubelet.log"), filepath.Join(binDir, "kubelet"),
		"--config="+cfgPath, "--kubeconfig="+n.Kubeconfig(), "--root-dir="+filepath.Join(n.dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.dir, "kubelet", "pki"), "--hostname-override="+n.Name(), "--node-ip="+n.IP().String(), "--v=1")
	return err
}

// waitNodesReady labels each node as a control-plane node once it registered (the kubelet
// may not set node-role labels itself; gardenadm labels its nodes the same way) and waits
// until all are Ready.
func (c *Cluster) waitNodesReady(ctx context.Context) error {
	labelled := map[string]bool{}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range c.nodes {
			if n.kubelet.Exited() {
				return false, fmt.Errorf("kubelet on %s exited (log %s)", n.Name(), filepath.Join(n.dir, "kubelet.log"))
			}
		}
		list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // the apiserver may still be settling; poll again
		}
		ready := 0
		for i := range list.Items {
			node := &list.Items[i]
			if c.Node(node.Name) == nil {
				continue // a departed node's object, until it is deleted
			}
			if _, ok := node.Labels[ControlPlaneRole]; !ok && !labelled[node.Name] {
				patch := fmt.Sprintf(`{"metadata":{"labels":{%q:""}}}`, ControlPlaneRole)
				if _, err := c.client.CoreV1().Nodes().Patch(ctx, node.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
					return false, fmt.Errorf("labelling node %s: %w", node.Name, err)
				}
				labelled[node.Name] = true
			}
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(c.nodes) && len(labelled)+countLabelled(list.Items) >= len(c.nodes), nil
	})
}

func countLabelled(nodes []corev1.Node) int {
	n := 0
	for _, node := range nodes {
		if _, ok := node.Labels[ControlPlaneRole]; ok {
			n++
		}
	}
	return n
}

// StopNode stops the node's kubelet and containerd (the shims and containers keep
// running, as after a crash of the two daemons).
func (n *Node) StopNode() error {
	return errors.Join(n.kubelet.Stop(10*time.Second), n.containerd.Stop(10*time.Second))
}

// StartNode starts the node's containerd and kubelet again after StopNode, with the same
// configuration, and waits until containerd's CRI answers.
func (n *Node) StartNode(ctx context.Context) error {
	if !n.containerd.Exited() || !n.kubelet.Exited() {
		return fmt.Errorf("%s: containerd or kubelet still runs", n.Name())
	}
	_ = os.Remove(n.Socket())
	var err error
	if n.containerd, err = n.containerd.again(); err != nil {
		return err
	}
	if err := n.waitContainerd(ctx); err != nil {
		return err
	}
	n.kubelet, err = n.kubelet.again()
	return err
}

// KubeletExited says whether the node's kubelet has ended.
func (n *Node) KubeletExited() bool { return n.kubelet.Exited() }

// RuntimeReport says whether the node's containerd and kubelet run, with the last lines of
// each one's log: what a scenario prints when the node's runtime, started again, does not
// do what it should.
func (n *Node) RuntimeReport() string {
	var b strings.Builder
	for _, d := range []*daemon{n.containerd, n.kubelet} {
		state := "runs"
		if d.Exited() {
			state = "exited"
		}
		fmt.Fprintf(&b, "%s on %s %s; the end of %s:\n%s\n", d.name, n.Name(), state, d.logPath, d.logTail(40))
	}
	return b.String()
}

func (n *Node) waitContainerd(ctx context.Context) error {
	// The socket appears before the CRI plugin has recovered the containers of an earlier
	// run; a kubelet started then fails its runtime check and exits ("server is not
	// initialized yet"), so the wait ends only once the CRI answers a Version call.
	conn, err := grpc.NewClient("unix://"+n.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("containerd on %s: %w", n.Name(), err)
	}
	defer conn.Close()
	cri := runtimeapi.NewRuntimeServiceClient(conn)
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if n.containerd.Exited() {
			return false, fmt.Errorf("containerd exited (log %s)", filepath.Join(n.dir, "containerd.log"))
		}
		callCtx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, lastErr = cri.Version(callCtx, &runtimeapi.VersionRequest{})
		return lastErr == nil, nil
	})
	if err != nil {
		// The CRI's last answer says why it is not ready; the poll error alone only says how long.
		return fmt.Errorf("waiting for containerd's CRI on %s: %w", n.Name(), errors.Join(err, lastErr))
	}
	return nil
}

// Close stops everything the cluster started and removes what it created. It is
// idempotent.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range append(slices.Clone(c.nodes), c.departed...) {
		errs = append(errs, n.kubelet.Stop(10*time.Second))
		if n.containerd != nil && !n.containerd.Exited() {
			// Kill every container so that the shims exit and unmount their rootfs.
			if out, err := n.ctr(ctx, "tasks", "ls", "-q"); err == nil {
				for _, id := range strings.Fields(out) {
					_, _ = n.ctr(ctx, "tasks", "kill", "-s", "KILL", id)
				}
			}
		}
		errs = append(errs, n.containerd.Stop(10*time.Second))
		errs = append(errs, killShims(n.Socket()))
	}
	// Their exit status after SIGTERM says nothing about the cluster.
	for _, p := range []*netns.Process{c.kcm, c.sched} {
		if p != nil {
			_ = p.Stop(5 * time.Second)
		}
	}
	errs = append(errs, unmountUnder(c.dir))
	for _, n := range append(slices.Clone(c.nodes), c.departed...) {
		errs = append(errs, removeCgroupRoot(n.cgroupRoot))
	}
	if c.net != nil {
		errs = append(errs, c.net.Close())
	}
	if c.saved != nil {
		errs = append(errs, writeSysctls(c.saved))
	}
	for _, d := range c.made {
		errs = append(errs, os.RemoveAll(d))
	}
	if c.opts.Dir == "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

// Leftovers lists what the cluster created and Close did not remove: namespaces,
// processes, mounts, cgroups, the kubelets' iptables chains in the host's namespace,
// and sysctls that differ from the values before New. Empty after a clean Close.
func (c *Cluster) Leftovers() []string {
	var out []string
	if c.net != nil {
		if entries, err := os.ReadDir("/run/netns"); err == nil {
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), c.net.ID()) {
					out = append(out, "namespace "+e.Name())
				}
			}
		}
	}
	pids, _ := processesMatching(func(cmdline []byte) bool { return bytes.Contains(cmdline, []byte(c.dir+"/")) })
	for _, pid := range pids {
		out = append(out, fmt.Sprintf("process %d", pid))
	}
	if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], c.dir+"/") {
				out = append(out, "mount "+f[1])
			}
		}
	}
	if hs, err := cgroupHierarchies(); err == nil {
		for _, h := range hs {
			for _, n := range c.nodes {
				if _, err := os.Stat(filepath.Join(h, n.cgroupRoot)); err == nil {
					out = append(out, "cgroup "+filepath.Join(h, n.cgroupRoot))
				}
			}
		}
	}
	if b, err := exec.Command("iptables-save").Output(); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "KUBE-FIREWALL") || strings.Contains(line, "KUBE-KUBELET-CANARY") {
				out = append(out, "iptables "+line)
			}
		}
	}
	if now, err := readSysctls(); err == nil {
		for k, v := range c.saved {
			if now[k] != v {
				out = append(out, fmt.Sprintf("sysctl %s=%s, was %s", k, now[k], v))
			}
		}
	}
	for _, d := range c.made {
		if _, err := os.Stat(d); err == nil {
			out = append(out, "directory "+d)
		}
	}
	return out
}

func readSysctls() (map[string]string, error) {
	out := map[string]string{}
	for _, k := range sysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return nil, fmt.Errorf("reading sysctl %s: %w", k, err)
		}
		out[k] = strings.TrimSpace(string(b))
	}
	return out, nil
}

func writeSysctls(values map[string]string) error {
	var errs []error
	for k, v := range values {
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// cgroupHierarchies are the mounted cgroup hierarchies: the v1 ones and, on a hybrid
// host, the unified one (which holds no controller the kubelet needs, but the kubelet
// creates its pod cgroups there too).
func cgroupHierarchies() ([]string, error) {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroup hierarchies: %w", err)
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if !e.IsDir() {
			continue
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// makeCgroupRoot creates the kubelet's --cgroup-root in every hierarchy (cgroup v1 needs
// it there before the kubelet starts).
func makeCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		d := filepath.Join(h, root)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return fmt.Errorf("cgroup %s/%s: %w", d, f, err)
				}
			}
		}
	}
	return nil
}

// removeCgroupRoot removes the root's cgroups, deepest first, in every hierarchy.
func removeCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		top := filepath.Join(h, root)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unmountUnder lazily unmounts every mount point below dir, deepest first.
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			points = append(points, f[1])
		}
	}
	slices.Sort(points)
	slices.Reverse(points)
	var errs []error
	for _, p := range points {
		if out, err := exec.Command("umount", "-l", p).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("umount %s: %w: %s", p, err, out))
		}
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims that a node's containerd started (their command
// line names its socket) and that outlived it.
func killShims(socket string) error {
	pids, err := processesMatching(func(cmdline []byte) bool {
		return bytes.Contains(cmdline, []byte("containerd-shim")) && bytes.Contains(cmdline, []byte(socket))
	})
	if err != nil {
		return err
	}
	for _, pid := range pids {
		p, err := os.FindProcess(pid)
		if err == nil {
			_ = p.Kill()
		}
	}
	return nil
}

func processesMatching(match func(cmdline []byte) bool) ([]int, error) {
	return allPIDs(func(pid int) bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		return err == nil && match(b)
	})
}

// kubeBinaries builds (or finds cached) kube-apiserver, etcd, kubelet,
// kube-controller-manager and kube-scheduler and returns their directory.
func kubeBinaries(ctx context.Context, root string) (string, error) {
	return runScript(ctx, root, nil, "hack/build-kube-binaries.sh", "nodes")
}

// ContainerLog is the end (at most max bytes) of the named container's log, read as
// `kubectl logs` reads it: through the kube-apiserver, which asks the pod's kubelet.
func (c *Cluster) ContainerLog(ctx context.Context, pod *corev1.Pod, container string, max int64) (string, error) {
	b, err := c.client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("the log of %s/%s through the kube-apiserver: %w", pod.Name, container, err)
	}
	if int64(len(b)) > max {
		b = b[int64(len(b))-max:]
	}
	return string(b), nil
}

// ContainerLogFile is the end (at most max bytes) of the newest log file the kubelet of
// the pod's node wrote for the named container: for a report on a cluster whose
// kube-apiserver may not answer.
func (c *Cluster) ContainerLogFile(pod *corev1.Pod, container string, max int64) (string, error) {
	n := c.Node(pod.Spec.NodeName)
	if n == nil {
		return "", fmt.Errorf("pod %s is on no node of the cluster", pod.Name)
	}
	dir := filepath.Join(n.dir, "pod-logs", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container)
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("no log of %s/%s in %s", pod.Name, container, dir)
	}
	var newest string
	var newestMod time.Time
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.ModTime().After(newestMod) {
			newest, newestMod = f, st.ModTime()
		}
	}
	b, err := os.ReadFile(newest)
	if err != nil {
		return "", err
	}
	if int64(len(b)) > max {
		b = b[int64(len(b))-max:]
	}
	return string(b), nil
}
