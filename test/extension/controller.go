// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gardener/gardener/pkg/chartrenderer"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/utils/kubernetes/health"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// controllerSelector selects the chart's controller pods.
const controllerSelector = "app.kubernetes.io/name=" + ReleaseName

// Images are the images a chart release runs, as the chart's image values.
type Images struct {
	// Controller is the controller's image reference.
	Controller string
	// Agent is the agent image the controller deploys (--agent-image).
	Agent string
}

// ClusterImages are the controller and agent images the cluster built and imported.
func ClusterImages(c *nodes.Cluster) Images {
	return Images{Controller: c.ImageRef("gardener-extension-kube-vip"), Agent: c.ImageRef("kube-vip-agent")}
}

// ControllerOptions say which chart runs the controller and where.
type ControllerOptions struct {
	// Cluster is the running cluster of real nodes.
	Cluster *nodes.Cluster
	// Client is an admin client of the cluster with the Gardener types.
	Client client.Client
	// OpenStack is the local Keystone + Neutron that the cloudprovider Secret names.
	OpenStack framework.OpenStackEnv
	// Release, if set, is the chart archive; without Images its own image defaults hold.
	// Without it, the chart from the sources.
	Release *Release
	// Images, if set, are the chart's image values.
	Images Images
}

// Controller is the extension's controller as an operator runs it: the chart applied to the
// cluster, its pod in the host network of a node.
type Controller struct {
	cluster *nodes.Cluster
	client  client.Client
	release *Release
	forward *loopbackForwarder
}

// StartController applies the chart. The controller runs in a node's network namespace,
// Keystone and Neutron on the host's loopback: the same loopback addresses are forwarded in
// every current node, so that the authURL in the Secret and the endpoints of Keystone's
// catalog hold for the pod unchanged. On error the returned Controller (when not nil) holds
// the forwarder, for Close.
func StartController(ctx context.Context, opts ControllerOptions) (*Controller, error) {
	addrs, err := loopbackAddresses(opts.OpenStack.AuthURL, opts.OpenStack.NeutronURL)
	if err != nil {
		return nil, err
	}
	c := &Controller{cluster: opts.Cluster, client: opts.Client, release: opts.Release}
	if c.forward, err = forwardLoopback(ctx, opts.Cluster.Net().Nodes(), addrs); err != nil {
		return nil, err
	}
	return c, c.apply(ctx, opts.Images)
}

// Close stops the forwarder; the controller's pod stays.
func (c *Controller) Close() {
	if c.forward != nil {
		c.forward.Close()
	}
}

// apply renders the chart (the release's archive, else the sources packaged) with the
// values Gardener gives a self-hosted shoot's extension (selfHostedShootCluster,
// usablePorts) and the images, and applies it, as the gardenlet of gardenadm does with a
// ControllerDeployment. Its bootstrap mode then runs the pod in the host network; this
// cluster has no kube-proxy, so the in-cluster config is pointed at the node-local
// kube-apiserver. Applying it again with other images is an upgrade.
func (c *Controller) apply(ctx context.Context, images Images) error {
	var archive []byte
	if c.release != nil {
		b, err := os.ReadFile(c.release.Chart)
		if err != nil {
			return fmt.Errorf("reading the release's chart: %w", err)
		}
		archive = b
	} else {
		root, err := framework.RepoRoot()
		if err != nil {
			return err
		}
		if archive, err = gen.PackageChart(root + "/" + gen.ChartDir); err != nil {
			return fmt.Errorf("packaging the chart: %w", err)
		}
	}
	renderer, err := chartrenderer.NewForConfig(c.cluster.Net().RESTConfig())
	if err != nil {
		return err
	}
	values := map[string]any{
		"logLevel":    "debug",
		"usablePorts": []any{18080, 18081},
		"gardener":    map[string]any{"selfHostedShootCluster": true},
	}
	if images != (Images{}) {
		repo, tag := splitRef(images.Controller)
		agentRepo, agentTag := splitRef(images.Agent)
		maps.Copy(values, map[string]any{
			"image":      map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
			"agentImage": map[string]any{"repository": agentRepo, "tag": agentTag},
		})
	}
	chart, err := renderer.RenderArchive(archive, ReleaseName, ReleaseNamespace, values)
	if err != nil {
		return fmt.Errorf("rendering the chart: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ReleaseNamespace}}
	if err := c.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ReleaseNamespace, err)
	}
	// The chart's pods use Gardener's PriorityClass, which gardenadm creates on a self-hosted
	// shoot before any extension (Gardener's value for gardener-system-900).
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gardener-system-900"}, Value: 999998900,
		Description: "PriorityClass for Gardener system components (as gardenadm creates it)"}
	if err := c.client.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
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
			if obj, err = bootstrapMode(obj, c.cluster.Net().APIServerPort()); err != nil {
				return err
			}
		}
		obj.SetManagedFields(nil)
		if err := c.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("e2e-chart"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// bootstrapMode makes the controller's Deployment what gardenadm runs: host network, and
// the in-cluster config on the node's own kube-apiserver.
func bootstrapMode(obj *unstructured.Unstructured, apiServerPort uint16) (*unstructured.Unstructured, error) {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d); err != nil {
		return nil, fmt.Errorf("decoding the Deployment: %w", err)
	}
	spec := &d.Spec.Template.Spec
	spec.HostNetwork = true
	spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	ctr := &spec.Containers[0]
	ctr.Env = append(ctr.Env,
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: fmt.Sprint(apiServerPort)})
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

