// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package imagebuild

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The release images, built twice from the same sources into two directories, have the same
// digests: a tag rebuilt gives the images it gave before. (The second go build comes from
// Go's build cache; -trimpath keeps a cold build of the same toolchain the same.)
func TestReleaseLayoutsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the controller and the agent")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(root, "LICENSE") // any fixed file stands in for the host's CA bundle
	digests := make([]map[string]string, 2)
	for i := range digests {
		c := Config{Root: root, Out: t.TempDir(), Registry: "ghcr.io/test", Version: "v9.9.9", CABundle: ca, Layout: true}
		if err := BuildAll(context.Background(), c, ReleaseImages()); err != nil {
			t.Fatal(err)
		}
		digests[i] = map[string]string{}
		for _, img := range ReleaseImages() {
			p, err := layout.FromPath(c.Tarball(img))
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
			if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != c.Ref(img) {
				t.Fatalf("%s: the layout holds %+v, want one image named %s", img.Name, m.Manifests, c.Ref(img))
			}
			digests[i][img.Name] = m.Manifests[0].Digest.String()
		}
	}
	if len(digests[0]) != 2 {
		t.Fatalf("built %v, want the controller and the agent", digests[0])
	}
	for name, d := range digests[0] {
		if digests[1][name] != d {
			t.Errorf("%s: %s, then %s", name, d, digests[1][name])
		}
	}
	t.Logf("digests: %v", digests[0])
}
