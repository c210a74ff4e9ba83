// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"
)

// TestCA is a certificate authority made by a test, and a serving certificate it signed for
// 127.0.0.1.
type TestCA struct {
	// CAPEM is the CA certificate, what an operator puts into keystoneCACert or caCert.
	CAPEM []byte
	// CertPEM and KeyPEM are the serving certificate for 127.0.0.1 and its key.
	CertPEM, KeyPEM []byte
}

// NewTestCA makes a CA and a serving certificate for 127.0.0.1 with gardener's secrets
// utilities.
func NewTestCA(t testing.TB, name string) TestCA {
	t.Helper()
	ca, err := (&secretsutils.CertificateSecretConfig{Name: name + "-ca", CommonName: name + "-ca", CertType: secretsutils.CACert}).GenerateCertificate()
	if err != nil {
		t.Fatalf("making the test CA: %v", err)
	}
	server, err := (&secretsutils.CertificateSecretConfig{
		Name:        name,
		CommonName:  name,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		CertType:    secretsutils.ServerCert,
		SigningCA:   ca,
	}).GenerateCertificate()
	if err != nil {
		t.Fatalf("making the serving certificate: %v", err)
	}
	return TestCA{CAPEM: ca.CertificatePEM, CertPEM: server.CertificatePEM, KeyPEM: server.PrivateKeyPEM}
}

// KeystoneTLS serves the local Keystone over HTTPS with the serving certificate of ca, until
// the test ends: a second uwsgi with hack/openstack.sh's configuration and database, whose
// HTTP listener is replaced by an HTTPS one on 127.0.0.1:KEYSTONE_TLS_PORT. It returns the
// Keystone v3 URL. The service catalog still names Neutron over HTTP.
func KeystoneTLS(t testing.TB, env OpenStackEnv, ca TestCA) string {
	t.Helper()
	if env.KeystoneUWSGIConfig == "" || env.KeystoneTLSPort == "" {
		Unavailable(t, "the OpenStack env file names no KEYSTONE_UWSGI_INI and KEYSTONE_TLS_PORT; run hack/openstack.sh up again")
	}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for path, data := range map[string][]byte{cert: ca.CertPEM, key: ca.KeyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	address := net.JoinHostPort("127.0.0.1", env.KeystoneTLSPort)
	ini, err := httpsUWSGIConfig(env.KeystoneUWSGIConfig, map[string]string{
		"http-socket": fmt.Sprintf("https-socket = %s,%s,%s", address, cert, key),
		// One worker: once it answers, no other worker is still loading Keystone (lazy-apps)
		// when the code under test connects.
		"processes": "processes = 1",
	})
	if err != nil {
		t.Fatal(err)
	}
	iniPath := filepath.Join(dir, "keystone-uwsgi.ini")
	if err := os.WriteFile(iniPath, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "uwsgi.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command("uwsgi", "--ini", iniPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: the cleanup stops the master and its workers together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting uwsgi: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})

	url := "https://" + address + "/v3"
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CAPEM)
	// No keep-alive: an idle connection of the probe would hold uwsgi's only worker.
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := probe.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // refused until uwsgi listens: poll on
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		log, _ := os.ReadFile(logFile.Name())
		t.Fatalf("Keystone over HTTPS at %s did not answer: %v; uwsgi log:\n%s", url, err, log)
	}
	return url
}

// httpsUWSGIConfig is the uwsgi configuration at path with the lines of the given options
// replaced.
func httpsUWSGIConfig(path string, replace map[string]string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading Keystone's uwsgi configuration: %w", err)
	}
	defer func() { _ = f.Close() }()
	var b strings.Builder
	replaced := map[string]bool{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		option, _, _ := strings.Cut(line, "=")
		if with, ok := replace[strings.TrimSpace(option)]; ok {
			line, replaced[strings.TrimSpace(option)] = with, true
		}
		b.WriteString(line + "\n")
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	for option := range replace {
		if !replaced[option] {
			return "", fmt.Errorf("%s has no %s line", path, option)
		}
	}
	return b.String(), nil
}
