// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package extension installs the extension on a cluster of real nodes (test/nodes) the way
// an operator's Gardener does on a self-hosted shoot: the Gardener CRDs and the objects
// gardenadm creates (the cloudprovider Secret, Cluster, Infrastructure with its status),
// then the Helm chart rendered with gardener's chartrenderer and the self-hosted values,
// so that the controller runs as a pod from the locally built image under the chart's
// RBAC. The exposure is gardenadm init's, made with Gardener v1.150.0's own code
// (framework.Gardenadm); its configuration is the Shoot's. `make e2e` and `make demo` share it.
package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/chartrenderer"
	"github.com/go-logr/logr"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
	"github.com/gardener/gardener-extension-kube-vip/test/netns"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

const (
	// ReleaseName names the chart's objects, as the ControllerDeployment would.
	ReleaseName = "gardener-extension-kube-vip"
	// ReleaseNamespace is where the controller runs: gardenlet installs every extension in
	// a namespace of its own (extension-<name>), apart from kube-system that it serves.
	ReleaseNamespace = "extension-kube-vip"
	// ExposureName is the exposure gardenadm creates for the shoot: the shoot's name.
	ExposureName = framework.DefaultShootName
)

// Options say where to install the extension.
type Options struct {
	// Cluster is the running cluster of real nodes.
	Cluster *nodes.Cluster
	// OpenStack is the local Keystone + Neutron.
	OpenStack framework.OpenStackEnv
	// TechnicalID is the shoot's technical ID in the Cluster: it names and tags the
	// Neutron resources apart from those of others sharing the OpenStack.
	TechnicalID string
	// Log receives the lines of Gardener's exposure component.
	Log logr.Logger
	// Release, if set, is what the extension is installed from, as an operator does: its
	// images imported into the nodes' containerd and its chart archive with the chart's own
	// image defaults. Without it, the chart from the sources with the cluster's images.
	Release *Release
	// Routed says that a Neutron router carries the floating IP to the nodes (hack/dataplane.sh),
	// so the controller proves the published address as in production. Without a router
	// nothing here answers on the floating IP, and the Shoot sets probeFloatingIP: false.
	Routed bool
}

// Extension is the installed extension.
type Extension struct {
	cluster *nodes.Cluster
	// OpenStack is the local Keystone + Neutron.
	OpenStack framework.OpenStackEnv
	// Neutron is a client of the test's own (not counted in the controller's metrics).
	Neutron *openstack.Network
	// TechnicalID tags the exposure's Neutron resources.
	TechnicalID string
	// Client is an admin client of the first node's kube-apiserver with the Gardener types.
	Client client.Client
	// Gardenadm deploys, re-deploys and destroys the exposure with Gardener's code.
	Gardenadm *framework.Gardenadm
	forward   *loopbackForwarder
	release   *Release
	routed    bool
}

