// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package imagebuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sync/errgroup"
)

// Image is one of the project's images: the binary it is built from and the stage that
// describes it.
type Image struct {
	// Name is the short name: the binary, the tarball and the last part of the reference.
	Name string
	// Package is the Go package of the binary, relative to the module root.
	Package string
	// Dockerfile is the Dockerfile whose final stage describes the image, relative to the
	// module root; empty for the pause image, whose stage is PauseStage.
	Dockerfile string
	// VersionFlag says whether the binary takes -X main.version (as the Dockerfile sets).
	VersionFlag bool
}

// Images are the controller, the agent and the sandbox image.
var Images = []Image{
	{Name: "gardener-extension-kube-vip", Package: "./cmd/gardener-extension-kube-vip", Dockerfile: "Dockerfile.controller", VersionFlag: true},
	{Name: "kube-vip-agent", Package: "./cmd/kube-vip-agent", Dockerfile: "Dockerfile.agent", VersionFlag: true},
	{Name: "pause", Package: "./hack/tools/imagebuild/cmd/pause"},
}

// ReleaseImages are the images a release publishes: those a Dockerfile describes.
func ReleaseImages() []Image {
	var out []Image
	for _, img := range Images {
		if img.Dockerfile != "" {
			out = append(out, img)
		}
	}
	return out
}

// Config says where the project is, which version to stamp and where the output goes.
type Config struct {
	// Root is the module root.
	Root string
	// Out is the output directory: <name>.tar per image and bin/<name> per binary.
	Out string
	// Registry is the reference prefix, e.g. localhost/kube-vip.
	Registry string
	// Version is the image tag and the agent's main.version.
	Version string
	// CABundle is the host CA bundle put into every image; empty for none.
	CABundle string
	// Layout writes each image as an OCI image layout (the directory Out/<name>) instead of
	// a docker-archive tarball: one image per architecture of Arches under one index.
	Layout bool
	// Arches are the architectures of a layout (GOARCH); amd64 alone if empty. A tarball
	// is always amd64, the architecture of the nodes it is imported into.
	Arches []string
	// Labels go into every image's config (the org.opencontainers.image.* labels of a release).
	Labels map[string]string
}

// OCILabels are the labels a release image carries: where its source is (which also links a
// GHCR package to its repository), the commit, the version and the licence.
func OCILabels(source, revision, version, licenses string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.licenses": licenses,
	}
}

// Ref is the image reference of an image under the config.
func (c Config) Ref(img Image) string {
	return fmt.Sprintf("%s/%s:%s", c.Registry, img.Name, c.Version)
}

// Tarball is the path of an image's docker-archive under the config, or of its OCI image
// layout with Layout.
func (c Config) Tarball(img Image) string {
	if c.Layout {
		return filepath.Join(c.Out, img.Name)
	}
	return filepath.Join(c.Out, img.Name+".tar")
}

// Stage is the final stage an image is built from.
func (c Config) Stage(img Image) (*Stage, error) {
	if img.Dockerfile == "" {
		return PauseStage(), nil
	}
	return ParseDockerfileFile(filepath.Join(c.Root, img.Dockerfile))
}

// BuildAll builds each image's binary the way its Dockerfile's builder stage does (static,
// trimmed, stripped), per architecture, and then the image tarball or layout.
func BuildAll(ctx context.Context, c Config, images []Image) error {
	if err := os.MkdirAll(filepath.Join(c.Out, "bin"), 0o755); err != nil {
		return err
	}
	arches := []string{"amd64"}
	if c.Layout && len(c.Arches) > 0 {
		arches = c.Arches
	}
	stages := make([]*Stage, len(images))
	for i, img := range images {
		s, err := c.Stage(img)
		if err != nil {
			return err
		}
		if len(s.Copies) != 1 {
			return fmt.Errorf("%s: the final stage copies %d files; one binary is expected", img.Name, len(s.Copies))
		}
		stages[i] = s
	}
	// One architecture's builds after another, the architectures side by side: builds for
	// one architecture share most packages, which two go commands at once would both
	// compile on a cold cache, while on a warm one each build is mostly its link, on one core.
	g, gctx := errgroup.WithContext(ctx)
	for _, arch := range arches {
		g.Go(func() error {
			for _, img := range images {
				if err := goBuild(gctx, c, img, arch, binaryPath(c, img, arch)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, img := range images {
		var variants []Variant
		for _, arch := range arches {
			variants = append(variants, Variant{Arch: arch, Files: map[string]string{stages[i].Copies[0].Src: binaryPath(c, img, arch)}})
		}
		o := Options{Tag: c.Ref(img), CABundle: c.CABundle, Labels: c.Labels}
		var err error
		if c.Layout {
			err = BuildLayout(stages[i], o, variants, c.Tarball(img))
		} else {
			o.Files = variants[0].Files
			err = BuildFile(stages[i], o, c.Tarball(img))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", img.Name, err)
		}
	}
	return nil
}

// binaryPath is where BuildAll puts an image's binary for arch; the amd64 binary keeps its
// plain name (the demo and tests run bin/<name>).
func binaryPath(c Config, img Image, arch string) string {
	bin := filepath.Join(c.Out, "bin", img.Name)
	if arch != "amd64" {
		bin += "-" + arch
	}
	return bin
}

func goBuild(ctx context.Context, c Config, img Image, arch, out string) error {
	ldflags := "-s -w"
	if img.VersionFlag {
		ldflags += " -X main.version=" + c.Version
	}
	// -buildvcs=false: the Dockerfiles build without .git, so their binaries carry no commit;
	// neither do these, and the same sources give the same digests whatever the checkout.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", out, img.Package)
	cmd.Dir = c.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", img.Package, err, b)
	}
	return nil
}
