// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package imagebuild

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// LayoutWant is what CheckLayout expects of a release image's OCI layout.
type LayoutWant struct {
	// Ref is the index's org.opencontainers.image.ref.name.
	Ref string
	// Arches are the architectures of its linux images, in the index's order.
	Arches []string
	// Labels each image's config carries; an empty value asks only for a non-empty one.
	Labels map[string]string
	// Binary, when set, is a file in each image that must be an ELF executable for the
	// image's architecture: a real build, not a stand-in.
	Binary string
}

// elfMachines are the ELF machines of the architectures a release is built for.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// CheckLayout checks the OCI image layout at dir against want and returns every difference.
func CheckLayout(dir string, want LayoutWant) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		return err
	}
	root, err := p.ImageIndex()
	if err != nil {
		return err
	}
	m, err := root.IndexManifest()
	if err != nil {
		return err
	}
	var refs []string
	for _, d := range m.Manifests {
		refs = append(refs, d.Annotations["org.opencontainers.image.ref.name"])
	}
	if len(refs) != 1 || refs[0] != want.Ref {
		return fmt.Errorf("%s holds the entries %q, want one index named %s", dir, refs, want.Ref)
	}
	idx, err := root.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return fmt.Errorf("%s: the layout's entry is no image index: %w", dir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var errs []error
	var arches []string
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		arches = append(arches, cf.Architecture)
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != cf.Architecture || cf.OS != "linux" {
			errs = append(errs, fmt.Errorf("index entry platform %+v, image config %s/%s", d.Platform, cf.OS, cf.Architecture))
		}
		for k, v := range want.Labels {
			if got := cf.Config.Labels[k]; got == "" || (v != "" && got != v) {
				errs = append(errs, fmt.Errorf("%s: label %s = %q, want %q", cf.Architecture, k, got, v))
			}
		}
		if want.Binary != "" {
			if err := checkBinary(img, want.Binary, cf.Architecture); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", cf.Architecture, err))
			}
		}
	}
	if !slices.Equal(arches, want.Arches) {
		errs = append(errs, fmt.Errorf("architectures %v, want %v", arches, want.Arches))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}

// checkBinary checks that path in img's flattened filesystem is an ELF executable for arch.
func checkBinary(img v1.Image, path, arch string) error {
	b, err := ReadImageFile(img, path)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s is no ELF file: %w", path, err)
	}
	if f.Machine != elfMachines[arch] || f.Type != elf.ET_EXEC {
		return fmt.Errorf("%s is an ELF %s for %s, want an executable for %s", path, f.Type, f.Machine, elfMachines[arch])
	}
	return nil
}

// ReadImageFile returns the content of the file at path (absolute) in img's flattened
// filesystem, as a container would see it.
func ReadImageFile(img v1.Image, path string) ([]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	b, found, err := fileOf(rc, strings.TrimPrefix(path, "/"))
	if err != nil {
		return nil, fmt.Errorf("reading %s from the image: %w", path, err)
	}
	if !found {
		return nil, fmt.Errorf("the image holds no %s", path)
	}
	return b, nil
}

// fileOf returns the content of the file name in the tar stream r.
func fileOf(r io.Reader, name string) ([]byte, bool, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if strings.TrimPrefix(h.Name, "./") == name {
			b, err := io.ReadAll(tr)
			return b, err == nil, err
		}
	}
}