// Install installs the extension: the loopback bridge to Keystone and Neutron in every
// node, the Gardener CRDs and objects, and the chart with the cluster's agent image. On
// error the returned Extension (when not nil) holds what was started, for Teardown.
func Install(ctx context.Context, opts Options) (*Extension, error) {
	c := opts.Cluster
	e := &Extension{cluster: c, OpenStack: opts.OpenStack, TechnicalID: opts.TechnicalID, release: opts.Release, routed: opts.Routed}
	osEnv := opts.OpenStack
	factory := openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)})
	creds := &openstack.Credentials{DomainName: osEnv.DomainName, TenantName: osEnv.ProjectName, Username: osEnv.Username, Password: osEnv.Password}
	neutron, err := factory.Network(ctx, openstack.AuthConfig{Credentials: creds, AuthURL: osEnv.AuthURL, Region: osEnv.Region})
	if err != nil {
		return nil, fmt.Errorf("authenticating the test's Neutron client: %w", err)
	}
	e.Neutron = neutron
	// The controller runs in a node's network namespace, Keystone and Neutron on the host's
	// loopback: forward the same loopback addresses in every node, so that the authURL in
	// the Secret and the endpoints of Keystone's catalog hold for the pod unchanged.
	addrs, err := loopbackAddresses(osEnv.AuthURL, osEnv.NeutronURL)
	if err != nil {
		return nil, err
	}
	if e.forward, err = forwardLoopback(ctx, c.Net().Nodes(), addrs); err != nil {
		return nil, err
	}
	cfg := c.Net().Nodes()[0].RESTConfig()
	paths, err := framework.GardenerCRDPaths()
	if err != nil {
		return e, err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return e, fmt.Errorf("installing the Gardener CRDs: %w", err)
	}
	scheme, err := framework.NewScheme()
	if err != nil {
		return e, err
	}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return e, err
	}
	bootstrap := osEnv.BootstrapOptions(framework.ApplicationCredential)
	if bootstrap.ExposureProviderConfig, err = ExposureConfig(c, "", opts.Routed); err != nil {
		return e, err
	}
	if err := framework.Bootstrap(ctx, e.Client, bootstrap); err != nil {
		return e, fmt.Errorf("creating the Gardener objects: %w", err)
	}
	if err := framework.SetTechnicalID(ctx, e.Client, e.TechnicalID); err != nil {
		return e, err
	}
	// Gardener's 5 s between reads while it waits would only slow the tests down.
	e.Gardenadm = &framework.Gardenadm{Client: e.Client, Log: opts.Log, WaitInterval: time.Second}
	if opts.Release != nil {
		if err := opts.Release.Import(ctx, c); err != nil {
			return e, err
		}
		return e, e.applyChart(ctx, nil)
	}
	if err := e.InstallChart(ctx, c.ImageRef("kube-vip-agent")); err != nil {
		return e, err
	}
	return e, nil
}

// ExposureConfig is the Shoot's exposure providerConfig for the cluster: its VIP (the
// serving certificates carry it), the nodes' interface, and the agent implementation
// (empty: the default); without a router to the floating IP (routed false), the opt-out of
// its probe.
func ExposureConfig(c *nodes.Cluster, implementation v1alpha1.AgentImplementation, routed bool) (*runtime.RawExtension, error) {
	config := &v1alpha1.ExposureConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "ExposureConfig"},
		VIPAddress: ptr.To(c.Net().VIP().String()),
		Agent:      &v1alpha1.AgentConfig{Interface: ptr.To(netns.Interface)},
	}
	if implementation != "" {
		config.Agent.Implementation = &implementation
	}
	if !routed {
		config.ProbeFloatingIP = ptr.To(false)
	}
	// The Shoot goes into the Cluster as JSON, and a RawExtension encodes only its Raw.
	raw, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("encoding the exposure providerConfig: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// Init runs gardenadm init's step (Gardener's code, framework.Gardenadm) and returns the
// one DNS value it computed for the shoot's kube-apiserver domain.
func (e *Extension) Init(ctx context.Context) (string, error) {
	values, err := e.Gardenadm.Init(ctx)
	if err != nil {
		return "", err
	}
	if len(values) != 1 {
		return "", fmt.Errorf("gardenadm init computed the DNS values %v, want one", values)
	}
	return values[0], nil
}

// Configure sets the Shoot's exposure providerConfig (implementation empty: the default)
// and runs gardenadm init's step again, as an operator changes the configuration.
func (e *Extension) Configure(ctx context.Context, implementation v1alpha1.AgentImplementation) error {
	config, err := ExposureConfig(e.cluster, implementation, e.routed)
	if err != nil {
		return err
	}
	if err := framework.SetShootExposureProviderConfig(ctx, e.Client, config); err != nil {
		return err
	}
	_, err = e.Init(ctx)
	return err
}

// Exposure reads the exposure Gardener created.
func (e *Extension) Exposure(ctx context.Context) (*extensionsv1alpha1.SelfHostedShootExposure, error) {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: framework.Namespace, Name: ExposureName}, exp); err != nil {
		return nil, err
	}
	return exp, nil
}

// InstallChart renders the chart with the values Gardener gives a self-hosted shoot's
// extension (selfHostedShootCluster, usablePorts) and applies it, as the gardenlet of
// gardenadm does with a ControllerDeployment. Its bootstrap mode then runs the pod in the
// host network; this cluster has no kube-proxy, so the in-cluster config is pointed at the
// node-local kube-apiserver. Applying it again with another agentImage is an upgrade.
func (e *Extension) InstallChart(ctx context.Context, agentImage string) error {
	repo, tag := splitRef(e.cluster.ImageRef("gardener-extension-kube-vip"))
	agentRepo, agentTag := splitRef(agentImage)
	return e.applyChart(ctx, map[string]any{
		"image":      map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		"agentImage": map[string]any{"repository": agentRepo, "tag": agentTag},
	})
}

