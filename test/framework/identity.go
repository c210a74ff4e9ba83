// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	return setShootStatus(ctx, c, "technicalID", id, "the technical ID of the Cluster's shoot")
}

// SetShootUID sets status.uid of the shoot in the Cluster of Namespace, as a cluster made
// from a copy of another's first node (its /var/lib/gardenadm/shoot-uid) would have it.
func SetShootUID(ctx context.Context, c client.Client, uid string) error {
	return setShootStatus(ctx, c, "uid", uid, "the UID of the Cluster's shoot")
}

// setShootStatus sets one field of the status of the shoot in the Cluster of Namespace.
func setShootStatus(ctx context.Context, c client.Client, field, value, what string) error {
	return patchCluster(ctx, c, clusterShoot, what, func(shoot *map[string]any) error {
		status, _ := (*shoot)["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
		}
		status[field] = value
		(*shoot)["status"] = status
		return nil
	})
}

// SetShootAnnotation sets (value "": removes) an annotation of the shoot in the Cluster of
// Namespace, such as confirmation.gardener.cloud/force-deletion, which gardener's
// reconcilers read from the Cluster.
func SetShootAnnotation(ctx context.Context, c client.Client, key, value string) error {
	return patchCluster(ctx, c, clusterShoot, "the annotation "+key+" of the Cluster's shoot", func(shoot *gardencorev1beta1.Shoot) error {
		if value == "" {
			delete(shoot.Annotations, key)
			return nil
		}
		metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, key, value)
		return nil
	})
}

// SetCloudProfileConfig replaces the providerConfig of the CloudProfile in the Cluster (a
// provider-openstack CloudProfileConfig) and returns the one it replaced.
func SetCloudProfileConfig(ctx context.Context, c client.Client, config map[string]any) (map[string]any, error) {
	var old map[string]any
	err := patchCluster(ctx, c, clusterCloudProfile, "the providerConfig of the Cluster's CloudProfile", func(profile *map[string]any) error {
		spec, _ := (*profile)["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
		}
		old, _ = spec["providerConfig"].(map[string]any)
		spec["providerConfig"] = config
		(*profile)["spec"] = spec
		return nil
	})
	return old, err
}

// SetShootExposureProviderConfig sets (nil: removes) the exposure providerConfig of the
// control-plane worker pool of the shoot in the Cluster, where gardenadm users put it.
func SetShootExposureProviderConfig(ctx context.Context, c client.Client, providerConfig *runtime.RawExtension) error {
	return patchCluster(ctx, c, clusterShoot, "the exposure providerConfig of the Cluster's shoot", func(shoot *gardencorev1beta1.Shoot) error {
		pool := v1beta1helper.ControlPlaneWorkerPoolForShoot(shoot.Spec.Provider.Workers)
		if pool == nil || pool.ControlPlane == nil || pool.ControlPlane.Exposure == nil || pool.ControlPlane.Exposure.Extension == nil {
			return errors.New("the Cluster's shoot has no control-plane worker pool with an exposure extension")
		}
		pool.ControlPlane.Exposure.Extension.ProviderConfig = providerConfig
		return nil
	})
}

func clusterShoot(cluster *extensionsv1alpha1.Cluster) *runtime.RawExtension {
	return &cluster.Spec.Shoot
}

func clusterCloudProfile(cluster *extensionsv1alpha1.Cluster) *runtime.RawExtension {
	return &cluster.Spec.CloudProfile
}

// patchCluster decodes a part of the Cluster of Namespace (its shoot or CloudProfile) into
// a T, changes it and patches the Cluster with the result; what names the change in errors.
func patchCluster[T any](ctx context.Context, c client.Client, part func(*extensionsv1alpha1.Cluster) *runtime.RawExtension, what string, change func(*T) error) error {
	cluster := &extensionsv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: Namespace}, cluster); err != nil {
		return fmt.Errorf("reading the Cluster: %w", err)
	}
	obj := new(T)
	if err := json.Unmarshal(part(cluster).Raw, obj); err != nil {
		return fmt.Errorf("setting %s: decoding: %w", what, err)
	}
	if err := change(obj); err != nil {
		return err
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("setting %s: encoding: %w", what, err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	*part(cluster) = runtime.RawExtension{Raw: raw}
	if err := c.Patch(ctx, cluster, patch); err != nil {
		return fmt.Errorf("setting %s: %w", what, err)
	}
	return nil
}
