// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceClusterIPRange is the (never routed) service range of the test apiservers.
const ServiceClusterIPRange = "198.19.255.0/24"

func (h *Harness) startControlPlane(ctx context.Context) error {
	binDir, err := kubeBinDir(ctx, h.opts.BinDir)
	if err != nil {
		return err
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("kube binaries in %s: %w", binDir, err)
		}
	}
	ips := slices.Clone(h.VIPs())
	var cluster []string
	for _, n := range h.nodes {
		ips = append(ips, n.addr)
		if ip6 := n.IP6(); ip6.IsValid() {
			ips = append(ips, ip6)
		}
		cluster = append(cluster, fmt.Sprintf("%s=http://%s:2380", n.name, n.addr))
	}
	if h.pki, err = newPKI(filepath.Join(h.dir, "pki"), ips); err != nil {
		return err
	}
	h.binDir = binDir
	for _, n := range h.nodes {
		if err := h.configureControlPlane(n, cluster, "new", h.pki.servingCert, h.pki.servingKey); err != nil {
			return err
		}
	}
	for _, n := range h.nodes {
		if n.etcd, err = n.Start(ctx, n.etcdOpts); err != nil {
			return err
		}
	}
	for _, n := range h.nodes {
		if err := n.StartAPIServer(ctx); err != nil {
			return err
		}
	}
	errs := make([]error, len(h.nodes))
	var wg sync.WaitGroup
	for i, n := range h.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.WaitAPIServerReady(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// configureControlPlane fixes the options of the node's etcd member (of the initial
// cluster, in state "new" or "existing") and kube-apiserver (serving cert and key), and
// writes its kubeconfig.
func (h *Harness) configureControlPlane(n *Node, cluster []string, state, cert, key string) error {
	n.etcdOpts = ProcessOptions{Name: "etcd", Path: filepath.Join(h.binDir, "etcd"), Args: []string{
		"--name=" + n.name,
		"--data-dir=" + filepath.Join(h.dir, n.name+"-etcd"),
		fmt.Sprintf("--listen-peer-urls=http://%s:2380", n.addr),
		fmt.Sprintf("--initial-advertise-peer-urls=http://%s:2380", n.addr),
		fmt.Sprintf("--listen-client-urls=http://%s:2379,http://127.0.0.1:2379", n.addr),
		fmt.Sprintf("--advertise-client-urls=http://%s:2379", n.addr),
		// gardenadm's etcd-main (gardener v1.150.0, pkg/component/etcd/bootstrap) serves
		// its metrics on this plain-HTTP listener; the agent reads it by default.
		"--listen-metrics-urls=http://localhost:2381",
		"--initial-cluster=" + strings.Join(cluster, ","),
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + h.id,
		"--unsafe-no-fsync",
		"--log-level=warn",
	}}
	bind := "0.0.0.0"
	if h.opts.Subnet6.IsValid() {
		bind = "::" // IPv4 as well
	}
	n.apiserverOpts = ProcessOptions{Name: "kube-apiserver", Path: filepath.Join(h.binDir, "kube-apiserver"), Args: []string{
		"--bind-address=" + bind,
		fmt.Sprintf("--secure-port=%d", h.opts.APIServerPort),
		"--advertise-address=" + n.addr.String(),
		"--etcd-servers=http://127.0.0.1:2379",
		"--client-ca-file=" + h.pki.caFile,
		"--tls-cert-file=" + cert,
		"--tls-private-key-file=" + key,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + h.pki.saPub,
		"--service-account-signing-key-file=" + h.pki.saKey,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--authorization-mode=RBAC",
		// As Gardener's kube-apiserver (v1.150.0, deployment.go): it reaches the kubelets
		// (kubectl logs, exec) by their InternalIP, not by a node name no DNS here resolves.
		"--kubelet-preferred-address-types=InternalIP,Hostname,ExternalIP",
		"--kubelet-client-certificate=" + h.pki.adminCert,
		"--kubelet-client-key=" + h.pki.adminKey,
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}}
	n.kubeconfig = filepath.Join(h.dir, n.name+".kubeconfig")
	return h.writeKubeconfig(n.kubeconfig)
}

func (h *Harness) writeKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kvt"] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://127.0.0.1:%d", h.opts.APIServerPort), CertificateAuthorityData: h.pki.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: h.pki.adminCertPEM, ClientKeyData: h.pki.adminKeyPEM}
	cfg.Contexts["kvt"] = &clientcmdapi.Context{Cluster: "kvt", AuthInfo: "admin"}
	cfg.CurrentContext = "kvt"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// kubeBinDir returns dir, or the directory hack/build-kube-binaries.sh prints.