// applyChart renders the chart (the release's archive, else the sources packaged) with the
// self-hosted values plus the given ones, and applies it.
func (e *Extension) applyChart(ctx context.Context, images map[string]any) error {
	var archive []byte
	if e.release != nil {
		b, err := os.ReadFile(e.release.Chart)
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
	renderer, err := chartrenderer.NewForConfig(e.cluster.Net().Nodes()[0].RESTConfig())
	if err != nil {
		return err
	}
	values := map[string]any{
		"logLevel":    "debug",
		"usablePorts": []any{18080, 18081},
		"gardener":    map[string]any{"selfHostedShootCluster": true},
	}
	maps.Copy(values, images)
	chart, err := renderer.RenderArchive(archive, ReleaseName, ReleaseNamespace, values)
	if err != nil {
		return fmt.Errorf("rendering the chart: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ReleaseNamespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ReleaseNamespace, err)
	}
	// The chart's pods use Gardener's PriorityClass, which gardenadm creates on a self-hosted
	// shoot before any extension (Gardener's value for gardener-system-900).
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gardener-system-900"}, Value: 999998900,
		Description: "PriorityClass for Gardener system components (as gardenadm creates it)"}
	if err := e.Client.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
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
			if obj, err = bootstrapMode(obj, e.cluster.Net().APIServerPort()); err != nil {
				return err
			}
		}
		obj.SetManagedFields(nil)
		if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("e2e-chart"), client.ForceOwnership); err != nil {
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
	c := &spec.Containers[0]
	c.Env = append(c.Env,
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

// WaitSucceeded waits until the exposure has Succeeded for its current generation with an
// ingress, and returns it. A configuration problem ends the wait at once. seen, when not
// nil, is called with each new last operation.
func (e *Extension) WaitSucceeded(ctx context.Context, timeout time.Duration, seen func(*gardencorev1beta1.LastOperation)) (*extensionsv1alpha1.SelfHostedShootExposure, error) {
	key := client.ObjectKey{Namespace: framework.Namespace, Name: ExposureName}
	var last extensionsv1alpha1.SelfHostedShootExposure
	var lastOp gardencorev1beta1.LastOperation
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, key, &last); err != nil {
			return false, nil //nolint:nilerr // retried
		}
		lo := last.Status.LastOperation
		if lo != nil && seen != nil && (lo.State != lastOp.State || lo.Description != lastOp.Description) {
			seen(lo)
			lastOp = *lo
		}
		if le := last.Status.LastError; le != nil && slices.Contains(le.Codes, gardencorev1beta1.ErrorConfigurationProblem) {
			return false, fmt.Errorf("configuration problem: %s", le.Description)
		}
		return lo != nil && lo.State == gardencorev1beta1.LastOperationStateSucceeded &&
			last.Status.ObservedGeneration == last.Generation && len(last.Status.Ingress) > 0, nil
	})
	if err != nil {
		return &last, fmt.Errorf("the exposure did not succeed (last operation %+v): %w", last.Status.LastOperation, err)
	}
	return &last, nil
}

