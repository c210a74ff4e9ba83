// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// TestErrorCodesMatchGardenerRetries checks each classification against what gardenlet
// does with it (HasNonRetryableErrorCode): a conflict that heals by itself must not stop
// the retries, a wrong configured ID must.
func TestErrorCodesMatchGardenerRetries(t *testing.T) {
	respAt := func(url string, code int, body string) error {
		return gophercloud.ErrUnexpectedResponseCode{Actual: code, Body: []byte(body), URL: url, Method: "POST"}
	}
	resp := func(code int, body string) error { return respAt("http://x/v2.0/floatingips", code, body) }
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
		{name: "a chosen address on a network the project does not own", err: respAt("http://x/v2.0/ports", 403, `{"NeutronError":{"type":"PolicyNotAuthorized","message":"(rule:create_port and (rule:create_port:fixed_ips and (rule:create_port:fixed_ips:ip_address and rule:create_port:fixed_ips:subnet_id))) is disallowed by policy"}}`),
			nonRetryable: true, code: gardencorev1beta1.ErrorInfraUnauthorized, hint: "chosen address"},
		{name: "floating pool exhausted", err: resp(400, `{"NeutronError":{"type":"ExternalIpAddressExhausted","message":"Unable to find any IP address on external network x."}}`),
			code: gardencorev1beta1.ErrorInfraResourcesDepleted, hint: "free addresses"},
		{name: "subnet exhausted", err: resp(409, `{"NeutronError":{"type":"IpAddressGenerationFailure","message":"No more IP addresses available on network x."}}`),
			code: gardencorev1beta1.ErrorInfraResourcesDepleted, hint: "free addresses"},
		{name: "the floating IP's address held elsewhere", err: resp(409, `{"NeutronError":{"type":"IpAddressAlreadyAllocated","message":"IP address 198.19.0.5 already allocated in subnet x"}}`),
			nonRetryable: true, code: gardencorev1beta1.ErrorConfigurationProblem, hint: "pin a free floatingIP"},
		{name: "the VIP's address held elsewhere", err: respAt("http://x/v2.0/ports", 409, `{"NeutronError":{"type":"IpAddressAlreadyAllocated","message":"IP address 198.18.0.5 already allocated in subnet x"}}`),
			nonRetryable: true, code: gardencorev1beta1.ErrorConfigurationProblem, hint: "choose a free vipAddress"},
		{name: "a node port at the limit of allowed address pairs", err: respAt("http://x/v2.0/ports/p1", 400, `{"NeutronError":{"type":"AllowedAddressPairExhausted","message":"The number of allowed address pair exceeds the maximum 10."}}`),
			nonRetryable: true, code: gardencorev1beta1.ErrorConfigurationProblem, hint: "max_allowed_address_pair"},
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

// TestEveryCodeOfAJoinIsVisible: Gardener reads the codes of the first coded error only;
// WithEveryCode shows those of every error joined, and leaves a single error as it is.
func TestEveryCodeOfAJoinIsVisible(t *testing.T) {
	fip := Classify(gophercloud.ErrUnexpectedResponseCode{Actual: 403, Body: []byte(`{"NeutronError":{"type":"PolicyNotAuthorized","message":"no"}}`)}, "create the floating IP")
	pairs := NewConfigurationError(errors.New("the node port has no pair"))
	joined := errors.Join(fip, fmt.Errorf("pairs: %w", pairs))
	if got := v1beta1helper.ExtractErrorCodes(joined); slices.Contains(got, gardencorev1beta1.ErrorConfigurationProblem) {
		t.Fatalf("Gardener already sees %v in a join; the test no longer shows the gap", got)
	}
	got := v1beta1helper.ExtractErrorCodes(WithEveryCode(joined))
	want := []gardencorev1beta1.ErrorCode{gardencorev1beta1.ErrorInfraUnauthorized, gardencorev1beta1.ErrorConfigurationProblem}
	if !slices.Equal(got, want) {
		t.Errorf("codes %v, want %v", got, want)
	}
	if WithEveryCode(joined).Error() != joined.Error() {
		t.Errorf("message changed: %q", WithEveryCode(joined))
	}
	if WithEveryCode(fip) != fip { //nolint:errorlint // the very same error, not wrapped
		t.Error("a single coded error was wrapped")
	}
}
