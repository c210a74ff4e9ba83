// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1helper "github.com/gardener/gardener/pkg/api/extensions/v1alpha1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/component"
	"github.com/gardener/gardener/pkg/component/extensions/selfhostedshootexposure"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
)

// Gardenadm drives a shoot's SelfHostedShootExposure with Gardener v1.150.0's own code, as
// `gardenadm init` does (botanist.DeploySelfHostedShootExposure): the Ready control-plane
// Nodes of the moment become spec.endpoints, the object is named after the shoot in
// kube-system with spec.port 443, and component.OpWait(...).Deploy creates it, marks it for
// reconciliation and waits until it is ready. Gardener writes no spec.providerConfig: the
// extension's configuration is the Shoot's (BootstrapOptions.ExposureProviderConfig).
type Gardenadm struct {
	// Client is the shoot's (gardenadm's) client.
	Client client.Client
	// ShootName names the exposure; default DefaultShootName.
	ShootName string
	// Type is the exposure type; default DefaultExposureType.
	Type string
	// Log receives the component's lines.
	Log logr.Logger
	// WaitInterval overrides Gardener's 5 s between reads while waiting (zero keeps it).
	WaitInterval time.Duration
}

// component is Gardener's deployer of the exposure, as the botanist builds it for a shoot
// with managed infrastructure (credentialsRef: the cloudprovider Secret).
func (g *Gardenadm) component(endpoints []extensionsv1alpha1.ControlPlaneEndpoint) *selfhostedshootexposure.SelfHostedShootExposure {
	name, typ := g.ShootName, g.Type
	if name == "" {
		name = DefaultShootName
	}
	if typ == "" {
		typ = DefaultExposureType
	}
	c := selfhostedshootexposure.New(g.Log, g.Client, clock.RealClock{}, &selfhostedshootexposure.Values{
		Namespace: Namespace,
		Name:      name,
		Type:      typ,
		CredentialsRef: &corev1.ObjectReference{
			APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Secret",
			Name: v1beta1constants.SecretNameCloudProvider, Namespace: Namespace,
		},
		Endpoints: endpoints,
	})
	if g.WaitInterval > 0 {
		c.WaitInterval = g.WaitInterval
	}
	return c
}

// Init is `gardenadm init`'s step: it lists the control-plane Nodes, keeps the Ready ones
// (gardenerutils.ControlPlaneEndpointsFromNodes), deploys the exposure and waits for it, and
// computes the DNS value of the shoot's kube-apiserver domain from status.ingress with
// extensionsv1alpha1helper.DNSValuesFromIngress (IPv4, the Shoot's default IP family).
// gardenadm computes it once; callers keep it.
func (g *Gardenadm) Init(ctx context.Context) ([]string, error) {
	// gardenadm runs its step once the node is Ready; a harness step that just restarted a
	// kube-apiserver or loaded images can find every Node briefly not Ready, so wait for one.
	var endpoints []extensionsv1alpha1.ControlPlaneEndpoint
	nodes := &corev1.NodeList{}
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, nodesReadyTimeout, true, func(ctx context.Context) (bool, error) {
		// A failed List or no Ready Node yet is retried; lastErr keeps it for the timeout.
		lastErr = g.Client.List(ctx, nodes, client.MatchingLabels{v1beta1constants.LabelNodeRoleControlPlane: ""})
		if lastErr == nil {
			endpoints, lastErr = gardenerutils.ControlPlaneEndpointsFromNodes(nodes.Items)
		}
		return lastErr == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("computing the control-plane endpoints: %w (Node conditions: %s)", lastErr, nodeConditions(nodes.Items))
	}
	c := g.component(endpoints)
	if err := g.waitPastLastUpdate(ctx, c.Values.Name); err != nil {
		return nil, err
	}
	if err := component.OpWait(c).Deploy(ctx); err != nil {
		return nil, fmt.Errorf("deploying the SelfHostedShootExposure with Gardener's component: %w", err)
	}
	values, _, err := extensionsv1alpha1helper.DNSValuesFromIngress(c.Ingress, []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv4})
	if err != nil {
		return nil, fmt.Errorf("the DNS value from the exposure's ingress: %w", err)
	}
	return values, nil
}

// waitPastLastUpdate waits until the clock is in a later second than the exposure's last
// operation. Gardener's readiness check compares the request's timestamp, truncated to the
// second, with that update, and the operation annotation is gone before the reconciliation
// starts: a request in the same second would take the previous result for the answer.
// gardenadm init runs once, far from any update; a test that runs it again at once must not
// read the earlier reconciliation as this one's.
func (g *Gardenadm) waitPastLastUpdate(ctx context.Context, name string) error {
	exp := &extensionsv1alpha1.SelfHostedShootExposure{}
	if err := g.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, exp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading the SelfHostedShootExposure before deploying it: %w", err)
	}
	lo := exp.Status.LastOperation
	if lo == nil {
		return nil
	}
	d := time.Until(lo.LastUpdateTime.Truncate(time.Second).Add(time.Second))
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// nodesReadyTimeout bounds Init's wait for a Ready control-plane Node.
const nodesReadyTimeout = 90 * time.Second

// nodeConditions lists each Node's conditions that are not as a healthy Node has them.
func nodeConditions(nodes []corev1.Node) string {
	var out []string
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if (c.Type == corev1.NodeReady) != (c.Status == corev1.ConditionTrue) {
				out = append(out, fmt.Sprintf("%s %s=%s (%s)", n.Name, c.Type, c.Status, c.Reason))
			}
		}
	}
	return strings.Join(out, "; ")
}

// Destroy deletes the exposure with Gardener's component and waits until it is gone.
func (g *Gardenadm) Destroy(ctx context.Context) error {
	c := g.component(nil)
	if err := c.Destroy(ctx); err != nil {
		return fmt.Errorf("deleting the SelfHostedShootExposure: %w", err)
	}
	if err := c.WaitCleanup(ctx); err != nil {
		return fmt.Errorf("waiting for the SelfHostedShootExposure to be gone: %w", err)
	}
	return nil
}
