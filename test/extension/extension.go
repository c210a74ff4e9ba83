// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package extension installs the extension on a cluster of real nodes (test/nodes) the way
// an operator's Gardener does on a self-hosted shoot: the Gardener CRDs and the objects
// gardenadm creates (the cloudprovider Secret, Cluster, Infrastructure with its status),
// then the Helm chart rendered with gardener's chartrenderer and the self-hosted values,
// so that the controller runs as a pod from the locally built image under the chart's
// RBAC (Controller). The exposure is gardenadm init's, made with Gardener v1.150.0's own
// code (framework.Gardenadm); its configuration is the Shoot's. `make e2e` and `make demo`
// share it; the dataplane tier's lifecycle hands its exposure over to a Controller.
package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
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
	// Controller is the chart's controller.
	*Controller
	routed bool
}

// Install installs the extension: the loopback bridge to Keystone and Neutron in every
// node, the Gardener CRDs (with the prometheus-operator's, as gardenadm installs them) and objects, and the chart with the cluster's agent image. On
// error the returned Extension (when not nil) holds what was started, for Teardown.
func Install(ctx context.Context, opts Options) (*Extension, error) {
	c := opts.Cluster
	e := &Extension{cluster: c, OpenStack: opts.OpenStack, TechnicalID: opts.TechnicalID, routed: opts.Routed}
	osEnv := opts.OpenStack
	factory := openstack.NewClientFactory(openstack.FactoryOptions{Metrics: openstack.NewMetrics(nil)})
	creds := &openstack.Credentials{DomainName: osEnv.DomainName, TenantName: osEnv.ProjectName, Username: osEnv.Username, Password: osEnv.Password}
	neutron, err := factory.Network(ctx, openstack.AuthConfig{Credentials: creds, AuthURL: osEnv.AuthURL, Region: osEnv.Region})
	if err != nil {
		return nil, fmt.Errorf("authenticating the test's Neutron client: %w", err)
	}
	e.Neutron = neutron
	cfg := c.Net().Nodes()[0].RESTConfig()
	paths, err := framework.SelfHostedShootCRDPaths()
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
	chart := ControllerOptions{Cluster: c, Client: e.Client, OpenStack: osEnv, Release: opts.Release}
	if opts.Release != nil {
		if err := opts.Release.Import(ctx, c); err != nil {
			return e, err
		}
	} else {
		chart.Images = ClusterImages(c)
	}
	e.Controller, err = StartController(ctx, chart)
	return e, err
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

// WaitAgentsReady waits until the agents' DaemonSet is rolled out with a Ready pod on
// every node.
func (e *Extension) WaitAgentsReady(ctx context.Context, timeout time.Duration) error {
	return e.cluster.WaitDaemonSetReady(ctx, framework.Namespace, agentrollout.Name, timeout)
}

// AgentPod is the agent pod on the node, or an error unless there is exactly one.
func (e *Extension) AgentPod(ctx context.Context, node string) (*corev1.Pod, error) {
	return e.cluster.PodOn(ctx, framework.Namespace, agentrollout.LabelAppName+"="+agentrollout.Name, node)
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
		log, err := e.cluster.ContainerLogFile(p, p.Spec.Containers[0].Name, 2<<10)
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
// the controller's forwarder.
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
	if e.Controller != nil {
		e.Close()
	}
	return errors.Join(errs...)
}
