// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	"github.com/gardener/gardener/pkg/chartrenderer"
	"github.com/gardener/gardener/pkg/extensions"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/cmd/gardener-extension-kube-vip/app"
	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

const (
	releaseName      = "kube-vip"
	releaseNamespace = "extension-kube-vip"
	controllerName   = "gardener-extension-kube-vip"
	controllerUser   = "system:serviceaccount:" + releaseNamespace + ":" + controllerName
)

// selfHostedValues are the values gardenlet/gardenadm mix in when they deploy the chart into
// a bootstrapping self-hosted shoot (gardener v1.150.0 controllerinstallation reconciler).
func selfHostedValues() map[string]any {
	return map[string]any{
		"gardener": map[string]any{
			"version":                "v1.150.0",
			"selfHostedShootCluster": true,
			"shoot": map[string]any{
				"name":      "my-shoot",
				"namespace": "garden",
				"labels":    map[string]any{},
				"spec":      map[string]any{"region": "RegionOne"},
			},
		},
		"usablePorts": []any{30101, 30102, 30103, 30104, 30105},
		"vpa":         map[string]any{"enabled": true},
	}
}

// vpaCRD returns gardener's copy of the VerticalPodAutoscaler CRD, so that the chart's VPA
// object is validated against the real schema.
func vpaCRD(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gardener/gardener")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("locating the gardener module: %v", describe(err))
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "example", "seed-crds", "10-crd-autoscaling.k8s.io_verticalpodautoscalers.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("VPA CRD: %v", err)
	}
	return path
}

type rendered struct {
	objects []*unstructured.Unstructured
}