// Reconcile asks for a reconciliation of the exposure, as gardenlet does after an
// extension upgrade.
func (e *Extension) Reconcile(ctx context.Context) error {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"gardener.cloud/operation":"reconcile"}}}`))
	exp, err := e.Exposure(ctx)
	if err != nil {
		return err
	}
	return e.Client.Patch(ctx, exp, patch)
}

// WaitAgentsReady waits until the agents' DaemonSet is rolled out with a Ready pod on
// every node.
func (e *Extension) WaitAgentsReady(ctx context.Context, timeout time.Duration) error {
	return e.cluster.WaitDaemonSetReady(ctx, framework.Namespace, agentrollout.Name, timeout)
}

// AgentPod is the agent pod on the node, or an error unless there is exactly one.
func (e *Extension) AgentPod(ctx context.Context, node string) (*corev1.Pod, error) {
	return e.cluster.PodOn(ctx, framework.Namespace, agentrollout.LabelAppName+"="+agentrollout.Name, node)
}

// UpgradeAgentImage upgrades the chart to another agent image, waits until the new
// controller pod has replaced the old one, asks for a reconciliation as gardenlet does
// after an extension upgrade, and waits until the controller has rolled the DaemonSet's
// template to the image.
func (e *Extension) UpgradeAgentImage(ctx context.Context, agentImage string) error {
	if err := e.InstallChart(ctx, agentImage); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := e.cluster.Client().AppsV1().Deployments(ReleaseNamespace).Get(ctx, ReleaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.Replicas == 1 && s.UpdatedReplicas == 1 && s.ReadyReplicas == 1, nil
	})
	if err != nil {
		return fmt.Errorf("the upgraded controller did not become Ready: %w", err)
	}
	if err := e.Reconcile(ctx); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := e.cluster.Client().AppsV1().DaemonSets(framework.Namespace).Get(ctx, agentrollout.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		return ds.Spec.Template.Spec.Containers[0].Image == agentImage, nil
	})
	if err != nil {
		return fmt.Errorf("the controller did not roll the DaemonSet to %s: %w", agentImage, err)
	}
	return nil
}

// ControllerLog is the end of the controller pod's log, for failure messages.
func (e *Extension) ControllerLog(ctx context.Context) string {
	pods, err := e.cluster.Client().CoreV1().Pods(ReleaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + ReleaseName})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Sprintf("(no controller pod: %v)", err)
	}
	log, err := e.cluster.ContainerLog(&pods.Items[0], pods.Items[0].Spec.Containers[0].Name, 8<<10)
	if err != nil {
		return fmt.Sprintf("(log of %s: %v)", pods.Items[0].Name, err)
	}
	return log
}

// AgentsReport is each agent pod's phase and the end of its log, for failure messages.
func (e *Extension) AgentsReport(ctx context.Context) string {
	pods, err := e.cluster.Client().CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: agentrollout.LabelAppName + "=" + agentrollout.Name})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Sprintf("(no agent pods: %v)", err)
	}
	var b strings.Builder
	for i := range pods.Items {
		p := &pods.Items[i]
		fmt.Fprintf(&b, "%s on %s: %s %v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		log, err := e.cluster.ContainerLog(p, p.Spec.Containers[0].Name, 2<<10)
		if err != nil {
			log = fmt.Sprintf("(log: %v)", err)
		}
		b.WriteString(log + "\n")
	}
	return b.String()
}

// TaggedPorts are the Neutron ports tagged with the technical ID.
func (e *Extension) TaggedPorts(ctx context.Context) ([]string, error) {
	list, err := e.Neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.TagExtension, openstack.ClusterTag(e.TechnicalID)}})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

// DeleteExposure deletes the exposure with Gardener's code (as gardenadm's destroy would)
// and waits until the controller has finished.
func (e *Extension) DeleteExposure(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return e.Gardenadm.Destroy(ctx)
}

// Teardown deletes the exposure through the controller and then removes, as a fallback,
// whatever Neutron still holds for the technical ID, reporting it as an error; it stops
// the forwarder.
func (e *Extension) Teardown(ctx context.Context) error {
	var errs []error
	if e.Gardenadm != nil {
		if err := e.DeleteExposure(ctx, 2*time.Minute); err != nil {
			errs = append(errs, fmt.Errorf("deleting the exposure: %w", err))
		}
	}
	if e.Neutron != nil {
		ports, err := e.Neutron.ListPorts(ctx, openstack.PortFilter{Tags: []string{openstack.ClusterTag(e.TechnicalID)}})
		errs = append(errs, err)
		for _, p := range ports {
			errs = append(errs, fmt.Errorf("neutron still had port %s of %s", p.ID, e.TechnicalID))
			fips, _ := e.Neutron.FloatingIPsOfPort(ctx, p.ID)
			for _, f := range fips {
				_ = e.Neutron.DeleteFloatingIP(ctx, f.ID)
			}
			_ = e.Neutron.DeletePort(ctx, p.ID)
		}
	}
	if e.forward != nil {
		e.forward.Close()
	}
	return errors.Join(errs...)
}
