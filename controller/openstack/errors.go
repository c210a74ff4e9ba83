// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// Error is a failed OpenStack operation, described for the operator: what failed, what
// OpenStack said and what to fix. It never contains request bodies or credentials.
type Error struct {
	// Op is what was attempted, e.g. "create the VIP port".
	Op string
	// StatusCode is the HTTP status of the response; 0 when there was none.
	StatusCode int
	// Type is the error type Neutron reported, e.g. "OverQuota".
	Type string
	// Message is the message OpenStack returned, shortened.
	Message string
	// Hint tells the operator what to do.
	Hint string
	// Transient is true when a retry may succeed without any change.
	Transient bool

	cause error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(" failed")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.StatusCode)
		if e.Type != "" {
			b.WriteString(" " + e.Type)
		}
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": " + oneSentence(e.Message))
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// Unwrap returns the underlying gophercloud or transport error.
func (e *Error) Unwrap() error { return e.cause }

// IsNotFound tells whether err is an OpenStack 404.
func IsNotFound(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusNotFound)
}

// IsTransient tells whether a retry of the failed operation may succeed without a change.
func IsTransient(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Transient
}

// IsPortSecurityDisabled tells whether Neutron refused an allowed address pair because the
// port has port security disabled.
func IsPortSecurityDisabled(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Type == "AddressPairAndPortSecurityRequired"
}

// IsUnauthenticated tells whether Keystone rejected the credentials (HTTP 401), also on a
// re-authentication.
func IsUnauthenticated(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusUnauthorized
}

// IsAddressTaken tells whether Neutron refused a fixed IP because another port holds it.
func IsAddressTaken(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Type == "IpAddressAlreadyAllocated" || e.Type == "IpAddressInUse")
}

// NewConfigurationError marks err as a configuration problem the operator must fix.
func NewConfigurationError(err error) error {
	return v1beta1helper.NewErrorWithCodes(err, gardencorev1beta1.ErrorConfigurationProblem)
}

