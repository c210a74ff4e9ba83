// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// TestM8WrongPasswordBacksOff: credentials that Keystone rejected are not sent again
// before the backoff has passed, however often a reconciliation asks; other credentials
// are tried at once. The integration suite shows the same through the real controller.
func TestM8WrongPasswordBacksOff(t *testing.T) {
	var logins atomic.Int32
	keystone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logins.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`))
	}))
	defer keystone.Close()

	now := time.Unix(1_700_000_000, 0)
	f := NewClientFactory(FactoryOptions{Now: func() time.Time { return now }})
	wrong := AuthConfig{AuthURL: keystone.URL + "/v3", Credentials: &Credentials{DomainName: "d", TenantName: "p", Username: "u", Password: "wrong"}}

	for range 50 {
		_, err := f.Network(context.Background(), wrong)
		if codes := v1beta1helper.ExtractErrorCodes(err); len(codes) != 1 || codes[0] != gardencorev1beta1.ErrorInfraUnauthenticated {
			t.Fatalf("codes %v, want %s; error: %v", codes, gardencorev1beta1.ErrorInfraUnauthenticated, err)
		}
	}
	if n := logins.Load(); n != 1 {
		t.Fatalf("%d logins in 50 attempts at the same instant, want 1", n)
	}
	// 1m, then 2m, 4m: the second login comes a minute later, the third two minutes after that.
	now = now.Add(59 * time.Second)
	_, _ = f.Network(context.Background(), wrong)
	now = now.Add(time.Second)
	_, _ = f.Network(context.Background(), wrong)
	if n := logins.Load(); n != 2 {
		t.Fatalf("%d logins after one minute, want 2", n)
	}
	now = now.Add(time.Minute)
	_, _ = f.Network(context.Background(), wrong)
	if n := logins.Load(); n != 2 {
		t.Fatalf("%d logins one minute after the second rejection, want still 2", n)
	}
	// A changed password is tried at once.
	fixed := wrong
	fixed.Credentials = &Credentials{DomainName: "d", TenantName: "p", Username: "u", Password: "new"}
	_, _ = f.Network(context.Background(), fixed)
	if n := logins.Load(); n != 3 {
		t.Fatalf("%d logins after the password changed, want 3", n)
	}
}

// TestRejectedReauthenticationIsUnauthenticatedAndBacksOff: Keystone accepted the
// credentials once and rejects them on the re-authentication after Neutron refused the
// token (a password changed in Keystone before the Secret). The failure is
// ERR_INFRA_UNAUTHENTICATED, not "could not be reached", and the cached client is dropped:
// however often reconciliations ask, Keystone sees no further login before the backoff.
func TestRejectedReauthenticationIsUnauthenticatedAndBacksOff(t *testing.T) {
	var logins atomic.Int32
	var server *httptest.Server
	server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v3/auth/tokens" {
			// Neutron: the token was revoked.
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`))
			return
		}
		if logins.Add(1) > 1 {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`))
			return
		}
		w.Header().Set("X-Subject-Token", "token-1")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"token":{"expires_at":"2099-01-01T00:00:00.000000Z","catalog":[{"type":"network","name":"neutron","endpoints":[` +
			`{"interface":"public","region":"RegionOne","region_id":"RegionOne","url":"` + server.URL + `"}]}]}}`))
	}))
	defer server.Close()

	now := time.Unix(1_700_000_000, 0)
	f := NewClientFactory(FactoryOptions{Now: func() time.Time { return now }})
	auth := AuthConfig{AuthURL: server.URL + "/v3", Region: "RegionOne", Credentials: &Credentials{DomainName: "d", TenantName: "p", Username: "u", Password: "changed-in-keystone"}}

	network, err := f.Network(context.Background(), auth)
	if err != nil {
		t.Fatalf("first login: %v", err)
	}
	_, err = network.ListPorts(context.Background(), PortFilter{})
	if codes := v1beta1helper.ExtractErrorCodes(err); len(codes) != 1 || codes[0] != gardencorev1beta1.ErrorInfraUnauthenticated || IsTransient(err) {
		t.Fatalf("codes %v, transient %v, want %s and not transient; error: %v", codes, IsTransient(err), gardencorev1beta1.ErrorInfraUnauthenticated, err)
	}
	for range 50 {
		if network, err := f.Network(context.Background(), auth); err == nil {
			_, _ = network.ListPorts(context.Background(), PortFilter{})
		} else if codes := v1beta1helper.ExtractErrorCodes(err); len(codes) != 1 || codes[0] != gardencorev1beta1.ErrorInfraUnauthenticated {
			t.Fatalf("codes %v while backing off, want %s; error: %v", codes, gardencorev1beta1.ErrorInfraUnauthenticated, err)
		}
	}
	if n := logins.Load(); n != 2 {
		t.Fatalf("%d logins, want 2 (the first and the rejected re-authentication), then a backoff", n)
	}
}

// TestPlaintextFollowsTheAuthURLThatWins: the credentials go to the Secret's authURL when it
// has one, so that URL decides whether they travel without TLS.
func TestPlaintextFollowsTheAuthURLThatWins(t *testing.T) {
	for _, tc := range []struct {
		name, profileURL, secretURL string
		want                        bool
	}{
		{name: "profile over http", profileURL: "http://keystone:5000/v3", want: true},
		{name: "profile over https", profileURL: "https://keystone:5000/v3"},
		{name: "scheme in capitals", profileURL: "HTTP://keystone:5000/v3", want: true},
		{name: "secret over https wins", profileURL: "http://keystone:5000/v3", secretURL: "https://keystone:5000/v3"},
		{name: "secret over http wins", profileURL: "https://keystone:5000/v3", secretURL: "http://keystone:5000/v3", want: true},
		{name: "no URL", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := AuthConfig{AuthURL: tc.profileURL, Credentials: &Credentials{AuthURL: tc.secretURL}}
			if got := auth.Plaintext(); got != tc.want {
				t.Errorf("Plaintext() = %v, want %v", got, tc.want)
			}
		})
	}
}
