// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"encoding/json"
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeSubnet6CIDR is the CIDR of the node network's IPv6 subnet that hack/openstack.sh
// provisions.
const NodeSubnet6CIDR = "2001:2:0:10::/64"

// SetIPFamilies sets spec.networking.ipFamilies of the shoot in the Cluster of Namespace, in
// the given order; nil removes them (an IPv4 shoot).
func SetIPFamilies(ctx context.Context, c client.Client, families []gardencorev1beta1.IPFamily) error {
	cluster := &extensionsv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: Namespace}, cluster); err != nil {
		return err
	}
	shoot := map[string]any{}
	if err := json.Unmarshal(cluster.Spec.Shoot.Raw, &shoot); err != nil {
		return err
	}
	spec, _ := shoot["spec"].(map[string]any)
	if spec == nil {
		return fmt.Errorf("the Cluster %s has a shoot without spec", Namespace)
	}
	networking, _ := spec["networking"].(map[string]any)
	if networking == nil {
		networking = map[string]any{}
	}
	if families == nil {
		delete(networking, "ipFamilies")
	} else {
		networking["ipFamilies"] = families
	}
	spec["networking"] = networking
	raw, err := json.Marshal(shoot)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Spec.Shoot = runtime.RawExtension{Raw: raw}
	if err := c.Patch(ctx, cluster, patch); err != nil {
		return fmt.Errorf("setting the shoot's ipFamilies to %v: %w", families, err)
	}
	return nil
}

// AddInfrastructureSubnet adds a subnet to networks.subnets of the one Infrastructure's
// status in Namespace, as provider-openstack reports a dual-stack shoot's IPv6 node subnet
// (purpose nodes-ipv6). restore puts the status back as it was.
func AddInfrastructureSubnet(ctx context.Context, c client.Client, purpose, id, cidr string) (restore func(context.Context) error, err error) {
	list := &extensionsv1alpha1.InfrastructureList{}
	if err := c.List(ctx, list, client.InNamespace(Namespace)); err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("want one Infrastructure in %s, found %d", Namespace, len(list.Items))
	}
	infra := &list.Items[0]
	if infra.Status.ProviderStatus == nil {
		return nil, fmt.Errorf("the Infrastructure %s has no providerStatus", infra.Name)
	}
	saved := infra.Status.ProviderStatus.DeepCopy()
	status := map[string]any{}
	if err := json.Unmarshal(saved.Raw, &status); err != nil {
		return nil, err
	}
	networks, _ := status["networks"].(map[string]any)
	if networks == nil {
		return nil, fmt.Errorf("the Infrastructure %s reports no networks", infra.Name)
	}
	subnets, _ := networks["subnets"].([]any)
	networks["subnets"] = append(subnets, map[string]any{"purpose": purpose, "id": id, "cidr": cidr})
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, err
	}
	set := func(ctx context.Context, raw *runtime.RawExtension) error {
		current := &extensionsv1alpha1.Infrastructure{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(infra), current); err != nil {
			return err
		}
		patch := client.MergeFrom(current.DeepCopy())
		current.Status.ProviderStatus = raw
		return c.Status().Patch(ctx, current, patch)
	}
	if err := set(ctx, &runtime.RawExtension{Raw: raw}); err != nil {
		return nil, fmt.Errorf("adding the subnet %s to the Infrastructure's status: %w", id, err)
	}
	return func(ctx context.Context) error { return set(ctx, saved) }, nil
}
