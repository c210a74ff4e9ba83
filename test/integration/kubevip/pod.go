// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package kubevip runs upstream kube-vip as this extension deploys it, on the nodes of a
// test/netns harness: the binary built from the module proxy
// (hack/bench/build-kube-vip.sh) is started with the command, environment and
// capabilities of the container of the DaemonSet that controller/agentrollout renders,
// with a ServiceAccount token of that DaemonSet's ServiceAccount (so exactly its Role), in
// the place where the in-cluster config looks for it.
package kubevip

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

// Build builds kube-vip (cached outside the clone, see the script) and returns the binary's path.
func Build(ctx context.Context) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "bench", "build-kube-vip.sh"))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/bench/build-kube-vip.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// saDir is where rest.InClusterConfig reads the token and CA (a fixed path).
const saDir = "/run/secrets/kubernetes.io/serviceaccount"

// podScript emulates what the container runtime gives the container: a private /run (the
// process runs under `ip netns exec`, which gives it its own mount namespace, so the
// tmpfs is seen by no one else) with the ServiceAccount volume, and a capability bounding
// set of exactly the container's capabilities (root gets them all otherwise), under
// no_new_privs. $1 is the directory with token, ca.crt and namespace, $2 the bounding
// set, the rest the command.
const podScript = `set -e
sa=$1; caps=$2; shift 2
mount -t tmpfs -o size=1m,mode=0755 kvt-pod-run /run
mkdir -p ` + saDir + `
cp "$sa/token" "$sa/ca.crt" "$sa/namespace" ` + saDir + `/
exec setpriv --no-new-privs --inh-caps=-all --bounding-set="$caps" -- "$@"
`

// Pod is one DaemonSet's container, ready to start on harness nodes.
type Pod struct {
	// Bin is the executable that the image's entrypoint stands for.
	Bin string
	// Container is the DaemonSet's only container.
	Container corev1.Container
	// Dir holds the ServiceAccount files and the (empty) HOME.
	Dir string
}

// NewPod reads the container of ds and requests a token for ds's ServiceAccount through
// cs; the files go into dir.
func NewPod(ctx context.Context, cs kubernetes.Interface, ds *appsv1.DaemonSet, bin, caFile, dir string) (*Pod, error) {
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		return nil, fmt.Errorf("DaemonSet %s has %d containers, want 1", ds.Name, len(spec.Containers))
	}
	if !spec.HostNetwork {
		return nil, fmt.Errorf("DaemonSet %s does not use the host network: the harness runs it in the node's", ds.Name)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ds.Namespace).CreateToken(ctx, spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for ServiceAccount %s/%s: %w", ds.Namespace, spec.ServiceAccountName, err)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o700); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": ca, "namespace": []byte(ds.Namespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return &Pod{Bin: bin, Container: spec.Containers[0], Dir: dir}, nil
}

// boundingSet renders the container's capabilities for setpriv; the container must drop
// ALL and add only what it needs.
func (p *Pod) boundingSet() (string, error) {
	sc := p.Container.SecurityContext
	if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		return "", fmt.Errorf("container %s does not drop ALL capabilities", p.Container.Name)
	}
	set := []string{"-all"}
	for _, c := range sc.Capabilities.Add {
		set = append(set, "+"+strings.ToLower(string(c)))
	}
	return strings.Join(set, ","), nil
}

// env resolves the container's environment for node n, as the kubelet would; HOME is an
// empty directory, as in the image.
func (p *Pod) env(n *netns.Node) ([]string, error) {
	env, err := ResolveEnv(p.Container, n.Name())
	if err != nil {
		return nil, err
	}
	return append([]string{"HOME=" + filepath.Join(p.Dir, "home")}, env...), nil
}

// ResolveEnv renders a container's environment as NAME=value for the node named node:
// values as they are, spec.nodeName from the downward API; nothing else is supported.
func ResolveEnv(c corev1.Container, node string) ([]string, error) {
	var env []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName":
			env = append(env, e.Name+"="+node)
		default:
			return nil, fmt.Errorf("env %s of container %s: only values and spec.nodeName are supported", e.Name, c.Name)
		}
	}
	return env, nil
}

// StartAll starts the container on every node of h.
func (p *Pod) StartAll(ctx context.Context, h *netns.Harness) (map[*netns.Node]*netns.Process, error) {
	procs := map[*netns.Node]*netns.Process{}
	for _, n := range h.Nodes() {
		proc, err := p.Start(ctx, n)
		if err != nil {
			return nil, err
		}
		procs[n] = proc
	}
	return procs, nil
}

// Start starts the container's process on n.
func (p *Pod) Start(ctx context.Context, n *netns.Node) (*netns.Process, error) {
	caps, err := p.boundingSet()
	if err != nil {
		return nil, err
	}
	env, err := p.env(n)
	if err != nil {
		return nil, err
	}
	if len(p.Container.Command) > 0 {
		// The image's entrypoint is the binary; a command would replace it.
		return nil, fmt.Errorf("container %s sets a command; the harness only knows the entrypoint", p.Container.Name)
	}
	args := append([]string{"-c", podScript, "pod", p.Dir, caps, p.Bin}, p.Container.Args...)
	return n.Start(ctx, netns.ProcessOptions{Name: p.Container.Name, Path: "/bin/sh", Args: args, Env: env})
}
