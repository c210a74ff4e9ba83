// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"fmt"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/agentrollout"
	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// AgentDeployer rolls out the kube-vip-agent; agentrollout.Deployer implements it.
type AgentDeployer interface {
	Deploy(ctx context.Context, spec agentrollout.Spec) error
	// Delete removes the agent; gone is false while agent pods remain.
	Delete(ctx context.Context, namespace string) (gone bool, err error)
	// ForceDelete removes every object of the agent without waiting for its pods.
	ForceDelete(ctx context.Context, namespace string) error
	Status(ctx context.Context, namespace string) (*v1alpha1.AgentStatus, error)
}

// deployAgent applies the agent's objects; their state is read by checkFrontDoor.
func (a *Actuator) deployAgent(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, in *inputs, status *v1alpha1.ExposureStatus) error {
	image, err := a.agentImage(in.config.Agent)
	if err != nil {
		return err
	}
	spec := agentrollout.Spec{
		Namespace:      exp.Namespace,
		Implementation: v1alpha1.ImplementationOf(in.config.Agent),
		Image:          image,
		VIP:            status.VIPAddress,
		OtherVIPs:      otherVIPAddresses(status),
		APIServerPort:  exp.Spec.Port,
		Agent:          in.config.Agent,
	}
	if err := a.opts.Agent.Deploy(ctx, spec); err != nil {
		return fmt.Errorf("rolling out the %s agent: %w", spec.Implementation, err)
	}
	return nil
}

// otherVIPAddresses are the VIPs of the exposure's other IP families.
func otherVIPAddresses(status *v1alpha1.ExposureStatus) []string {
	var vips []string
	for _, v := range status.OtherVIPs {
		vips = append(vips, v.Address)
	}
	return vips
}

// agentImage is the image of the agent implementation the config chooses.
func (a *Actuator) agentImage(agent *v1alpha1.AgentConfig) (string, error) {
	if v1alpha1.ImplementationOf(agent) != v1alpha1.AgentImplementationKubeVIP {
		return a.opts.AgentImage, nil
	}
	if agent.Image != nil {
		return *agent.Image, nil
	}
	if a.opts.KubeVIPImage == "" {
		return "", configError("agent.image is required for implementation kube-vip: the extension is deployed without a default kube-vip image")
	}
	return a.opts.KubeVIPImage, nil
}
