// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package netns

import (
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

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
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

// newPKI writes the control plane's CA, serving and admin certificates and the service
// account key. client-go's util/cert makes the CA and encodes; it has no helper for a
// certificate signed by a CA, and gardener's secrets utilities make only 3072-bit RSA keys
// (seconds per harness on a loaded machine), hence issue.
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
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	caCert, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "kvt-ca"}, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	p.ca = keyPair{cert: caCert, key: caKey}
	netIPs := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, a := range ips {
		netIPs = append(netIPs, a.AsSlice())
	}
	serving, err := p.issue(cert.Config{CommonName: "kube-apiserver", AltNames: cert.AltNames{DNSNames: servingNames, IPs: netIPs},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return nil, err
	}
	admin, err := p.issue(cert.Config{CommonName: "kvt-admin", Organization: []string{"system:masters"},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	saPub, err := keyutil.ParsePublicKeysPEM(saKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("service account public key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saPub[0])
	if err != nil {
		return nil, fmt.Errorf("service account public key: %w", err)
	}
	saPubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})

	p.caPEM = certPEM(caCert)
	servingKeyPEM, err := keyutil.MarshalPrivateKeyToPEM(serving.key)
	if err != nil {
		return nil, err
	}
	p.adminCertPEM = certPEM(admin.cert)
	if p.adminKeyPEM, err = keyutil.MarshalPrivateKeyToPEM(admin.key); err != nil {
		return nil, err
	}
	for path, data := range map[string][]byte{
		p.caFile: p.caPEM, p.servingCert: certPEM(serving.cert), p.servingKey: servingKeyPEM,
		p.adminCert: p.adminCertPEM, p.adminKey: p.adminKeyPEM, p.saKey: saKeyPEM, p.saPub: saPubPEM,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return p, nil
}

// issue makes a certificate of cfg, signed by the CA, valid for a week.
func (p *pki) issue(cfg cert.Config) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("key for %s: %w", cfg.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, fmt.Errorf("serial for %s: %w", cfg.CommonName, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cfg.CommonName, Organization: cfg.Organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		DNSNames:     cfg.AltNames.DNSNames,
		IPAddresses:  cfg.AltNames.IPs,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  cfg.Usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca.cert, key.Public(), p.ca.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("certificate %s: %w", cfg.CommonName, err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, fmt.Errorf("parsing certificate %s: %w", cfg.CommonName, err)
	}
	return keyPair{cert: c, key: key}, nil
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: c.Raw})
}
