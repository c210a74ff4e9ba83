// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package imagebuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayoutPlatformsAndLabels writes a release layout of two architectures (stand-in files
// for the binaries): one index, a linux/amd64 and a linux/arm64 image, both labelled; and
// CheckLayout tells stand-ins and a missing architecture apart from that.
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
	want := LayoutWant{Ref: "ghcr.io/test/x:v9.9.9", Arches: []string{"amd64", "arm64"}, Labels: labels}
	if err := CheckLayout(out, want); err != nil {
		t.Fatal(err)
	}
	// The stand-ins are no binaries: asking for a real build finds that.
	want.Binary = "/x"
	if err := CheckLayout(out, want); err == nil || !strings.Contains(err.Error(), "/x is no ELF file") {
		t.Errorf("CheckLayout of the stand-ins as binaries: %v, want an error for /x", err)
	}
	// An amd64 executable (this test's own) in both images: the arm64 one is found out.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	amd64 := map[string]string{"/out/x": self}
	wrong := filepath.Join(dir, "wrong")
	if err := BuildLayout(s, Options{Tag: "ghcr.io/test/x:v9.9.9", Labels: labels}, []Variant{{Arch: "amd64", Files: amd64}, {Arch: "arm64", Files: amd64}}, wrong); err != nil {
		t.Fatal(err)
	}
	if err := CheckLayout(wrong, want); err == nil || !strings.Contains(err.Error(), "arm64: /x is an ELF") {
		t.Errorf("CheckLayout of an amd64 binary in the arm64 image: %v, want an error for arm64", err)
	}
	want.Binary, want.Arches = "", []string{"amd64"}
	if err := CheckLayout(out, want); err == nil || !strings.Contains(err.Error(), "architectures [amd64 arm64], want [amd64]") {
		t.Errorf("CheckLayout for amd64 alone: %v, want the architectures named", err)
	}
}
