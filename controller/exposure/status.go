// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// DecodeStatus reads the ExposureStatus from status.providerStatus; none gives an empty
// status.
func DecodeStatus(exp *extensionsv1alpha1.SelfHostedShootExposure) (*v1alpha1.ExposureStatus, error) {
	status := &v1alpha1.ExposureStatus{}
	raw := exp.Status.ProviderStatus
	if raw == nil {
		return status, nil
	}
	if raw.Object != nil {
		if s, ok := raw.Object.(*v1alpha1.ExposureStatus); ok {
			return s.DeepCopy(), nil
		}
	}
	if len(raw.Raw) == 0 {
		return status, nil
	}
	if err := json.Unmarshal(raw.Raw, status); err != nil {
		return nil, fmt.Errorf("decoding status.providerStatus: %w", err)
	}
	return status, nil
}

func encodeStatus(status *v1alpha1.ExposureStatus) (*runtime.RawExtension, error) {
	status.APIVersion = v1alpha1.SchemeGroupVersion.String()
	status.Kind = "ExposureStatus"
	data, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encoding status.providerStatus: %w", err)
	}
	return &runtime.RawExtension{Raw: data}, nil
}

// patchStatus writes status.providerStatus when it differs from what the object has.
func (a *Actuator) patchStatus(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus) error {
	current, err := DecodeStatus(exp)
	if err == nil {
		current.TypeMeta = status.TypeMeta
		if equality.Semantic.DeepEqual(current, status) {
			return nil
		}
	}
	raw, err := encodeStatus(status)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(exp.DeepCopy())
	exp.Status.ProviderStatus = raw
	if err := a.client.Status().Patch(ctx, exp, patch); err != nil {
		return fmt.Errorf("writing status.providerStatus: %w", err)
	}
	return nil
}
