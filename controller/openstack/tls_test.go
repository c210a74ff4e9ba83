// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package openstack

import (
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTLSConfigAddsToTheSystemRoots: the CAs of the Secret and of the CloudProfile are
// trusted on top of the system roots, not instead of them.
func TestTLSConfigAddsToTheSystemRoots(t *testing.T) {
	secretCA, profileCA := testCAPEM(t), testCAPEM(t)
	auth := AuthConfig{Credentials: &Credentials{CACert: secretCA}, CloudProfileCACert: profileCA}
	cfg, err := auth.tlsConfig()
	if err != nil {
		t.Fatal(err)
	}
	want, err := x509.SystemCertPool()
	if err != nil {
		t.Skipf("no system roots on this machine: %v", err)
	}
	want.AppendCertsFromPEM([]byte(secretCA))
	want.AppendCertsFromPEM([]byte(profileCA))
	if !cfg.RootCAs.Equal(want) || cfg.InsecureSkipVerify {
		t.Errorf("roots are not the system roots plus both CAs (or verification is off: %v)", cfg.InsecureSkipVerify)
	}

	if cfg, err := (AuthConfig{Credentials: &Credentials{}}).tlsConfig(); err != nil || cfg != nil {
		t.Errorf("without CA or insecure: %v, %v; want Go's default transport configuration", cfg, err)
	}
	if cfg, err := (AuthConfig{Credentials: &Credentials{}, ForceInsecure: true}).tlsConfig(); err != nil || !cfg.InsecureSkipVerify {
		t.Errorf("keystoneForceInsecure: %v, %v; want no verification", cfg, err)
	}
	if _, err := (AuthConfig{Credentials: &Credentials{}, CloudProfileCACert: "no certificate"}).tlsConfig(); err == nil || !strings.Contains(err.Error(), "keystoneCACert") {
		t.Errorf("a CloudProfile CA that is no PEM: %v, want an error naming keystoneCACert", err)
	}
}

func testCAPEM(t *testing.T) string {
	t.Helper()
	srv := httptest.NewTLSServer(nil)
	defer srv.Close()
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}
