// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
)

// This file holds what the actuator adds to the rules of package networking: which
// exposures are live, and which address the exposure reports.

// exposureOwning returns namespace/name of the SelfHostedShootExposure in namespace whose
// UID, or recorded owner, is uid; "" when there is none. It asks the API, not the cache:
// an exposure that has just taken a lost front door over recorded its owner before the
// claim lock was released, and the next claimant's cache may not show that yet. The read
// stays in the exposure's namespace, the only one the chart's Role lets it list.
func (a *Actuator) exposureOwning(ctx context.Context, namespace, uid string) (string, error) {
	list := &extensionsv1alpha1.SelfHostedShootExposureList{}
	if err := a.reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return "", fmt.Errorf("listing the SelfHostedShootExposures: %w", err)
	}
	for i := range list.Items {
		x := &list.Items[i]
		if string(x.UID) == uid {
			return client.ObjectKeyFromObject(x).String(), nil
		}
		if s, err := DecodeStatus(x); err == nil && s.Owner == uid {
			return client.ObjectKeyFromObject(x).String(), nil
		}
	}
	return "", nil
}

// ingressOf is the address to report: the recorded front door once there is one, else the
// floating IP, else (internal only) the VIP. A public exposure never reports its private
// VIP, also not while its floating IP is still missing.
func ingressOf(status *v1alpha1.ExposureStatus, internalOnly bool) string {
	switch {
	case status == nil:
		return ""
	case status.Ingress != "":
		return status.Ingress
	case status.FloatingIPAddress != "":
		return status.FloatingIPAddress
	case internalOnly && status.PortID != "":
		return status.VIPAddress
	}
	return ""
}
