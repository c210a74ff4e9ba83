// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

func TestCredentialsFromSecretData(t *testing.T) {
	base := map[string]string{"domainName": "Default", "tenantName": "demo"}
	with := func(kv ...string) map[string][]byte {
		d := map[string][]byte{}
		for k, v := range base {
			d[k] = []byte(v)
		}
		for i := 0; i < len(kv); i += 2 {
			d[kv[i]] = []byte(kv[i+1])
		}
		return d
	}
	for _, tc := range []struct {
		name    string
		data    map[string][]byte
		wantErr string
		appCred bool
	}{
		{name: "password", data: with("username", "u", "password", "s3cret-pw")},
		{name: "app credential by id", data: with("applicationCredentialID", "id", "applicationCredentialSecret", "s3cret-ac"), appCred: true},
		{name: "app credential by name", data: with("applicationCredentialName", "n", "username", "u", "applicationCredentialSecret", "s3cret-ac"), appCred: true},
		{name: "both forms", data: with("username", "u", "password", "s3cret-pw", "applicationCredentialID", "id", "applicationCredentialSecret", "s3cret-ac"), wantErr: "not both"},
		{name: "nothing", data: with(), wantErr: "give either"},
		{name: "name without user", data: with("applicationCredentialName", "n", "applicationCredentialSecret", "s3cret-ac"), wantErr: `"username" is needed`},
		{name: "no domain", data: map[string][]byte{"tenantName": []byte("demo"), "username": []byte("u"), "password": []byte("s3cret-pw")}, wantErr: `"domainName" is missing`},
		{name: "insecure other than true", data: with("username", "u", "password", "s3cret-pw", "insecure", "yes"), wantErr: `"insecure"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := CredentialsFromSecretData(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidCredentials) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error leaks a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.UsesApplicationCredential() != tc.appCred {
				t.Errorf("application credential %v, want %v", c.UsesApplicationCredential(), tc.appCred)
			}
			if strings.Contains(c.String(), "s3cret") {
				t.Errorf("String leaks a secret: %s", c)
			}
		})
	}
}

func TestClassifyRequest(t *testing.T) {
	for path, want := range map[string]string{
		"/v2.0/ports": "network GET ports",
		"/v2.0/ports/5e223690-fb35-4c26-84a2-0421b0fdffe4":      "network GET ports",
		"/v2.0/ports/5e223690-fb35-4c26-84a2-0421b0fdffe4/tags": "network GET ports/tags",
		"/v3/auth/tokens": "identity GET auth/tokens",
		"/identity/v3/users/924ee7e8b19f48f594733108201f7fb9": "identity GET users",
	} {
		u, _ := url.Parse("http://127.0.0.1" + path)
		service, op := classifyRequest(&http.Request{Method: http.MethodGet, URL: u})
		if got := service + " " + op; got != want {
			t.Errorf("%s: got %q, want %q", path, got, want)
		}
	}
}

func TestPairs(t *testing.T) {
	existing := []ports.AddressPair{{IPAddress: "10.250.0.0/16"}, {IPAddress: "198.18.0.9/32", MACAddress: "fa:16:3e:00:00:01"}}
	merged, changed := MergePair(existing, "198.18.0.5", "fa:16:3e:00:00:0a")
	if !changed || len(merged) != 3 || merged[2].IPAddress != "198.18.0.5" || merged[1] != existing[1] {
		t.Fatalf("merge: %v %v, want the bare address appended (ML2/OVN needs it for a virtual port)", merged, changed)
	}
	if _, changed := MergePair(merged, "198.18.0.5", "fa:16:3e:00:00:0a"); changed {
		t.Error("merging twice changed the pairs")
	}
	rest, changed := RemovePair(merged, "198.18.0.5", "fa:16:3e:00:00:0a")
	if !changed || len(rest) != 2 || rest[0] != existing[0] || rest[1] != existing[1] {
		t.Fatalf("remove: %v %v", rest, changed)
	}
	if _, changed := RemovePair(existing, "198.18.0.5", "fa:16:3e:00:00:0a"); changed {
		t.Error("removing an absent pair changed the pairs")
	}
}

// TestPairOfTheOlderFormIsRewritten: a node port that carries "VIP/32" with its own MAC
// (what earlier versions wrote; Neutron fills in the port's MAC) gets the bare address in
// its place, the other pairs kept; both forms are the extension's own.
func TestPairOfTheOlderFormIsRewritten(t *testing.T) {
	const mac = "fa:16:3e:00:00:02"
	older := []ports.AddressPair{{IPAddress: "10.250.0.0/16"}, {IPAddress: "198.18.0.5/32", MACAddress: mac}}
	merged, changed := MergePair(older, "198.18.0.5", mac)
	want := []ports.AddressPair{{IPAddress: "10.250.0.0/16"}, {IPAddress: "198.18.0.5", MACAddress: mac}}
	if !changed || !slices.Equal(merged, want) {
		t.Fatalf("merge over the older form: %v %v, want %v", merged, changed, want)
	}
	if older[1].IPAddress != "198.18.0.5/32" {
		t.Error("MergePair changed the caller's slice")
	}
	if !HasPair(&ports.Port{MACAddress: mac, AllowedAddressPairs: older}, "198.18.0.5") {
		t.Error("the older form is not recognised as the VIP's pair")
	}
	if rest, changed := RemovePair(older, "198.18.0.5", mac); !changed || len(rest) != 1 {
		t.Errorf("removing the older form: %v %v", rest, changed)
	}
	if _, changed := MergePair([]ports.AddressPair{{IPAddress: "2001:db8::1/128"}}, "2001:db8::1", mac); !changed {
		t.Error("the IPv6 host prefix form is not rewritten")
	}
}

// TestPairWithAnotherMACIsTheUsers: a pair for the VIP's address with a MAC other than the
// port's is a user's (a VRRP router's, say): it is neither the VIP's pair, nor rewritten,
// nor removed; the extension's bare pair is added beside it.
func TestPairWithAnotherMACIsTheUsers(t *testing.T) {
	const portMAC, userMAC = "fa:16:3e:00:00:02", "fa:16:3e:00:00:99"
	for _, address := range []string{"198.18.0.5", "198.18.0.5/32"} {
		users := []ports.AddressPair{{IPAddress: address, MACAddress: userMAC}}
		if HasPair(&ports.Port{MACAddress: portMAC, AllowedAddressPairs: users}, "198.18.0.5") {
			t.Errorf("%s with the MAC %s counts as the VIP's pair of a port with the MAC %s", address, userMAC, portMAC)
		}
		merged, changed := MergePair(users, "198.18.0.5", portMAC)
		want := []ports.AddressPair{users[0], {IPAddress: "198.18.0.5"}}
		if !changed || !slices.Equal(merged, want) {
			t.Errorf("merge beside the user's %s: %v %v, want %v", address, merged, changed, want)
		}
		if rest, changed := RemovePair(users, "198.18.0.5", portMAC); changed || !slices.Equal(rest, users) {
			t.Errorf("removing the VIP's pair took the user's %s: %v %v", address, rest, changed)
		}
	}
}

func TestClassify(t *testing.T) {
	resp := func(code int, body string) error {
		return gophercloud.ErrUnexpectedResponseCode{Actual: code, Body: []byte(body), URL: "http://x/v2.0/ports", Method: "POST"}
	}
	viaURL := func(err error) error { return &url.Error{Op: "Post", URL: "http://x/v2.0/ports", Err: err} }
	for _, tc := range []struct {
		name      string
		err       error
		lookup    bool
		code      gardencorev1beta1.ErrorCode
		transient bool
		message   string
	}{
		{name: "401", err: resp(401, `{"error":{"code":401,"message":"The request you have made requires authentication."}}`), code: gardencorev1beta1.ErrorInfraUnauthenticated},
		{name: "quota", err: resp(409, `{"NeutronError":{"type":"OverQuota","message":"Quota exceeded for resources: ['port']."}}`), code: gardencorev1beta1.ErrorInfraQuotaExceeded},
		{name: "conflict", err: resp(409, `{"NeutronError":{"type":"FloatingIPPortAlreadyAssociated","message":"taken"}}`), transient: true},
		{name: "configured network missing", err: resp(404, `{"NeutronError":{"type":"NetworkNotFound","message":"Network x could not be found."}}`), lookup: true, code: gardencorev1beta1.ErrorConfigurationProblem},
		{name: "port vanished under an update", err: resp(404, `{"NeutronError":{"type":"PortNotFound","message":"Port x could not be found."}}`), transient: true},
		{name: "ip taken", err: resp(409, `{"NeutronError":{"type":"IpAddressAlreadyAllocated","message":"in use"}}`), code: gardencorev1beta1.ErrorConfigurationProblem},
		{name: "server error", err: resp(503, `oops`), transient: true},
		{name: "stale revision", err: resp(412, `{}`), transient: true},
		{name: "connection", err: viaURL(errors.New("dial tcp 127.0.0.1:9696: connect: connection refused")), transient: true, message: "connection refused"},
		{name: "unknown CA", err: viaURL(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), code: gardencorev1beta1.ErrorConfigurationProblem, message: "caCert"},
		{name: "wrong host name", err: viaURL(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "keystone"}), code: gardencorev1beta1.ErrorConfigurationProblem, message: "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			classify := Classify
			if tc.lookup {
				classify = ClassifyLookup
			}
			err := classify(tc.err, "create the VIP port")
			codes := v1beta1helper.ExtractErrorCodes(err)
			if tc.code == "" && len(codes) != 0 || tc.code != "" && (len(codes) != 1 || codes[0] != tc.code) {
				t.Errorf("codes %v, want %q", codes, tc.code)
			}
			if IsTransient(err) != tc.transient {
				t.Errorf("transient %v, want %v", IsTransient(err), tc.transient)
			}
			if !strings.HasPrefix(err.Error(), "create the VIP port failed") || strings.Contains(err.Error(), "http://x") {
				t.Errorf("message %q", err.Error())
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("message %q does not contain %q", err.Error(), tc.message)
			}
		})
	}
}

// TestClassifyUntrustedCertificate: a real TLS handshake with a server whose CA the client
// does not trust is a configuration problem, not "OpenStack could not be reached".
func TestClassifyUntrustedCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	provider := &gophercloud.ProviderClient{HTTPClient: http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	_, err := provider.Request(context.Background(), http.MethodGet, srv.URL+"/v3", &gophercloud.RequestOpts{})
	if err == nil {
		t.Fatal("request to an untrusted server succeeded")
	}
	err = Classify(err, "authenticate with Keystone")
	if codes := v1beta1helper.ExtractErrorCodes(err); len(codes) != 1 || codes[0] != gardencorev1beta1.ErrorConfigurationProblem {
		t.Errorf("codes %v, want a configuration problem; error: %v", codes, err)
	}
	if IsTransient(err) || strings.Contains(err.Error(), srv.URL) {
		t.Errorf("transient %v, message %q", IsTransient(err), err)
	}
}

func TestExternalNetworkQueryKeepsTheName(t *testing.T) {
	external := true
	q, err := externalListOpts{ListOpts: networks.ListOpts{Name: "pool-b"}, External: &external}.ToNetworkListQuery()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q, "name=pool-b") || !strings.Contains(q, "router%3Aexternal=true") && !strings.Contains(q, "router:external=true") {
		t.Errorf("query %q, want both the name and router:external", q)
	}
}