func kubeBinDir(ctx context.Context, dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-kube-binaries.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/build-kube-binaries.sh: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// moduleRoot walks up from the working directory to the directory with go.mod. It repeats
// framework.RepoRoot on purpose: the harness is also linked into the benchmark, which
// should not pull in envtest and Gardener through the framework package.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Kubeconfig is the path of the node's kubeconfig (admin, https://127.0.0.1:<port>, to be
// used inside the node's namespace). Empty without control plane.
func (n *Node) Kubeconfig() string { return n.kubeconfig }

// CAFile is the path of the control plane's CA certificate (empty without control plane).
func (h *Harness) CAFile() string {
	if h.pki == nil {
		return ""
	}
	return h.pki.caFile
}

// RESTConfig returns an admin config for the node's kube-apiserver, reached at
// https://<node IP>:<port> from inside the node's namespace; nil without control plane.
func (n *Node) RESTConfig() *rest.Config {
	p := n.h.pki
	if p == nil {
		return nil
	}
	return &rest.Config{
		Host: "https://" + netip.AddrPortFrom(n.addr, n.h.opts.APIServerPort).String(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.caPEM,
			CertData: p.adminCertPEM,
			KeyData:  p.adminKeyPEM,
		},
		Dial:    n.DialContext,
		Timeout: 5 * time.Second,
	}
}

// Etcd is the node's etcd process (nil without control plane).
func (n *Node) Etcd() *Process {
	n.cpMu.Lock()
	defer n.cpMu.Unlock()
	return n.etcd
}

// APIServer is the node's current kube-apiserver process (nil without control plane).
func (n *Node) APIServer() *Process {
	n.cpMu.Lock()
	defer n.cpMu.Unlock()
	return n.apiserver
}

// StartAPIServer starts the node's kube-apiserver (again); it is an error while one runs.
func (n *Node) StartAPIServer(ctx context.Context) error {
	n.cpMu.Lock()
	defer n.cpMu.Unlock()
	if n.apiserverOpts.Path == "" {
		return errors.New("no control plane in this harness")
	}
	if n.apiserver != nil && !n.apiserver.Exited() {
		return fmt.Errorf("%s: kube-apiserver runs already", n.name)
	}
	p, err := n.Start(ctx, n.apiserverOpts)
	if err != nil {
		return err
	}
	n.apiserver = p
	return nil
}

// KillAPIServer kills the node's kube-apiserver with SIGKILL and waits for its end.
func (n *Node) KillAPIServer() {
	if p := n.APIServer(); p != nil {
		p.Kill()
	}
}

// WaitAPIServerReady polls https://<node IP>:<port>/readyz until it answers 200.
func (n *Node) WaitAPIServerReady(ctx context.Context) error {
	p := n.h.pki
	if p == nil {
		return errors.New("no control plane in this harness")
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.cert)
	hc := n.HTTPClient(2*time.Second, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	url := "https://" + netip.AddrPortFrom(n.addr, n.h.opts.APIServerPort).String() + "/readyz"
	var last string
	for {
		if ap := n.APIServer(); ap != nil && ap.Exited() {
			return fmt.Errorf("%s: kube-apiserver exited (see %s)", n.name, ap.LogPath())
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: kube-apiserver not ready (%s): %w", n.name, last, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// EtcdLeads tells whether the node's etcd member is the raft leader, from its metrics
// (etcd_server_is_leader) on the plain-HTTP client listener 127.0.0.1:2379.
func (n *Node) EtcdLeads(ctx context.Context) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:2379/metrics", nil)
	if err != nil {
		return false, err
	}
	resp, err := n.HTTPClient(2*time.Second, &http.Transport{}).Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	return strings.Contains(string(body), "\netcd_server_is_leader 1\n"), nil
}
