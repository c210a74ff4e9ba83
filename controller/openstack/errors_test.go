// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// TestM8ErrorCodesMatchGardenerRetries checks each classification against what gardenlet
// does with it (HasNonRetryableErrorCode): a conflict that heals by itself must not stop
// the retries, a wrong configured ID must.
func TestM8ErrorCodesMatchGardenerRetries(t *testing.T) {
	resp := func(code int, body string) error {
		return gophercloud.ErrUnexpectedResponseCode{Actual: code, Body: []byte(body), URL: "http://x/v2.0/floatingips", Method: "POST"}
	}
	for _, tc := range []struct {
		name         string
		err          error
		nonRetryable bool
		code         gardencorev1beta1.ErrorCode
		hint         string
	}{
		{name: "floating IP already associated after a lost create", err: resp(409, `{"NeutronError":{"type":"FloatingIPPortAlreadyAssociated","message":"taken"}}`)},
		{name: "generic conflict", err: resp(409, `{"NeutronError":{"type":"Conflict","message":"x"}}`)},
		{name: "wrong floating network ID on create", err: resp(404, `{"NeutronError":{"type":"NetworkNotFound","message":"Network x could not be found."}}`),
			nonRetryable: true, code: gardencorev1beta1.ErrorConfigurationProblem},
		{name: "pairs on a network the project does not own", err: resp(403, `{"NeutronError":{"type":"PolicyNotAuthorized","message":"(rule:update_port:allowed_address_pairs) is disallowed by policy"}}`),
			nonRetryable: true, code: gardencorev1beta1.ErrorInfraUnauthorized, hint: "network's owner"},
		{name: "port security off", err: resp(409, `{"NeutronError":{"type":"AddressPairAndPortSecurityRequired","message":"Port Security must be enabled in order to have allowed address pairs on a port."}}`),
			nonRetryable: true, code: gardencorev1beta1.ErrorConfigurationProblem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Classify(tc.err, "create the floating IP")
			codes := v1beta1helper.ExtractErrorCodes(err)
			got := v1beta1helper.HasNonRetryableErrorCode(gardencorev1beta1.LastError{Codes: codes})
			if got != tc.nonRetryable {
				t.Errorf("non-retryable %v, want %v (codes %v)", got, tc.nonRetryable, codes)
			}
			if tc.code != "" && (len(codes) != 1 || codes[0] != tc.code) {
				t.Errorf("codes %v, want %s", codes, tc.code)
			}
			if !tc.nonRetryable && !IsTransient(err) {
				t.Errorf("a self-healing error is not retried with backoff: %v", err)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("message %q lacks %q", err, tc.hint)
			}
		})
	}
}

// An OpenStack message of two sentences with a trailing period becomes a clause of the one
// sentence that ends with the hint.
func TestErrorIsOneSentence(t *testing.T) {
	e := &Error{Op: "create the floating IP", StatusCode: 404, Type: "ExternalGatewayForFloatingIPNotFound",
		Message: "External network n1 is not reachable from subnet s1.  Therefore, cannot associate Port p1 with a Floating IP.",
		Hint:    "connect the node subnet through a router with a gateway to the floating pool network"}
	want := "create the floating IP failed (HTTP 404 ExternalGatewayForFloatingIPNotFound): External network n1 is not reachable from subnet s1; Therefore, cannot associate Port p1 with a Floating IP; connect the node subnet through a router with a gateway to the floating pool network"
	if got := e.Error(); got != want {
		t.Fatalf("Error() =\n%q\nwant\n%q", got, want)
	}
}
