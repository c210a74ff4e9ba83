// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/gardener/gardener-extension-kube-vip/hack/tools/imagebuild"
	"github.com/gardener/gardener-extension-kube-vip/test/nodes"
)

// Release is what `make release-artifacts` wrote: an OCI image layout per release image and
// the packaged chart.
type Release struct {
	// Dir is the artifacts' directory (bin/release).
	Dir string
	// Chart is the chart archive.
	Chart string
	// Images are the release images by name.
	Images map[string]ReleaseImage
}

// ReleaseImage is one image of the release as its OCI layout names it.
type ReleaseImage struct {
	// Layout is the OCI image layout's directory.
	Layout string
	// Ref is the reference the layout's index names (org.opencontainers.image.ref.name).
	Ref string
	// Digest is the image manifest's digest, the digest a registry serves the image under.
	Digest string
}

// LoadRelease reads the artifacts in dir.
func LoadRelease(dir string) (*Release, error) {
	charts, err := filepath.Glob(filepath.Join(dir, "gardener-extension-kube-vip-*.tgz"))
	if err != nil {
		return nil, err
	}
	if len(charts) != 1 {
		return nil, fmt.Errorf("%s holds %d chart archives, want one (run make release-artifacts)", dir, len(charts))
	}
	r := &Release{Dir: dir, Chart: charts[0], Images: map[string]ReleaseImage{}}
	for _, img := range imagebuild.ReleaseImages() {
		layout := filepath.Join(dir, img.Name)
		b, err := os.ReadFile(filepath.Join(layout, "index.json"))
		if err != nil {
			return nil, fmt.Errorf("the release image %s: %w (run make release-artifacts)", img.Name, err)
		}
		var index struct {
			Manifests []struct {
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.Unmarshal(b, &index); err != nil {
			return nil, fmt.Errorf("%s/index.json: %w", layout, err)
		}
		if len(index.Manifests) != 1 {
			return nil, fmt.Errorf("%s/index.json has %d manifests, want one", layout, len(index.Manifests))
		}
		m := index.Manifests[0]
		r.Images[img.Name] = ReleaseImage{Layout: layout, Ref: m.Annotations["org.opencontainers.image.ref.name"], Digest: m.Digest}
	}
	return r, nil
}

// Import loads the release images into every node's containerd as a registry would serve
// them: under their reference and their manifest digest (no registry on the way).
func (r *Release) Import(ctx context.Context, c *nodes.Cluster) error {
	for name, img := range r.Images {
		archive := filepath.Join(r.Dir, name+".oci.tar")
		if err := tarDir(img.Layout, archive); err != nil {
			return fmt.Errorf("archiving the layout of %s: %w", name, err)
		}
		repo, _ := splitRef(img.Ref)
		for _, n := range c.Nodes() {
			// --base-name keeps the full reference of the index; --digests adds repo@digest,
			// which the CRI reports as the pods' imageID.
			cmd := exec.CommandContext(ctx, "ctr", "--address", n.Socket(), "-n", "k8s.io", "images", "import", "--base-name", repo, "--digests", archive)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s: importing %s: %w: %s", n.Name(), img.Ref, err, out)
			}
		}
		if err := os.Remove(archive); err != nil {
			return err
		}
	}
	return nil
}

// tarDir writes the files under dir into a tar archive, with paths relative to dir (the
// oci-archive format ctr imports).
func tarDir(dir, out string) (err error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		if hdr.Name, err = filepath.Rel(dir, path); err != nil {
			return err
		}
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
