// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/chartrenderer"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
)

const (
	// releaseName names the chart's objects, as the ControllerDeployment would.
	releaseName = "gardener-extension-kube-vip"
	// releaseNamespace is where the controller runs: gardenlet installs every extension in
	// a namespace of its own (extension-<name>), apart from kube-system that it serves.
	releaseNamespace = "extension-kube-vip"
	// exposureName is the exposure gardenadm creates for the shoot.
	exposureName = "kube-apiserver"
	// apiserverPort is where every node's kube-apiserver listens.
	apiserverPort = 6443
)

// extension is the controller installed from its chart, the Gardener objects and the
// exposure; one for the package, torn down by TestMain.
type extension struct {
	os       framework.OpenStackEnv
	neutron  *openstack.Network
	identity string
	forward  *loopbackForwarder
}

var (
	extOnce sync.Once
	ext     *extension
	extErr  error
)

// installed installs the extension on first use: the Gardener CRDs, the objects gardenadm
// creates (cloudprovider Secret, Cluster, Infrastructure with status), the loopback bridge
// to Keystone and Neutron and the chart. Without a local OpenStack the test ends (see
// framework.Unavailable).
func installed(t *testing.T, ctx context.Context) *extension {
	t.Helper()
	osEnv := framework.OpenStack(t)
	extOnce.Do(func() { ext, extErr = install(ctx, osEnv) })
	if extErr != nil {
		t.Fatalf("installing the extension: %v", extErr)
	}
	return ext
}

func install(ctx context.Context, osEnv framework.OpenStackEnv) (*extension, error) {
	e := &extension{os: osEnv, identity: framework.UniqueTechnicalID("kve2e-")}
	factory := openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)})
	creds := &openstack.Credentials{DomainName: osEnv.DomainName, TenantName: osEnv.ProjectName, Username: osEnv.Username, Password: osEnv.Password}
	neutron, err := factory.Network(ctx, openstack.AuthConfig{Credentials: creds, AuthURL: osEnv.AuthURL, Region: osEnv.Region})
	if err != nil {
		return nil, fmt.Errorf("authenticating the test's Neutron client: %w", err)
	}
	e.neutron = neutron
	// The controller runs in a node's network namespace, Keystone and Neutron on the host's
	// loopback: forward the same loopback addresses in every node, so that the authURL in
	// the Secret and the endpoints of Keystone's catalog hold for the pod unchanged.
	addrs, err := loopbackAddresses(osEnv.AuthURL, osEnv.NeutronURL)
	if err != nil {
		return nil, err
	}
	if e.forward, err = forwardLoopback(ctx, cluster.Net().Nodes(), addrs); err != nil {
		return nil, err
	}
	cfg := cluster.Net().Nodes()[0].RESTConfig()
	paths, err := framework.GardenerCRDPaths()
	if err != nil {
		return e, err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return e, fmt.Errorf("installing the Gardener CRDs: %w", err)
	}
	cl, err := newClient()
	if err != nil {
		return e, err
	}
	if err := framework.Bootstrap(ctx, cl, osEnv.BootstrapOptions(framework.ApplicationCredential)); err != nil {
		return e, fmt.Errorf("creating the Gardener objects: %w", err)
	}
	if err := framework.SetTechnicalID(ctx, cl, e.identity); err != nil {
		return e, err
	}
	if err := installChart(ctx, cl, cluster.ImageRef("kube-vip-agent")); err != nil {
		return e, err
	}
	return e, nil
}

// newClient is an admin client with the Gardener extension types.
func newClient() (client.Client, error) {
	scheme, err := framework.NewScheme()
	if err != nil {
		return nil, err
	}
	return client.New(cluster.Net().Nodes()[0].RESTConfig(), client.Options{Scheme: scheme})
}

