// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kubevipv1alpha1 "github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

const gardenerModule = "github.com/gardener/gardener"

// Gardener's own CRD manifests, relative to the gardener module's directory.
var gardenerCRDs = []string{
	"pkg/component/extensions/crds/assets",
	"pkg/component/gardener/resourcemanager/assets/crd-resources.gardener.cloud_managedresources.yaml",
}

// ControlPlane is a running etcd and kube-apiserver on loopback, started by envtest.
type ControlPlane struct {
	// Env is the envtest environment; Stop stops it.
	Env *envtest.Environment
	// Config authenticates as cluster admin.
	Config *rest.Config
	// Client is a controller-runtime client (no cache) with Scheme.
	Client client.Client
	// Scheme knows client-go's types, Gardener's core v1beta1, extensions v1alpha1 and
	// resources v1alpha1, and this project's controller/apis/v1alpha1.
	Scheme *runtime.Scheme
}

// ControlPlaneOption changes how a control plane starts.
type ControlPlaneOption func(*controlPlaneOptions)

type controlPlaneOptions struct {
	crdPaths      []string
	apiServerArgs map[string][]string
}

// WithCRDPaths installs the CRD manifests in these files or directories as well.
func WithCRDPaths(paths ...string) ControlPlaneOption {
	return func(o *controlPlaneOptions) { o.crdPaths = append(o.crdPaths, paths...) }
}

// WithAPIServerArg appends a kube-apiserver flag (name without dashes).
func WithAPIServerArg(name string, values ...string) ControlPlaneOption {
	return func(o *controlPlaneOptions) {
		if o.apiServerArgs == nil {
			o.apiServerArgs = map[string][]string{}
		}
		o.apiServerArgs[name] = append(o.apiServerArgs[name], values...)
	}
}

// NewScheme returns a new scheme with the types that ControlPlane.Scheme knows.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		gardencorev1beta1.AddToScheme,
		extensionsv1alpha1.AddToScheme,
		resourcesv1alpha1.AddToScheme,
		kubevipv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return scheme, nil
}

// StartControlPlane starts etcd and kube-apiserver (built by hack/build-kube-binaries.sh,
// which takes about 10 minutes the first time) with Gardener's extension CRDs and the
// ManagedResource CRD installed, and stops them in t.Cleanup. It fails the test if they do
// not start. The first call in a process sets controller-runtime's logger (development
// zap logger on stderr); a test that wants another one sets it afterwards.
func StartControlPlane(t testing.TB, opts ...ControlPlaneOption) *ControlPlane {
	t.Helper()
	cp, err := NewControlPlane(opts...)
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping kube-apiserver and etcd: %v", err)
		}
	})
	return cp
}

// NewControlPlane is StartControlPlane for programs: the caller stops it with Stop.
func NewControlPlane(opts ...ControlPlaneOption) (*ControlPlane, error) {
	setDefaultLogger()
	o := controlPlaneOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	assets, err := KubeBinaries()
	if err != nil {
		return nil, err
	}
	crds, err := GardenerCRDPaths()
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     append(crds, o.crdPaths...),
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		CRDInstallOptions:     envtest.CRDInstallOptions{Scheme: scheme},
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	for name, values := range o.apiServerArgs {
		args.Append(name, values...)
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("envtest with assets in %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &ControlPlane{Env: env, Config: cfg, Client: c, Scheme: scheme}, nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (cp *ControlPlane) Stop() error {
	if err := cp.Env.Stop(); err != nil {
		return fmt.Errorf("stopping envtest: %w", err)
	}
	return nil
}

// AdminKubeconfig returns a kubeconfig for a member of system:masters.
func (cp *ControlPlane) AdminKubeconfig() ([]byte, error) {
	user, err := cp.Env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("rendering admin kubeconfig: %w", err)
	}
	return kubeconfig, nil
}

// KubeBinaries returns the directory with kube-apiserver, etcd (and kubectl): the
// environment variable KUBEBUILDER_ASSETS if set, else what hack/build-kube-binaries.sh
// prints (it builds the binaries on first use and caches them outside the clone, see the script).
func KubeBinaries() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	// Test binaries of several packages may get here at once; one build at a time.
	unlock, err := lockFile(filepath.Join(root, "bin", ".build-kube-binaries.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-kube-binaries.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/build-kube-binaries.sh: %w: %s", err, lastLines(stderr.String(), 20))
	}
	dir := strings.TrimSpace(stdout.String())
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		return "", fmt.Errorf("hack/build-kube-binaries.sh printed %q without kube-apiserver in it: %w", dir, err)
	}
	return dir, nil
}

// GardenerCRDPaths returns the files and directories of the CRDs that StartControlPlane
// installs, taken from the gardener module that go.mod requires.
func GardenerCRDPaths() ([]string, error) {
	dir, err := GardenerModuleDir()
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(gardenerCRDs))
	for _, p := range gardenerCRDs {
		paths = append(paths, filepath.Join(dir, p))
	}
	return paths, nil
}

// SelfHostedShootCRDPaths are the CRDs a self-hosted shoot has when gardenadm deploys an
// extension: Gardener's (GardenerCRDPaths) and the prometheus-operator's.
func SelfHostedShootCRDPaths() ([]string, error) {
	gardener, err := GardenerCRDPaths()
	if err != nil {
		return nil, err
	}
	monitoring, err := PrometheusOperatorCRDPaths()
	if err != nil {
		return nil, err
	}
	return append(gardener, monitoring...), nil
}

// PrometheusOperatorCRDPaths are the CRDs of the prometheus-operator kinds the extension
// writes (ServiceMonitor, PrometheusRule), as Gardener's own copies that gardenadm installs on
// a self-hosted shoot before any extension (the botanist's
// ReconcileCustomResourceDefinitionsTaskGroup).
func PrometheusOperatorCRDPaths() ([]string, error) {
	dir, err := GardenerModuleDir()
	if err != nil {
		return nil, err
	}
	templates := filepath.Join(dir, "pkg/component/observability/monitoring/prometheusoperator/templates")
	return []string{
		filepath.Join(templates, "crd-monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(templates, "crd-monitoring.coreos.com_prometheusrules.yaml"),
	}, nil
}

// GardenerModuleDir is the directory of the gardener module that go.mod requires.
func GardenerModuleDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", gardenerModule)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("locating module %s: %w: %s", gardenerModule, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var loggerOnce sync.Once

// setDefaultLogger gives controller-runtime (envtest, managers in tests) a development
// logger on stderr, once per process. Without one, controller-runtime prints a warning
// with a stack trace after 30 s and drops its logs.
func setDefaultLogger() {
	loggerOnce.Do(func() {
		ctrllog.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	})
}

// lockFile takes an exclusive flock on path, waiting for it, and returns its release.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}
