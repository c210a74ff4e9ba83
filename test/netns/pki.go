// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its key.
type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// pki holds the files of the control plane, paths under the harness directory.
type pki struct {
	ca keyPair

	caFile, servingCert, servingKey, saPub, saKey, adminCert, adminKey string
	adminCertPEM, adminKeyPEM, caPEM                                   []byte
}

// servingNames are the DNS names in the apiservers' certificate.
var servingNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}

func newPKI(dir string, ips []netip.Addr) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki directory: %w", err)
	}
	p := &pki{
		caFile:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saPub:       filepath.Join(dir, "sa.pub"),
		saKey:       filepath.Join(dir, "sa.key"),
		adminCert:   filepath.Join(dir, "admin.crt"),
		adminKey:    filepath.Join(dir, "admin.key"),
	}
	ca, err := issue(certRequest{cn: "kvt-ca", isCA: true})
	if err != nil {
		return nil, err
	}
	p.ca = ca
	netIPs := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, a := range ips {
		netIPs = append(netIPs, a.AsSlice())
	}
	serving, err := issue(certRequest{cn: "kube-apiserver", dns: servingNames, ips: netIPs, server: true, parent: &ca})
	if err != nil {
		return nil, err
	}
	admin, err := issue(certRequest{cn: "kvt-admin", org: []string{"system:masters"}, parent: &ca})
	if err != nil {
		return nil, err
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}

	if p.caPEM, err = writeCert(p.caFile, ca.cert); err != nil {
		return nil, err
	}
	if _, err = writeCert(p.servingCert, serving.cert); err != nil {
		return nil, err
	}
	if _, err = writeKey(p.servingKey, serving.key); err != nil {
		return nil, err
	}
	if p.adminCertPEM, err = writeCert(p.adminCert, admin.cert); err != nil {
		return nil, err
	}
	if p.adminKeyPEM, err = writeKey(p.adminKey, admin.key); err != nil {
		return nil, err
	}
	if _, err = writeKey(p.saKey, sa); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return nil, fmt.Errorf("service account public key: %w", err)
	}
	if err := os.WriteFile(p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", p.saPub, err)
	}
	return p, nil
}

type certRequest struct {
	cn     string
	org    []string
	dns    []string
	ips    []net.IP
	isCA   bool
	server bool
	parent *keyPair // nil: self-signed
}

func issue(req certRequest) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("key for %s: %w", req.cn, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, fmt.Errorf("serial for %s: %w", req.cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.cn, Organization: req.org},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		DNSNames:     req.dns,
		IPAddresses:  req.ips,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	switch {
	case req.isCA:
		tmpl.IsCA = true
		tmpl.BasicConstraintsValid = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	case req.server:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	parent, signer := tmpl, crypto.Signer(key)
	if req.parent != nil {
		parent, signer = req.parent.cert, req.parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return keyPair{}, fmt.Errorf("certificate %s: %w", req.cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, fmt.Errorf("parsing certificate %s: %w", req.cn, err)
	}
	return keyPair{cert: cert, key: key}, nil
}

func writeCert(path string, cert *x509.Certificate) ([]byte, error) {
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return b, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshalling key %s: %w", path, err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return b, nil
}
