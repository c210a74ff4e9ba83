// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardener/gardener/pkg/utils/imagevector"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// named is what the release names in the hand-kept files, read back with the decoders their
// consumers use (helm, gardener's image vector, the Extension's strict decoder).
type named struct {
	chartVersion, appVersion    string
	valuesImage                 string
	controllerImage, agentImage string
	ociChart, extensionImage    string
}

func readNamed(t *testing.T, root string) named {
	t.Helper()
	var n named
	meta, err := chartutil.LoadChartfile(filepath.Join(root, ChartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n.chartVersion, n.appVersion = meta.Version, meta.AppVersion

	b, err := os.ReadFile(filepath.Join(root, ChartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Image struct{ Repository, Tag string } `json:"image"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	n.valuesImage = values.Image.Repository + ":" + values.Image.Tag

	b, err = os.ReadFile(filepath.Join(root, ImageVectorFile))
	if err != nil {
		t.Fatal(err)
	}
	vector, _, err := imagevector.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	for name, into := range map[string]*string{ControllerImage: &n.controllerImage, AgentImage: &n.agentImage} {
		img, err := vector.FindImage(name)
		if err != nil {
			t.Fatal(err)
		}
		*into = img.String()
	}

	ext, err := ReadExtension(filepath.Join(root, ExtensionFile))
	if err != nil {
		t.Fatal(err)
	}
	helm := ext.Spec.Deployment.ExtensionDeployment.Helm
	n.ociChart = *helm.OCIRepository.Repository + ":" + *helm.OCIRepository.Tag
	var extValues struct {
		Image struct{ Repository, Tag string } `json:"image"`
	}
	if err := yaml.Unmarshal(ext.Spec.Deployment.ExtensionDeployment.Values.Raw, &extValues); err != nil {
		t.Fatal(err)
	}
	n.extensionImage = extValues.Image.Repository + ":" + extValues.Image.Tag
	return n
}

func want(r Release) named {
	return named{
		chartVersion:    r.ChartVersion(),
		appVersion:      r.Version,
		valuesImage:     r.Image(ControllerImage) + ":" + r.Version,
		controllerImage: r.Image(ControllerImage) + ":" + r.Version,
		agentImage:      r.Image(AgentImage) + ":" + r.Version,
		ociChart:        r.ChartRepository() + ":" + r.ChartVersion(),
		extensionImage:  r.Image(ControllerImage) + ":" + r.Version,
	}
}

// The committed chart, image vector and Extension name the version of VERSION and the
// images the release workflow pushes by default.
func TestFilesNameTheRelease(t *testing.T) {
	root := "../.."
	version, err := ReadVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, w := readNamed(t, root), want(Release{Version: version, Registry: DefaultRegistry}); got != w {
		t.Errorf("the files name\n  %+v\nVERSION and the default registry say\n  %+v\n(run make generate)", got, w)
	}
}

// Stamp rewrites every place a release names, for another version and registry, and
// leaves the rest of each file (comments included) alone.
func TestStampAnotherRelease(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{filepath.Join(ChartDir, "Chart.yaml"), filepath.Join(ChartDir, "values.yaml"), ImageVectorFile, ExtensionFile} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := Release{Version: "v2.3.4-rc.1", Registry: "ghcr.io/someone"}
	if err := Stamp(root, r); err != nil {
		t.Fatal(err)
	}
	if got, w := readNamed(t, root), want(r); got != w {
		t.Errorf("after Stamp the files name\n  %+v\nwant\n  %+v", got, w)
	}
	// The upstream kube-vip image and every comment stay as they were.
	before, err := os.ReadFile(filepath.Join("../..", ImageVectorFile))
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join(root, ImageVectorFile))
	if err != nil {
		t.Fatal(err)
	}
	bl, al := strings.Split(string(before), "\n"), strings.Split(string(after), "\n")
	if len(bl) != len(al) {
		t.Fatalf("Stamp changed %s from %d to %d lines", ImageVectorFile, len(bl), len(al))
	}
	changed := 0
	for i := range bl {
		if bl[i] != al[i] {
			changed++
		}
	}
	if changed != 4 {
		t.Errorf("Stamp changed %d lines of %s, want 4 (repository and tag of two images)", changed, ImageVectorFile)
	}
}

func TestReadVersionRefusesAMalformedVersion(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, VersionFile), []byte("0.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadVersion(root); err == nil {
		t.Fatal("ReadVersion accepted 0.1")
	}
}
