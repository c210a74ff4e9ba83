// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package imagebuild

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestLayoutPlatformsAndLabels writes a release layout of two architectures (stand-in files
// for the binaries): one index, a linux/amd64 and a linux/arm64 image, both labelled.
func TestLayoutPlatformsAndLabels(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Stage{Base: distrolessStatic + ":nonroot", Copies: []Copy{{From: "builder", Src: "/out/x", Dst: "/x"}}, Entrypoint: []string{"/x"}}
	labels := OCILabels("https://github.com/test/gardener-extension-kube-vip", "0123abcd", "v9.9.9", "Apache-2.0")
	files := map[string]string{"/out/x": bin}
	out := filepath.Join(dir, "layout")
	if err := BuildLayout(s, Options{Tag: "ghcr.io/test/x:v9.9.9", Labels: labels}, []Variant{{Arch: "amd64", Files: files}, {Arch: "arm64", Files: files}}, out); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "ghcr.io/test/x:v9.9.9" {
		t.Fatalf("the layout holds %+v, want one index named ghcr.io/test/x:v9.9.9", m.Manifests)
	}
	checkPlatforms(t, "x", idx, m.Manifests[0].Digest, labels, []string{"amd64", "arm64"})
}

// checkPlatforms checks that the image index at digest holds a linux image per architecture
// of arches, each config saying its architecture and carrying the labels.
func checkPlatforms(t *testing.T, name string, layoutIndex v1.ImageIndex, digest v1.Hash, labels map[string]string, arches []string) {
	t.Helper()
	idx, err := layoutIndex.ImageIndex(digest)
	if err != nil {
		t.Fatalf("%s: the layout's entry is no image index: %v", name, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != cf.Architecture || cf.OS != "linux" {
			t.Errorf("%s: index entry platform %+v, image config %s/%s", name, d.Platform, cf.OS, cf.Architecture)
		}
		got = append(got, cf.Architecture)
		for k, v := range labels {
			if cf.Config.Labels[k] != v {
				t.Errorf("%s/%s: label %s = %q, want %q", name, cf.Architecture, k, cf.Config.Labels[k], v)
			}
		}
	}
	if !slices.Equal(got, arches) {
		t.Errorf("%s: architectures %v, want %v", name, got, arches)
	}
}
