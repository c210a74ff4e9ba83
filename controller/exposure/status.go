// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

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
