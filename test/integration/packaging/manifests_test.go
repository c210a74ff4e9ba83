// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package packaging

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	kubevipv1alpha1 "github.com/gardener/gardener-extension-kube-vip/controller/apis/v1alpha1"
	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
	"github.com/gardener/gardener-extension-kube-vip/test/framework"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// strictDecoder decodes every kind the manifests hold and fails on unknown or duplicate fields.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		gardencorev1.AddToScheme,
		gardencorev1beta1.AddToScheme,
		operatorv1alpha1.AddToScheme,
		extensionsv1alpha1.AddToScheme,
		kubevipv1alpha1.AddToScheme,
		monitoringv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// documents splits a multi-document YAML file.
func documents(data []byte) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			out.WriteString(line + "\n")
		}
	}
	return out.Bytes()
}

func decodeFile(t *testing.T, decoder runtime.Decoder, path string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := documents(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var objs []runtime.Object
	for i, doc := range docs {
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Errorf("%s, document %d: %v", path, i, err)
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

func decodeExposureConfig(t *testing.T, decoder runtime.Decoder, where string, raw *runtime.RawExtension) *kubevipv1alpha1.ExposureConfig {
	t.Helper()
	if raw == nil || len(raw.Raw) == 0 {
		t.Errorf("%s: no providerConfig", where)
		return nil
	}
	obj, _, err := decoder.Decode(raw.Raw, nil, nil)
	if err != nil {
		t.Errorf("%s: providerConfig: %v", where, err)
		return nil
	}
	cfg, ok := obj.(*kubevipv1alpha1.ExposureConfig)
	if !ok {
		t.Errorf("%s: providerConfig is a %T, want ExposureConfig", where, obj)
	}
	return cfg
}

// TestManifestsDecodeStrictly decodes every manifest under manifests/ with gardener's own
// types (and the provider configs with this extension's types); a typo in a field fails.
func TestManifestsDecodeStrictly(t *testing.T) {
	root := repoRoot(t)
	decoder := strictDecoder(t)

	var files []string
	if err := filepath.WalkDir(filepath.Join(root, "manifests"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d manifests under manifests/: %v", len(files), files)
	}

	kinds := map[string]int{}
	for _, path := range files {
		for _, obj := range decodeFile(t, decoder, path) {
			rel, _ := filepath.Rel(root, path)
			switch o := obj.(type) {
			case *operatorv1alpha1.Extension:
				kinds["Extension"]++
				checkResources(t, rel, o.Spec.Resources)
				if o.Spec.Deployment == nil || o.Spec.Deployment.ExtensionDeployment == nil || o.Spec.Deployment.ExtensionDeployment.Helm == nil ||
					o.Spec.Deployment.ExtensionDeployment.Helm.OCIRepository == nil {
					t.Errorf("%s: no helm OCI repository", rel)
				}
			case *gardencorev1beta1.ControllerRegistration:
				kinds["ControllerRegistration"]++
				checkResources(t, rel, o.Spec.Resources)
			case *gardencorev1.ControllerDeployment:
				kinds["ControllerDeployment"]++
				if o.Helm == nil || len(o.Helm.RawChart) == 0 {
					t.Errorf("%s: ControllerDeployment without rawChart", rel)
				}
			case *gardencorev1beta1.Shoot:
				kinds["Shoot"]++
				var found bool
				for _, w := range o.Spec.Provider.Workers {
					if w.ControlPlane == nil || w.ControlPlane.Exposure == nil || w.ControlPlane.Exposure.Extension == nil {
						continue
					}
					found = true
					if ext := w.ControlPlane.Exposure.Extension; ext.Type == nil || *ext.Type != "kube-vip" {
						t.Errorf("%s: exposure extension type %v, want kube-vip", rel, ext.Type)
					}
					decodeExposureConfig(t, decoder, rel, w.ControlPlane.Exposure.Extension.ProviderConfig)
				}
				if !found {
					t.Errorf("%s: no worker with controlPlane.exposure.extension", rel)
				}
			case *extensionsv1alpha1.SelfHostedShootExposure:
				kinds["SelfHostedShootExposure"]++
				if o.Spec.Type != "kube-vip" || o.Namespace != "kube-system" {
					t.Errorf("%s: type %q in %q, want kube-vip in kube-system", rel, o.Spec.Type, o.Namespace)
				}
				decodeExposureConfig(t, decoder, rel, o.Spec.ProviderConfig)
			case *corev1.Secret:
				kinds["Secret"]++
				for _, key := range []string{"domainName", "tenantName"} {
					if _, ok := o.StringData[key]; !ok {
						t.Errorf("%s: credentials Secret misses %q", rel, key)
					}
				}
			case *monitoringv1.PrometheusRule:
				kinds["PrometheusRule"]++ // its content: TestPrometheusRule
			default:
				t.Errorf("%s: unexpected %T", rel, obj)
			}
		}
	}
	for _, kind := range []string{"Extension", "ControllerRegistration", "ControllerDeployment", "Shoot", "SelfHostedShootExposure", "Secret"} {
		if kinds[kind] != 1 {
			t.Errorf("manifests hold %d %s, want 1", kinds[kind], kind)
		}
	}
}

func checkResources(t *testing.T, where string, resources []gardencorev1beta1.ControllerResource) {
	t.Helper()
	if len(resources) != 1 {
		t.Fatalf("%s: %d resources, want 1", where, len(resources))
	}
	r := resources[0]
	if r.Kind != extensionsv1alpha1.SelfHostedShootExposureResource || r.Type != "kube-vip" {
		t.Errorf("%s: resource %s/%s, want SelfHostedShootExposure/kube-vip", where, r.Kind, r.Type)
	}
	if r.ContinuousEndpointUpdate == nil || *r.ContinuousEndpointUpdate {
		t.Errorf("%s: continuousEndpointUpdate = %v, want false", where, r.ContinuousEndpointUpdate)
	}
}

// TestRegistrationUpToDate fails when manifests/gardenlet/controller-registration.yaml is
// not what `make generate` would write from the Extension and the chart.
func TestRegistrationUpToDate(t *testing.T) {
	root := repoRoot(t)
	want, err := gen.Registration(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, gen.RegistrationFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `make generate` (or go run ./manifests/gen/cmd/generate-registration)", gen.RegistrationFile)
	}
	again, err := gen.Registration(root)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, want) {
		t.Fatal("generating twice gives different bytes: the chart package is not reproducible")
	}
}

// dockerCopies returns the source paths of the COPY instructions of a Dockerfile, leaving out
// copies from other stages.
func dockerCopies(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || !strings.EqualFold(fields[0], "COPY") {
			continue
		}
		args := fields[1:]
		if strings.HasPrefix(args[0], "--from=") {
			continue
		}
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		sources = append(sources, args[:len(args)-1]...)
	}
	return sources
}

// TestDockerfiles checks that every path the Dockerfiles COPY exists and that the copied
// directories hold every package of this module that the binary imports.
func TestDockerfiles(t *testing.T) {
	root := repoRoot(t)
	for dockerfile, mainPkg := range map[string]string{
		"Dockerfile.controller": "./cmd/gardener-extension-kube-vip",
		"Dockerfile.agent":      "./cmd/kube-vip-agent",
	} {
		t.Run(dockerfile, func(t *testing.T) {
			sources := dockerCopies(t, filepath.Join(root, dockerfile))
			if !slices.Contains(sources, "go.mod") || !slices.Contains(sources, "go.sum") {
				t.Errorf("%s does not copy go.mod and go.sum: %v", dockerfile, sources)
			}
			for _, src := range sources {
				if _, err := os.Stat(filepath.Join(root, src)); err != nil {
					t.Errorf("%s copies %s: %v", dockerfile, src, err)
				}
			}

			cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", mainPkg)
			cmd.Dir = root
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list %s: %v", mainPkg, describe(err))
			}
			for _, dir := range strings.Fields(string(out)) {
				rel, err := filepath.Rel(root, dir)
				if err != nil || strings.HasPrefix(rel, "..") {
					continue // a dependency outside the module
				}
				covered := false
				for _, src := range sources {
					covered = covered || rel == filepath.Clean(src) || strings.HasPrefix(rel+"/", strings.TrimSuffix(src, "/")+"/")
				}
				if !covered {
					t.Errorf("%s builds %s, which imports %s, but does not copy it", dockerfile, mainPkg, rel)
				}
			}
		})
	}
}

func describe(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Sprintf("%v: %s", err, exit.Stderr)
	}
	return err.Error()
}
