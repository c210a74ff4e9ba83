// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"sigs.k8s.io/yaml"

	"github.com/gardener/gardener-extension-kube-vip/test/extension"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

// releaseWorkflow is what the steps below read of .github/workflows/release.yaml.
type releaseWorkflow struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string `json:"name"`
			Run  string `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

// workflowStep returns the run script of the release workflow's step called name.
func workflowStep(t *testing.T, root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf releaseWorkflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("release.yaml: %v", err)
	}
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if s.Name == name && s.Run != "" {
				return s.Run
			}
		}
	}
	t.Fatalf("release.yaml has no step %q with a script", name)
	return ""
}

// pushedAsTheWorkflowDoes runs the release workflow's push step, as written, on the
// artifacts of make release-artifacts, against a registry of the test's own on 127.0.0.1
// (served over TLS, as ghcr.io is; the scripts trust its certificate through
// SSL_CERT_FILE), then the workflow's anonymous-pull check. The registry must then serve
// each image's index as the layout holds it, and the chart.
func pushedAsTheWorkflowDoes(t *testing.T, root string, release *extension.Release) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "registry.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(dir, "bin")
	if err := framework.BuildHelm(ctx, filepath.Join(helm, "helm")); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "https://")
	const owner = "test-owner"
	reg := host + "/" + owner
	env := append(os.Environ(),
		"REGISTRY="+reg, "TOKEN=test-token", "GITHUB_ACTOR=test-actor",
		"SSL_CERT_FILE="+ca, "PATH="+helm+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DOCKER_CONFIG="+filepath.Join(dir, "docker"),
		"HELM_CACHE_HOME="+filepath.Join(dir, "helm-cache"), "HELM_CONFIG_HOME="+filepath.Join(dir, "helm-config"),
		"HELM_DATA_HOME="+filepath.Join(dir, "helm-data"), "HELM_REGISTRY_CONFIG="+filepath.Join(dir, "helm-registry.json"))
	for _, step := range []string{"Push the images and the chart", "The packages can be pulled anonymously"} {
		// GitHub's runner runs a step's script with bash -e.
		cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-e", "-c", workflowStep(t, root, step))
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the release workflow's step %q: %v\n%s", step, err, out)
		}
		t.Logf("the release workflow's step %q ran against %s", step, reg)
	}

	client := srv.Client() // trusts the server's certificate
	version, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	tag := strings.TrimSpace(string(version))
	for image, img := range release.Images {
		if got := headDigest(ctx, t, client, host, owner+"/"+image, tag); got != img.Digest {
			t.Errorf("the registry serves %s:%s as %s, the layout holds %s", image, tag, got, img.Digest)
		}
	}
	headDigest(ctx, t, client, host, owner+"/charts/gardener-extension-kube-vip", strings.TrimPrefix(tag, "v"))
}

// headDigest is the digest the registry at host serves repo:tag under, as a client's
// HEAD of the manifest reads it.
func headDigest(ctx context.Context, t *testing.T, client *http.Client, host, repo, tag string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "https://"+host+"/v2/"+repo+"/manifests/"+tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", strings.Join([]string{"application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
		"application/vnd.docker.distribution.manifest.list.v2+json", "application/vnd.docker.distribution.manifest.v2+json"}, ","))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the registry answers %s for %s:%s", resp.Status, repo, tag)
	}
	return resp.Header.Get("Docker-Content-Digest")
}