func (r rendered) find(kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range r.objects {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

func (r rendered) kinds() []string {
	var kinds []string
	for _, o := range r.objects {
		kinds = append(kinds, o.GetKind())
	}
	slices.Sort(kinds)
	return kinds
}

func toObjects(t *testing.T, chart *chartrenderer.RenderedChart) rendered {
	t.Helper()
	var r rendered
	// Not chart.Files(): it keys objects by kind and name, so objects of the same name in
	// different namespaces would collapse.
	docs, err := documents(chart.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		r.objects = append(r.objects, obj)
	}
	return r
}

func deploymentOf(t *testing.T, r rendered) *appsv1.Deployment {
	t.Helper()
	u := r.find("Deployment", releaseNamespace, controllerName)
	if u == nil {
		t.Fatalf("no Deployment %s/%s rendered; kinds: %v", releaseNamespace, controllerName, r.kinds())
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// dryRunAll creates every object with a server-side dry run and strict field validation.
func dryRunAll(ctx context.Context, t *testing.T, c client.Client, r rendered) {
	t.Helper()
	for _, obj := range r.objects {
		if err := c.Create(ctx, obj.DeepCopy(), client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Errorf("dry run of %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

// checkArgsParse makes sure the controller binary knows every flag the chart passes.
func checkArgsParse(t *testing.T, d *appsv1.Deployment) []string {
	t.Helper()
	args := d.Spec.Template.Spec.Containers[0].Args
	if err := app.NewControllerManagerCommand(context.Background()).ParseFlags(args); err != nil {
		t.Errorf("controller does not accept the chart's args %v: %v", args, err)
	}
	return args
}

// renderDir renders the chart directory through gardener's renderer, packaged like
// `helm package` does.
func renderDir(t *testing.T, renderer chartrenderer.Interface, dir string, values map[string]any) (*chartrenderer.RenderedChart, error) {
	t.Helper()
	archive, err := gen.PackageChart(dir)
	if err != nil {
		return nil, err
	}
	return renderer.RenderArchive(archive, releaseName, releaseNamespace, values)
}

func TestChart(t *testing.T) {
	root := repoRoot(t)
	// The self-hosted render holds a ServiceMonitor and a PrometheusRule: validated against
	// the CRDs gardenadm installs.
	monitoringCRDs, err := framework.PrometheusOperatorCRDPaths()
	if err != nil {
		t.Fatal(err)
	}
	cp := framework.StartControlPlane(t, framework.WithCRDPaths(append(monitoringCRDs, vpaCRD(t, root))...))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	renderer, err := chartrenderer.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}); err != nil {
		t.Fatal(err)
	}
	chartDir := filepath.Join(root, gen.ChartDir)

	t.Run("default values", func(t *testing.T) {
		chart, err := renderDir(t, renderer, chartDir, map[string]any{})
		if err != nil {
			t.Fatalf("rendering: %v", err)
		}
		r := toObjects(t, chart)
		want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget", "Role", "Role", "Role", "RoleBinding", "RoleBinding", "RoleBinding", "Service", "ServiceAccount"}
		if got := r.kinds(); !slices.Equal(got, want) {
			t.Errorf("kinds = %v, want %v", got, want)
		}
		d := deploymentOf(t, r)
		args := checkArgsParse(t, d)
		for _, want := range []string{"--leader-election=true", "--extension-type=kube-vip", "--metrics-bind-address=:8080", "--health-bind-address=:8081", "--heartbeat-namespace=" + releaseNamespace} {
			if !slices.Contains(args, want) {
				t.Errorf("args %v miss %s", args, want)
			}
		}
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--self-hosted-shoot-cluster") }) {
			t.Errorf("args %v set --self-hosted-shoot-cluster without gardener.selfHostedShootCluster", args)
		}
		if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Error("controller pod does not run as non-root")
		}
		// Gardener's conventions for extension controllers: its PriorityClass, and the label by
		// which gardener-resource-manager's high-availability webhook spreads the replicas.
		if got := d.Spec.Template.Spec.PriorityClassName; got != "gardener-system-900" {
			t.Errorf("priorityClassName = %q, want gardener-system-900", got)
		}
		if got := d.Spec.Template.Labels["high-availability-config.resources.gardener.cloud/type"]; got != "controller" {
			t.Errorf("high-availability-config type label = %q, want controller", got)
		}
		// The agent image comes from the controller's embedded image vector.
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--agent-image") }) {
			t.Errorf("args %v set --agent-image without values.agentImage", args)
		}
		dryRunAll(ctx, t, cp.Client, r)
	})

	t.Run("agent image and image vector overwrite", func(t *testing.T) {
		overwrite := "images:\n- name: kube-vip-agent\n  repository: registry.example/mirror/kube-vip-agent\n  tag: v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
		chart, err := renderDir(t, renderer, chartDir, map[string]any{
			"agentImage":           map[string]any{"repository": "registry.example/kube-vip-agent", "tag": "v2"},
			"imageVectorOverwrite": overwrite,
		})
		if err != nil {
			t.Fatalf("rendering: %v", err)
		}
		r := toObjects(t, chart)
		d := deploymentOf(t, r)
		if args := checkArgsParse(t, d); !slices.Contains(args, "--agent-image=registry.example/kube-vip-agent:v2") {
			t.Errorf("args %v miss --agent-image from values.agentImage", args)
		}
		cm := r.find("ConfigMap", releaseNamespace, controllerName+"-imagevector-overwrite")
		if cm == nil {
			t.Fatal("imageVectorOverwrite renders no ConfigMap")
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "images_overwrite.yaml"); got != overwrite {
			t.Errorf("ConfigMap data = %q, want %q", got, overwrite)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "IMAGEVECTOR_OVERWRITE" && e.Value == "/charts_overwrite/images_overwrite.yaml"
		}) || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/charts_overwrite/" }) {
			t.Errorf("container env %v / mounts %v do not point IMAGEVECTOR_OVERWRITE at the ConfigMap", c.Env, c.VolumeMounts)
		}
		dryRunAll(ctx, t, cp.Client, r)
	})

	t.Run("self-hosted shoot values", func(t *testing.T) {
		chart, err := renderDir(t, renderer, chartDir, selfHostedValues())
		if err != nil {
			t.Fatalf("rendering: %v", err)
		}
		r := toObjects(t, chart)
		if r.find("VerticalPodAutoscaler", releaseNamespace, controllerName) == nil {
			t.Error("vpa.enabled=true renders no VerticalPodAutoscaler")
		}
		d := deploymentOf(t, r)
		args := checkArgsParse(t, d)
		for _, want := range []string{"--self-hosted-shoot-cluster=true", "--gardener-version=v1.150.0", "--metrics-bind-address=:30101", "--health-bind-address=:30102"} {
			if !slices.Contains(args, want) {
				t.Errorf("args %v miss %s", args, want)
			}
		}
		if !slices.ContainsFunc(d.Spec.Template.Spec.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == "node-role.kubernetes.io/control-plane" && tol.Operator == corev1.TolerationOpExists
		}) {
			t.Errorf("tolerations %v miss the control-plane toleration", d.Spec.Template.Spec.Tolerations)
		}
		if p := d.Spec.Template.Spec.Containers[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Port.IntValue() != 30102 {
			t.Errorf("readiness probe %v does not use the health port from usablePorts", p)
		}
		dryRunAll(ctx, t, cp.Client, r)
	})

	t.Run("packaged chart of the ControllerDeployment", func(t *testing.T) {
		objs := decodeFile(t, strictDecoder(t), filepath.Join(root, gen.RegistrationFile))
		var deployment *gardencorev1.ControllerDeployment
		for _, o := range objs {
			if d, ok := o.(*gardencorev1.ControllerDeployment); ok {
				deployment = d
			}
		}
		if deployment == nil || deployment.Helm == nil {
			t.Fatal("no ControllerDeployment with helm")
		}
		values := map[string]any{}
		if deployment.Helm.Values != nil {
			if err := yaml.Unmarshal(deployment.Helm.Values.Raw, &values); err != nil {
				t.Fatal(err)
			}
		}
		fromArchive, err := renderer.RenderArchive(deployment.Helm.RawChart, releaseName, releaseNamespace, values)
		if err != nil {
			t.Fatalf("rendering rawChart: %v", err)
		}
		fromDir, err := renderDir(t, renderer, chartDir, values)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fromArchive.Manifest(), fromDir.Manifest()) {
			t.Error("the embedded rawChart renders differently from the chart directory: run `make generate`")
		}
		dryRunAll(ctx, t, cp.Client, toObjects(t, fromArchive))
	})

	// Install the chart for real, then act as the controller's ServiceAccount.
	chart, err := renderDir(t, renderer, chartDir, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range toObjects(t, chart).objects {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatalf("installing %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	controllerConfig := rest.CopyConfig(cp.Config)
	controllerConfig.Impersonate = rest.ImpersonationConfig{UserName: controllerUser}
	asController, err := client.New(controllerConfig, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("RBAC allows the controller's work", func(t *testing.T) {
		deployer := agentrollout.New(asController)
		spec := agentrollout.Spec{Namespace: metav1.NamespaceSystem, Image: "registry.example/kube-vip-agent:v1", VIP: "198.18.0.50", APIServerPort: 443}
		if err := deployer.Deploy(ctx, spec); err != nil {
			t.Fatalf("deploying the agent as the controller: %v", err)
		}
		if _, err := deployer.Status(ctx, metav1.NamespaceSystem); err != nil {
			t.Errorf("agent status as the controller: %v", err)
		}
		// Deploy creates the agents' Lease (their Role has no create): as the controller.
		if err := asController.Get(ctx, client.ObjectKey{Name: agentrollout.LeaseName, Namespace: metav1.NamespaceSystem}, &coordinationv1.Lease{}); err != nil {
			t.Errorf("the agent Lease the controller's Deploy created: %v", err)
		}
		checks := map[string]func() error{
			"list exposures in kube-system": func() error {
				return asController.List(ctx, &extensionsv1alpha1.SelfHostedShootExposureList{}, client.InNamespace(metav1.NamespaceSystem))
			},
			"list infrastructures in kube-system": func() error {
				return asController.List(ctx, &extensionsv1alpha1.InfrastructureList{}, client.InNamespace(metav1.NamespaceSystem))
			},
			"list clusters": func() error { return asController.List(ctx, &extensionsv1alpha1.ClusterList{}) },
			"list nodes":    func() error { return asController.List(ctx, &corev1.NodeList{}) },
			"get the credentials Secret": func() error {
				err := asController.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "cloudprovider"}, &corev1.Secret{})
				return client.IgnoreNotFound(err)
			},
			"list pods in kube-system": func() error {
				return asController.List(ctx, &corev1.PodList{}, client.InNamespace(metav1.NamespaceSystem))
			},
			"list leases in release namespace": func() error {
				return asController.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace(releaseNamespace))
			},
			"create event in kube-system": func() error {
				return asController.Create(ctx, &corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: "e1", Namespace: metav1.NamespaceSystem},
					InvolvedObject: corev1.ObjectReference{Kind: "SelfHostedShootExposure", Namespace: metav1.NamespaceSystem, Name: "x"},
					Reason:         "Test", Message: "test", Type: corev1.EventTypeNormal,
				})
			},
		}
		for name, check := range checks {
			if err := check(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		gone := false
		for i := 0; i < 20 && !gone; i++ {
			if gone, err = deployer.Delete(ctx, metav1.NamespaceSystem); err != nil {
				t.Fatalf("deleting the agent as the controller: %v", err)
			}
			if !gone {
				time.Sleep(250 * time.Millisecond)
			}
		}
		if !gone {
			t.Error("agent not gone after deletion")
		}
	})

	t.Run("RBAC denies what the controller does not need", func(t *testing.T) {
		if err := cp.Client.Create(ctx, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: metav1.NamespaceSystem},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kube-proxy"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "kube-proxy"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
				},
			},
		}); err != nil {
			t.Fatal(err)
		}
		denied := map[string]func() error{
			"list secrets in default": func() error {
				return asController.List(ctx, &corev1.SecretList{}, client.InNamespace(metav1.NamespaceDefault))
			},
			"list secrets everywhere": func() error { return asController.List(ctx, &corev1.SecretList{}) },
			"list secrets in kube-system": func() error {
				return asController.List(ctx, &corev1.SecretList{}, client.InNamespace(metav1.NamespaceSystem))
			},
			"update nodes": func() error { return asController.Update(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}) },
			"delete another DaemonSet": func() error {
				return asController.Delete(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: metav1.NamespaceSystem}})
			},
			"write secrets in kube-system": func() error {
				return asController.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: metav1.NamespaceSystem}})
			},
			"grant more than it holds": func() error {
				return asController.Create(ctx, &rbacv1.Role{
					ObjectMeta: metav1.ObjectMeta{Name: "escalate", Namespace: metav1.NamespaceSystem},
					Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"delete"}}},
				})
			},
			"daemonsets in default": func() error {
				return asController.List(ctx, &appsv1.DaemonSetList{}, client.InNamespace(metav1.NamespaceDefault))
			},
		}
		for name, call := range denied {
			if err := call(); !apierrors.IsForbidden(err) {
				t.Errorf("%s: got %v, want Forbidden", name, err)
			}
		}
	})

	t.Run("controller runs with the chart's RBAC", func(t *testing.T) {
		runControllerAsServiceAccount(ctx, t, cp)
	})
}