// installChart renders the chart with the values Gardener gives a self-hosted shoot's
// extension (selfHostedShootCluster, usablePorts) and applies it, as the gardenlet of
// gardenadm does with a ControllerDeployment. Its bootstrap mode then runs the pod in the
// host network; this cluster has no kube-proxy, so the in-cluster config is pointed at the
// node-local kube-apiserver. Applying it again with another agentImage is an upgrade.
func installChart(ctx context.Context, cl client.Client, agentImage string) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	archive, err := gen.PackageChart(root + "/" + gen.ChartDir)
	if err != nil {
		return fmt.Errorf("packaging the chart: %w", err)
	}
	renderer, err := chartrenderer.NewForConfig(cluster.Net().Nodes()[0].RESTConfig())
	if err != nil {
		return err
	}
	repo, tag := splitRef(cluster.ImageRef("gardener-extension-kube-vip"))
	agentRepo, agentTag := splitRef(agentImage)
	values := map[string]any{
		"image":       map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		"agentImage":  map[string]any{"repository": agentRepo, "tag": agentTag},
		"logLevel":    "debug",
		"usablePorts": []any{18080, 18081},
		"gardener":    map[string]any{"selfHostedShootCluster": true},
	}
	chart, err := renderer.RenderArchive(archive, releaseName, releaseNamespace, values)
	if err != nil {
		return fmt.Errorf("rendering the chart: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}
	if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", releaseNamespace, err)
	}
	// The chart's pods use Gardener's PriorityClass, which gardenadm creates on a self-hosted
	// shoot before any extension (Gardener's value for gardener-system-900).
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gardener-system-900"}, Value: 999998900,
		Description: "PriorityClass for Gardener system components (as gardenadm creates it)"}
	if err := cl.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PriorityClass %s: %w", pc.Name, err)
	}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(chart.Manifest())), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decoding the rendered chart: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetKind() == "Deployment" {
			if obj, err = bootstrapMode(obj); err != nil {
				return err
			}
		}
		obj.SetManagedFields(nil)
		if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("e2e-chart"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// bootstrapMode makes the controller's Deployment what gardenadm runs: host network, and
// the in-cluster config on the node's own kube-apiserver.
func bootstrapMode(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d); err != nil {
		return nil, fmt.Errorf("decoding the Deployment: %w", err)
	}
	spec := &d.Spec.Template.Spec
	spec.HostNetwork = true
	spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	c := &spec.Containers[0]
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: fmt.Sprint(apiserverPort)})
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return nil, fmt.Errorf("encoding the Deployment: %w", err)
	}
	out := &unstructured.Unstructured{Object: u}
	out.SetAPIVersion("apps/v1")
	out.SetKind("Deployment")
	unstructured.RemoveNestedField(out.Object, "status")
	unstructured.RemoveNestedField(out.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(out.Object, "spec", "template", "metadata", "creationTimestamp")
	return out, nil
}

// splitRef splits an image reference at the tag.
func splitRef(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	return ref[:i], ref[i+1:]
}

// newExposure is the SelfHostedShootExposure as gardenadm creates it: every control-plane
// node as an endpoint, with the harness's VIP as vipAddress so that the test can watch it.
func newExposure() *extensionsv1alpha1.SelfHostedShootExposure {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: metav1.ObjectMeta{Name: exposureName, Namespace: framework.Namespace},
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{
				Type: framework.DefaultExposureType,
				ProviderConfig: &runtime.RawExtension{Raw: fmt.Appendf(nil,
					`{"apiVersion":"kube-vip.extensions.gardener.cloud/v1alpha1","kind":"ExposureConfig","vipAddress":%q,"agent":{"interface":%q}}`,
					cluster.Net().VIP(), netns.Interface)},
			},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: framework.Namespace, Name: framework.CloudProviderSecretName},
			Port:           apiserverPort,
		},
	}
	for _, n := range cluster.Net().Nodes() {
		exp.Spec.Endpoints = append(exp.Spec.Endpoints, extensionsv1alpha1.ControlPlaneEndpoint{
			NodeName: n.Name(), Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP().String()}},
		})
	}
	return exp
}

// exposed creates the exposure if it is not there and waits until it has Succeeded.
func exposed(t *testing.T, ctx context.Context) *extensionsv1alpha1.SelfHostedShootExposure {
	t.Helper()
	installed(t, ctx)
	cl, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	exp := newExposure()
	if err := cl.Create(ctx, exp); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the exposure: %v", err)
	}
	var last extensionsv1alpha1.SelfHostedShootExposure
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(exp), &last); err != nil {
			return false, nil //nolint:nilerr // retried
		}
		if le := last.Status.LastError; le != nil && slices.Contains(le.Codes, gardencorev1beta1.ErrorConfigurationProblem) {
			return false, fmt.Errorf("configuration problem: %s", le.Description)
		}
		lo := last.Status.LastOperation
		return lo != nil && lo.State == "Succeeded" && last.Status.ObservedGeneration == last.Generation && len(last.Status.Ingress) > 0, nil
	})
	if err != nil {
		t.Fatalf("the exposure did not succeed: %v; last operation %+v; controller log:\n%s\nagents:\n%s", err, last.Status.LastOperation, controllerLog(ctx), agentsReport(ctx))
	}
	return &last
}

// controllerLog is the end of the controller pod's log, for failure messages.
func controllerLog(ctx context.Context) string {
	pods, err := cluster.Client().CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + releaseName})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Sprintf("(no controller pod: %v)", err)
	}
	log, err := cluster.ContainerLog(&pods.Items[0], pods.Items[0].Spec.Containers[0].Name, 8<<10)
	if err != nil {
		return fmt.Sprintf("(log of %s: %v)", pods.Items[0].Name, err)
	}
	return log
}