type neutronErrorBody struct {
	NeutronError *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"NeutronError"`
	Error *struct {
		Message string `json:"message"`
		Title   string `json:"title"`
	} `json:"error"`
}

const maxMessageLength = 300

// Classify turns an error of an OpenStack call into an *Error with a hint, wrapped with
// the Gardener error codes that fit:
//   - 401: ErrorInfraUnauthenticated, 403: ErrorInfraUnauthorized
//   - OverQuota, address exhaustion: ErrorInfraQuotaExceeded
//   - 403 of Neutron's policy on allowed address pairs: ErrorInfraUnauthorized with a hint
//     on network ownership
//   - invalid input, TLS certificate verification failures, a missing network in a create
//     request (NetworkNotFound): ErrorConfigurationProblem
//   - port security disabled on a port that should get a pair, or a port at Neutron's limit
//     of allowed address pairs: ErrorConfigurationProblem
//   - other 409 conflicts: transient, no code. They heal by themselves: a concurrent writer,
//     or the retry of a create whose response was lost and that Neutron executed.
//   - 404: transient (a port or floating IP vanished under an update, e.g. during a node
//     replacement); ClassifyLookup makes it a configuration problem for configured IDs
//   - 5xx, 412, 429, timeouts and connection errors: transient, no code.
//
// op says what was attempted ("create the VIP port"). Classify returns nil for nil.
func Classify(err error, op string) error {
	return classify(err, op, false)
}

// ClassifyLookup is Classify for reads of resources the operator configured (network,
// subnet, floating pool): a 404 there is a configuration problem.
func ClassifyLookup(err error, op string) error {
	return classify(err, op, true)
}

// ownNetworkHint is the way out of the policies that Neutron grants the network's owner
// alone.
const ownNetworkHint = "put the control-plane nodes in a network of the shoot's own project, not a shared or provider network (see docs/openstack-prerequisites.md)"

func classify(err error, op string, lookup bool) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	e := &Error{Op: op, cause: err}

	// gophercloud's re-authentication error does not unwrap: what decides is why the
	// re-authentication failed (a 401 when the credentials were changed or revoked).
	var reauth *gophercloud.ErrUnableToReauthenticate
	if errors.As(err, &reauth) && reauth.ErrReauth != nil {
		err = reauth.ErrReauth
	}

	var resp gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &resp) {
		return classifyTransport(e, err)
	}

	e.StatusCode = resp.Actual
	var body neutronErrorBody
	if json.Unmarshal(resp.Body, &body) == nil {
		switch {
		case body.NeutronError != nil:
			e.Type, e.Message = body.NeutronError.Type, body.NeutronError.Message
		case body.Error != nil:
			e.Message = body.Error.Message
		}
	}
	if len(e.Message) > maxMessageLength {
		e.Message = e.Message[:maxMessageLength] + "..."
	}

	var code gardencorev1beta1.ErrorCode
	switch {
	case resp.Actual == http.StatusUnauthorized:
		code = gardencorev1beta1.ErrorInfraUnauthenticated
		e.Hint = "fix the credentials in the Secret of spec.credentialsRef (user and password or application credential, domain, project)"
	case resp.Actual == http.StatusForbidden && strings.Contains(e.Message, "allowed_address_pairs"):
		code = gardencorev1beta1.ErrorInfraUnauthorized
		e.Hint = "Neutron lets only the network's owner or an admin set allowed address pairs: " + ownNetworkHint
	case resp.Actual == http.StatusForbidden && strings.Contains(e.Message, "fixed_ips:ip_address"):
		// The VIP port asked for an address of its own: a vipAddress, or the recorded VIP of
		// a lost port. The member role does not help here.
		code = gardencorev1beta1.ErrorInfraUnauthorized
		e.Hint = "Neutron lets only the network's owner or an admin create a port with a chosen address (a vipAddress in the providerConfig, or the recorded VIP of a lost port): " + ownNetworkHint
	case resp.Actual == http.StatusForbidden:
		code = gardencorev1beta1.ErrorInfraUnauthorized
		e.Hint = "give the OpenStack user of spec.credentialsRef the member role in the project"
	case e.Type == "OverQuota":
		code = gardencorev1beta1.ErrorInfraQuotaExceeded
		e.Hint = "raise the Neutron quota of the project or free unused resources"
	case e.Type == "IpAddressGenerationFailure" || e.Type == "ExternalIpAddressExhausted":
		// The subnet or pool has no free address: no quota can be raised for that, and an
		// address freed elsewhere heals it, so Gardener retries (and so does the controller).
		code = gardencorev1beta1.ErrorInfraResourcesDepleted
		e.Transient = true
		e.Hint = "free addresses in the subnet or floating pool, or choose another one"
	case (e.Type == "IpAddressAlreadyAllocated" || e.Type == "IpAddressInUse") && strings.Contains(resp.URL, "/floatingips"):
		// The address asked of the floating pool: the pinned floatingIP, or the published
		// address allocated again after it was deleted.
		code = gardencorev1beta1.ErrorConfigurationProblem
		e.Hint = "another floating IP or port holds that address of the floating pool: release it there, or pin a free floatingIP in the providerConfig"
	case e.Type == "IpAddressAlreadyAllocated" || e.Type == "IpAddressInUse":
		code = gardencorev1beta1.ErrorConfigurationProblem
		e.Hint = "choose a free vipAddress in the providerConfig"
	case e.Type == "AllowedAddressPairExhausted":
		// Neutron's max_allowed_address_pair (10 by default) per port; a dual-stack exposure
		// puts two pairs on each node port.
		code = gardencorev1beta1.ErrorConfigurationProblem
		e.Hint = "the node port has as many allowed address pairs as Neutron's max_allowed_address_pair permits: remove pairs it no longer needs, or ask the cloud admin to raise the limit"
	case e.Type == "ExternalGatewayForFloatingIPNotFound":
		code = gardencorev1beta1.ErrorConfigurationProblem
		e.Hint = "connect the node subnet through a router with a gateway to the floating pool network"
	case e.Type == "AddressPairAndPortSecurityRequired":
		code = gardencorev1beta1.ErrorConfigurationProblem
		e.Hint = "the port has port security disabled and needs no allowed address pair; enable port security or leave the port out"
	case resp.Actual == http.StatusNotFound && (lookup || e.Type == "NetworkNotFound" || e.Type == "ExternalNetworkNotFound"):
		code = gardencorev1beta1.ErrorConfigurationProblem
		e.Hint = "check the network, subnet and floating pool in the providerConfig and the Infrastructure status"
	case resp.Actual == http.StatusNotFound:
		e.Transient = true
		e.Hint = "the resource disappeared meanwhile; will retry"
	case resp.Actual == http.StatusBadRequest:
		code = gardencorev1beta1.ErrorConfigurationProblem
		e.Hint = "check the providerConfig against the network, subnet and floating pool"
	case resp.Actual == http.StatusConflict:
		e.Transient = true
		e.Hint = "a conflicting change in Neutron, e.g. by a concurrent writer or an earlier attempt; will retry"
	case resp.Actual == http.StatusPreconditionFailed, resp.Actual == http.StatusTooManyRequests, resp.Actual >= 500:
		e.Transient = true
		e.Hint = "will retry"
	default:
		e.Hint = "check the OpenStack project"
	}
	if code == "" {
		return e
	}
	return v1beta1helper.NewErrorWithCodes(e, code)
}

// classifyTransport describes an error without an HTTP response: a certificate that does
// not verify is a configuration problem, anything else (refused connection, DNS, timeout)
// is transient. The message keeps the cause without the request URL.
func classifyTransport(e *Error, err error) error {
	cause := err
	var urlErr *url.Error
	if errors.As(err, &urlErr) && urlErr.Err != nil {
		cause = urlErr.Err
	}
	detail := cause.Error()
	if len(detail) > maxMessageLength {
		detail = detail[:maxMessageLength] + "..."
	}
	if isCertificateError(err) {
		e.Message = "the TLS certificate of OpenStack could not be verified: " + detail
		e.Hint = "put the CA of the Keystone and Neutron endpoints into the CloudProfile (keystoneCACert, or caCert of the region's keystoneURLs entry) or key \"caCert\" of the credentials Secret, or fix the Keystone URL"
		return v1beta1helper.NewErrorWithCodes(e, gardencorev1beta1.ErrorConfigurationProblem)
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.Message = "the request was cancelled or timed out: " + detail
	default:
		e.Message = "OpenStack could not be reached: " + detail
	}
	e.Hint = "will retry"
	e.Transient = true
	return e
}

func isCertificateError(err error) bool {
	var (
		verification *tls.CertificateVerificationError
		unknown      x509.UnknownAuthorityError
		hostname     x509.HostnameError
		invalid      x509.CertificateInvalidError
	)
	return errors.As(err, &verification) || errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// oneSentence folds an OpenStack message into a clause of one sentence: Neutron's messages
// end with a period and some have two sentences ("… is not reachable from subnet ….
// Therefore, cannot associate …"); the hint follows after a semicolon.
func oneSentence(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	msg = strings.ReplaceAll(msg, ". ", "; ")
	return strings.TrimRight(msg, ". ")
}

// WithEveryCode makes the error codes of every error in err's tree visible to Gardener,
// whose ExtractErrorCodes takes those of the first coded error it finds (errors.As): the
// codes of a later error of an errors.Join would be lost.
func WithEveryCode(err error) error {
	var codes []gardencorev1beta1.ErrorCode
	var walk func(error)
	// The walk visits every error of the tree itself, so each node is asserted as it is
	// (errors.As would stop at the first Coder).
	walk = func(e error) {
		if c, ok := e.(v1beta1helper.Coder); ok { //nolint:errorlint // one node of the walk
			for _, code := range c.Codes() {
				if !slices.Contains(codes, code) {
					codes = append(codes, code)
				}
			}
		}
		switch u := e.(type) { //nolint:errorlint // unwraps one level of the walk
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	visible := v1beta1helper.ExtractErrorCodes(err)
	for _, code := range codes {
		if !slices.Contains(visible, code) {
			return v1beta1helper.NewErrorWithCodes(err, codes...)
		}
	}
	return err
}