// runControllerAsServiceAccount starts the controller command (the real main's wiring) as
// the chart's ServiceAccount and waits until it is ready and has written its heartbeat.
func runControllerAsServiceAccount(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	kubeconfig, err := cp.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = controllerUser
	}
	kubeconfigPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfigPath); err != nil {
		t.Fatal(err)
	}
	healthAddr := freeAddress(t)

	runCtx, stop := context.WithCancel(ctx)
	cmd := app.NewControllerManagerCommand(runCtx)
	cmd.SetArgs([]string{
		"--kubeconfig=" + kubeconfigPath,
		"--leader-election-namespace=" + releaseNamespace,
		"--heartbeat-namespace=" + releaseNamespace,
		"--heartbeat-renew-interval-seconds=5",
		"--extension-classes=shoot",
		"--self-hosted-shoot-cluster=true",
		"--metrics-bind-address=127.0.0.1:0",
		"--health-bind-address=" + healthAddr,
		"--log-level=info",
	})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	defer func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller returned: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("controller did not stop within 30s")
		}
	}()

	deadline := time.Now().Add(60 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("controller exited early: %v", err)
		default:
		}
		lastErr = checkRunning(ctx, cp.Client, healthAddr)
		if lastErr == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("controller not running within 60s: %v", lastErr)
}

func checkRunning(ctx context.Context, c client.Client, healthAddr string) error {
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + healthAddr + path)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: extensions.HeartBeatResourceName}, lease); err != nil {
		return fmt.Errorf("heartbeat lease: %w", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != app.ExtensionName {
		return errors.New("heartbeat lease has the wrong holder")
	}
	election := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: "kube-vip-leader-election"}, election); err != nil {
		return fmt.Errorf("leader election lease: %w", err)
	}
	return nil
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