// agentsReport is each agent pod's phase and the end of its log, for failure messages.
func agentsReport(ctx context.Context) string {
	pods, err := cluster.Client().CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: agentrollout.LabelAppName + "=" + agentrollout.Name})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Sprintf("(no agent pods: %v)", err)
	}
	var b strings.Builder
	for i := range pods.Items {
		p := &pods.Items[i]
		fmt.Fprintf(&b, "%s on %s: %s %v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		log, err := cluster.ContainerLog(p, p.Spec.Containers[0].Name, 2<<10)
		if err != nil {
			log = fmt.Sprintf("(log: %v)", err)
		}
		b.WriteString(log + "\n")
	}
	return b.String()
}

// taggedPorts are the Neutron ports of this cluster's identity.
func (e *extension) taggedPorts(ctx context.Context) ([]string, error) {
	list, err := e.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.TagExtension, openstack.ClusterTag(e.identity)}})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

// teardown deletes the exposure through the controller and then removes, as a fallback,
// whatever Neutron still holds for the identity; it stops the forwarder.
func (e *extension) teardown(ctx context.Context) error {
	var errs []error
	if cl, err := newClient(); err == nil {
		exp := newExposure()
		if err := cl.Delete(ctx, exp); err == nil {
			errs = append(errs, waitGone(ctx, cl, exp))
		}
	}
	if e.neutron != nil {
		ports, err := e.neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(e.identity)}})
		errs = append(errs, err)
		for _, p := range ports {
			errs = append(errs, fmt.Errorf("Neutron still had port %s of %s", p.ID, e.identity))
			fips, _ := e.neutron.FloatingIPsOfPort(ctx, p.ID)
			for _, f := range fips {
				_ = e.neutron.DeleteFloatingIP(ctx, f.ID)
			}
			_ = e.neutron.DeletePort(ctx, p.ID)
		}
	}
	if e.forward != nil {
		e.forward.Close()
	}
	return errors.Join(errs...)
}

func waitGone(ctx context.Context, cl client.Client, obj client.Object) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), nil
	})
}

// loopbackAddresses are the host:port of the given http URLs, all on loopback.
func loopbackAddresses(urls ...string) ([]string, error) {
	var out []string
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", s, err)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%s is not on loopback; the forwarder only bridges loopback addresses", s)
		}
		out = append(out, u.Host)
	}
	return out, nil
}

// loopbackForwarder listens on loopback addresses inside node namespaces and forwards each
// connection to the same address in the host namespace.
type loopbackForwarder struct {
	listeners []net.Listener
	wg        sync.WaitGroup
}

func forwardLoopback(ctx context.Context, nodes []*netns.Node, addrs []string) (*loopbackForwarder, error) {
	f := &loopbackForwarder{}
	for _, n := range nodes {
		for _, a := range addrs {
			l, err := n.Listen(ctx, "tcp", a)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("listening on %s in %s: %w", a, n.Name(), err)
			}
			f.listeners = append(f.listeners, l)
			f.wg.Add(1)
			go f.serve(l, a)
		}
	}
	return f, nil
}

func (f *loopbackForwarder) serve(l net.Listener, target string) {
	defer f.wg.Done()
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = in.Close() }()
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				return
			}
			defer func() { _ = out.Close() }()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(out, in)
				_ = out.(*net.TCPConn).CloseWrite()
				close(done)
			}()
			_, _ = io.Copy(in, out)
			_ = in.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}

// Close stops listening; open connections end with their peers.
func (f *loopbackForwarder) Close() {
	for _, l := range f.listeners {
		_ = l.Close()
	}
	f.wg.Wait()
}

// upgradeAgentImage upgrades the chart to another agent image, waits until the new
// controller pod has replaced the old one and then asks for a reconciliation as gardenlet
// does after an extension upgrade.
func upgradeAgentImage(t *testing.T, ctx context.Context, agentImage string) {
	t.Helper()
	cl, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	if err := installChart(ctx, cl, agentImage); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cluster.Client().AppsV1().Deployments(releaseNamespace).Get(ctx, releaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.Replicas == 1 && s.UpdatedReplicas == 1 && s.ReadyReplicas == 1, nil
	})
	if err != nil {
		t.Fatalf("the upgraded controller did not become Ready: %v", err)
	}
	exp := newExposure()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"gardener.cloud/operation":"reconcile"}}}`))
	if err := cl.Patch(ctx, exp, patch); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := cluster.Client().AppsV1().DaemonSets(framework.Namespace).Get(ctx, agentrollout.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		return ds.Spec.Template.Spec.Containers[0].Image == agentImage, nil
	})
	if err != nil {
		t.Fatalf("the controller did not roll the DaemonSet to %s: %v\n%s", agentImage, err, controllerLog(ctx))
	}
}
