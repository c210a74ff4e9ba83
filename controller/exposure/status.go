// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package exposure

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/controller/openstack"
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

// patchStatus writes status.providerStatus, and its conditions also into status.conditions
// (see gardenConditions), when they differ from what the object has.
func (a *Actuator) patchStatus(ctx context.Context, exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus) error {
	conditions := gardenConditions(exp.Status.Conditions, status.Conditions)
	current, err := DecodeStatus(exp)
	if err == nil {
		current.TypeMeta = status.TypeMeta
		if equality.Semantic.DeepEqual(current, status) && equality.Semantic.DeepEqual(exp.Status.Conditions, conditions) {
			return nil
		}
	}
	raw, err := encodeStatus(status)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(exp.DeepCopy())
	exp.Status.ProviderStatus = raw
	exp.Status.Conditions = conditions
	if err := a.client.Status().Patch(ctx, exp, patch); err != nil {
		return fmt.Errorf("writing status.providerStatus: %w", err)
	}
	return nil
}

// gardenConditions mirrors the exposure's conditions into Gardener's status.conditions,
// where kubectl wait --for=condition=VIPHeld and Gardener's tooling look; conditions of
// other types there are kept. The transition time serves as the update time, so that an
// unchanged condition causes no write.
func gardenConditions(existing []gardencorev1beta1.Condition, ours []metav1.Condition) []gardencorev1beta1.Condition {
	out := make([]gardencorev1beta1.Condition, 0, len(existing)+len(ours))
	for _, c := range existing {
		if meta.FindStatusCondition(ours, string(c.Type)) == nil {
			out = append(out, c)
		}
	}
	for _, c := range ours {
		out = append(out, gardencorev1beta1.Condition{
			Type:               gardencorev1beta1.ConditionType(c.Type),
			Status:             gardencorev1beta1.ConditionStatus(c.Status),
			LastTransitionTime: c.LastTransitionTime,
			LastUpdateTime:     c.LastTransitionTime,
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Reasons of the OpenStackVerified condition.
const (
	reasonVerified = "Verified"
	// reasonVerifiedWithoutTLS: verified, but Keystone is reached over plain http.
	reasonVerifiedWithoutTLS = "VerifiedWithoutTLS"
	reasonVerifyFailed       = "VerifyFailed"
)

// plaintextKeystone is the warning for a Keystone URL without TLS.
const plaintextKeystone = "Keystone is reached over plain http, so the OpenStack credentials and tokens travel unencrypted; use an https:// Keystone URL (authURL in the credentials Secret or keystoneURL in the CloudProfile)."

// setVerified records the outcome of the OpenStack part in the OpenStackVerified condition.
// Keystone reached over plain http works, but the condition and a Warning Event say that the
// credentials travel unencrypted.
func (a *Actuator) setVerified(exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus, auth openstack.AuthConfig, err error) {
	if err == nil {
		reason, message := reasonVerified, "The VIP port, its floating IP and the node pairs were read back from Neutron and are right."
		if auth.Plaintext() {
			reason, message = reasonVerifiedWithoutTLS, message+" Warning: "+plaintextKeystone
			a.event(exp, corev1.EventTypeWarning, reasonVerifiedWithoutTLS, "%s", plaintextKeystone)
		}
		a.setCondition(exp, status, v1alpha1.ConditionOpenStackVerified, true, reason, message)
		return
	}
	a.setCondition(exp, status, v1alpha1.ConditionOpenStackVerified, false, reasonVerifyFailed, conditionMessage(err))
}

// setCondition sets a condition of status (its transition time changes only with its
// status).
func (a *Actuator) setCondition(exp *extensionsv1alpha1.SelfHostedShootExposure, status *v1alpha1.ExposureStatus, typ string, ok bool, reason, message string) {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: exp.Generation}
	if ok {
		c.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

// conditionMessage is err's text, bounded so that the status stays small.
func conditionMessage(err error) string {
	const limit = 1000
	msg := err.Error()
	if len(msg) > limit {
		msg = msg[:limit]
	}
	return msg
}

// Event reasons.
const (
	eventDeletedWithoutCleanup = "DeletedWithoutOpenStackCleanup"
	eventNodePortsChanged      = "NodePortsChanged"
	eventHolderChanged         = "HolderChanged"
	eventWaiting               = "WaitingForFrontDoor"
	eventReady                 = "FrontDoorReady"
	eventLost                  = "FrontDoorLost"
	eventFamilyNotAdded        = "IPFamilyNotAdded"
)

// event records an Event on the exposure; without a recorder it does nothing.
func (a *Actuator) event(exp *extensionsv1alpha1.SelfHostedShootExposure, eventType, reason, format string, args ...any) {
	if a.events == nil {
		return
	}
	a.events.Eventf(exp, nil, eventType, reason, reason, format, args...)
}
