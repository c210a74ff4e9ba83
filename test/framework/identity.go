// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
)

// UniqueTechnicalID returns prefix followed by eight random hex digits.
func UniqueTechnicalID(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// SetTechnicalID sets status.technicalID of the shoot in the Cluster of Namespace. The
// controller names and tags its Neutron resources after it, so a fresh ID keeps the
// resources of one test apart from those of tests sharing the same Neutron.
func SetTechnicalID(ctx context.Context, c client.Client, id string) error {
	cluster := &extensionsv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: Namespace}, cluster); err != nil {
		return fmt.Errorf("reading the Cluster: %w", err)
	}
	shoot := map[string]any{}
	if err := json.Unmarshal(cluster.Spec.Shoot.Raw, &shoot); err != nil {
		return fmt.Errorf("decoding the Cluster's shoot: %w", err)
	}
	status, _ := shoot["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
	}
	status["technicalID"] = id
	shoot["status"] = status
	raw, err := json.Marshal(shoot)
	if err != nil {
		return fmt.Errorf("encoding the Cluster's shoot: %w", err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Spec.Shoot = runtime.RawExtension{Raw: raw}
	if err := c.Patch(ctx, cluster, patch); err != nil {
		return fmt.Errorf("setting the technical ID in the Cluster: %w", err)
	}
	return nil
}

// SetCloudProfileConfig replaces the providerConfig of the CloudProfile in the Cluster (a
// provider-openstack CloudProfileConfig) and returns the one it replaced.
func SetCloudProfileConfig(ctx context.Context, c client.Client, config map[string]any) (map[string]any, error) {
	cluster := &extensionsv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: Namespace}, cluster); err != nil {
		return nil, fmt.Errorf("reading the Cluster: %w", err)
	}
	profile := map[string]any{}
	if err := json.Unmarshal(cluster.Spec.CloudProfile.Raw, &profile); err != nil {
		return nil, fmt.Errorf("decoding the Cluster's CloudProfile: %w", err)
	}
	spec, _ := profile["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	old, _ := spec["providerConfig"].(map[string]any)
	spec["providerConfig"] = config
	profile["spec"] = spec
	raw, err := json.Marshal(profile)
	if err != nil {
		return nil, fmt.Errorf("encoding the Cluster's CloudProfile: %w", err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Spec.CloudProfile = runtime.RawExtension{Raw: raw}
	if err := c.Patch(ctx, cluster, patch); err != nil {
		return nil, fmt.Errorf("setting the CloudProfile's providerConfig in the Cluster: %w", err)
	}
	return old, nil
}

// SetShootExposureProviderConfig sets (nil: removes) the exposure providerConfig of the
// control-plane worker pool of the shoot in the Cluster, where gardenadm users put it.
func SetShootExposureProviderConfig(ctx context.Context, c client.Client, providerConfig *runtime.RawExtension) error {
	cluster := &extensionsv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: Namespace}, cluster); err != nil {
		return fmt.Errorf("reading the Cluster: %w", err)
	}
	shoot := &gardencorev1beta1.Shoot{}
	if err := json.Unmarshal(cluster.Spec.Shoot.Raw, shoot); err != nil {
		return fmt.Errorf("decoding the Cluster's shoot: %w", err)
	}
	pool := v1beta1helper.ControlPlaneWorkerPoolForShoot(shoot.Spec.Provider.Workers)
	if pool == nil || pool.ControlPlane == nil || pool.ControlPlane.Exposure == nil || pool.ControlPlane.Exposure.Extension == nil {
		return errors.New("the Cluster's shoot has no control-plane worker pool with an exposure extension")
	}
	pool.ControlPlane.Exposure.Extension.ProviderConfig = providerConfig
	raw, err := json.Marshal(shoot)
	if err != nil {
		return fmt.Errorf("encoding the Cluster's shoot: %w", err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Spec.Shoot = runtime.RawExtension{Raw: raw}
	if err := c.Patch(ctx, cluster, patch); err != nil {
		return fmt.Errorf("setting the exposure providerConfig of the Cluster's shoot: %w", err)
	}
	return nil
}