// Upgrade upgrades the chart to other images, waits until the only controller pod left runs
// the new controller image and is Ready, asks for a reconciliation as gardenlet does after
// an extension upgrade, and waits until the controller has rolled the DaemonSet's template
// to the new agent image.
func (c *Controller) Upgrade(ctx context.Context, images Images) error {
	if err := c.apply(ctx, images); err != nil {
		return err
	}
	if err := c.WaitRunning(ctx, images.Controller, 2*time.Minute); err != nil {
		return fmt.Errorf("the upgraded controller: %w", err)
	}
	if err := c.Reconcile(ctx); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := c.cluster.Client().AppsV1().DaemonSets(framework.Namespace).Get(ctx, agentrollout.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		return ds.Spec.Template.Spec.Containers[0].Image == images.Agent, nil
	})
	if err != nil {
		return fmt.Errorf("the controller did not roll the DaemonSet to %s: %w", images.Agent, err)
	}
	return nil
}

// WaitRunning waits until the Deployment is rolled out and its only pod, the old ones gone,
// runs image and is Ready: from then on no older controller can take the leader election
// back.
func (c *Controller) WaitRunning(ctx context.Context, image string, timeout time.Duration) error {
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := c.cluster.Client().AppsV1().Deployments(ReleaseNamespace).Get(ctx, ReleaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		if s := d.Status; s.ObservedGeneration != d.Generation || s.Replicas != 1 || s.UpdatedReplicas != 1 || s.ReadyReplicas != 1 {
			return false, nil
		}
		list, err := c.cluster.Client().CoreV1().Pods(ReleaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: controllerSelector})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		pods = list.Items
		return len(pods) == 1 && pods[0].Spec.Containers[0].Image == image && health.IsPodReady(&pods[0]), nil
	})
	if err != nil {
		var now []string
		for _, p := range pods {
			now = append(now, fmt.Sprintf("%s on %s (%s, ready %v)", p.Name, p.Spec.NodeName, p.Spec.Containers[0].Image, health.IsPodReady(&p)))
		}
		return fmt.Errorf("want one Ready pod with %s, have %v: %w", image, now, err)
	}
	return nil
}

// Reconcile asks for a reconciliation of the exposure, as gardenlet does after an
// extension upgrade.
func (c *Controller) Reconcile(ctx context.Context) error {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, Name: ExposureName}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"gardener.cloud/operation":"reconcile"}}}`))
	return c.client.Patch(ctx, exp, patch)
}

// ControllerLog is the end of the controller pod's log, for failure messages.
func (c *Controller) ControllerLog(ctx context.Context) string {
	pods, err := c.cluster.Client().CoreV1().Pods(ReleaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: controllerSelector})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Sprintf("(no controller pod: %v)", err)
	}
	log, err := c.cluster.ContainerLogFile(&pods.Items[0], pods.Items[0].Spec.Containers[0].Name, 8<<10)
	if err != nil {
		return fmt.Sprintf("(log of %s: %v)", pods.Items[0].Name, err)
	}
	return log
}

// Calls are the OpenStack calls of each running controller pod so far, read from its
// metrics endpoint (the chart's metrics port, in the host network of its node) through the
// node's network namespace.
func (c *Controller) Calls(ctx context.Context) (map[types.UID]openstack.Snapshot, error) {
	pods, err := c.cluster.Client().CoreV1().Pods(ReleaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: controllerSelector})
	if err != nil {
		return nil, err
	}
	calls := map[types.UID]openstack.Snapshot{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		s, err := c.podCalls(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("the OpenStack calls of %s: %w", p.Name, err)
		}
		calls[p.UID] = s
	}
	return calls, nil
}

func (c *Controller) podCalls(ctx context.Context, p *corev1.Pod) (openstack.Snapshot, error) {
	n := c.cluster.Node(p.Spec.NodeName)
	if n == nil {
		return nil, fmt.Errorf("no node %s", p.Spec.NodeName)
	}
	port := 0
	for _, cp := range p.Spec.Containers[0].Ports {
		if cp.Name == "metrics" {
			port = int(cp.ContainerPort)
		}
	}
	if port == 0 {
		return nil, errors.New("no metrics port")
	}
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := n.HTTPClient(5*time.Second, &http.Transport{}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return openstack.SnapshotOf(fams[openstack.MetricRequestsTotal]), nil
}
