// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package imagebuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// lastMatch returns the first group of the last line of the Dockerfile that matches re: a
// second, independent reading of the Dockerfile that the parser's result is checked against.
func lastMatch(t *testing.T, text string, re string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)`+re).FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		t.Fatalf("no line matches %s", re)
	}
	return m[len(m)-1][1]
}

// files reads the flattened file system of an image.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimSuffix(h.Name, "/")] = h
	}
}

func readFile(t *testing.T, img v1.Image, name string) []byte {
	t.Helper()
	b, err := ReadImageFile(img, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImagesMatchDockerfiles builds each image the way the nodes get it (tarball written
// and read back) and checks it against what its Dockerfile says: the binary the builder
// stage writes is the file the final stage copies, at the same path, executable, and the
// config has the Dockerfile's USER and ENTRYPOINT; the user exists in the image.
func TestImagesMatchDockerfiles(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := Config{Root: root, Out: dir, Registry: "localhost/test", Version: "t1"}
	for _, img := range Images {
		t.Run(img.Name, func(t *testing.T) {
			s, err := c.Stage(img)
			if err != nil {
				t.Fatal(err)
			}
			wantUser, wantEntry, wantSrc, wantDst := s.User, s.Entrypoint, "", ""
			if img.Dockerfile != "" {
				b, err := os.ReadFile(filepath.Join(root, img.Dockerfile))
				if err != nil {
					t.Fatal(err)
				}
				text := string(b)
				wantUser = lastMatch(t, text, `^USER\s+(\S+)\s*$`)
				wantEntry = []string{lastMatch(t, text, `^ENTRYPOINT\s+\["([^"]+)"\]\s*$`)}
				wantSrc = lastMatch(t, text, `go build .*-o (\S+) \./cmd/`)
				wantDst = lastMatch(t, text, `^COPY --from=builder \S+ (\S+)\s*$`)
				if got := lastMatch(t, text, `^COPY --from=builder (\S+) \S+\s*$`); got != wantSrc {
					t.Fatalf("the final stage copies %s but the builder writes %s", got, wantSrc)
				}
			} else {
				wantSrc, wantDst = s.Copies[0].Src, s.Copies[0].Dst
			}
			if len(s.Copies) != 1 || s.Copies[0].Src != wantSrc || s.Copies[0].Dst != wantDst {
				t.Fatalf("parsed copies %+v, want %s -> %s", s.Copies, wantSrc, wantDst)
			}
			bin := filepath.Join(dir, img.Name)
			content := []byte("binary of " + img.Name)
			if err := os.WriteFile(bin, content, 0o600); err != nil {
				t.Fatal(err)
			}
			ca := filepath.Join(dir, "ca.crt")
			if err := os.WriteFile(ca, []byte("CA"), 0o600); err != nil {
				t.Fatal(err)
			}
			out := c.Tarball(img)
			o := Options{Tag: c.Ref(img), Files: map[string]string{wantSrc: bin}, CABundle: ca}
			if err := BuildFile(s, o, out); err != nil {
				t.Fatal(err)
			}
			got, err := tarball.ImageFromPath(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := got.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Config.User != wantUser {
				t.Errorf("user %q, Dockerfile says %q", cf.Config.User, wantUser)
			}
			if strings.Join(cf.Config.Entrypoint, " ") != strings.Join(wantEntry, " ") {
				t.Errorf("entrypoint %q, Dockerfile says %q", cf.Config.Entrypoint, wantEntry)
			}
			if cf.OS != "linux" || cf.Architecture != "amd64" {
				t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
			}
			fs := files(t, got)
			h := fs[wantDst]
			if h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o111 != 0o111 || h.Uid != 0 {
				t.Fatalf("%s in the image: %+v, want a root-owned executable file", wantDst, h)
			}
			if b := readFile(t, got, wantDst); !bytes.Equal(b, content) {
				t.Errorf("%s holds %q, want the local binary %q", wantDst, b, content)
			}
			if b := readFile(t, got, "/etc/ssl/certs/ca-certificates.crt"); string(b) != "CA" {
				t.Errorf("CA bundle %q", b)
			}
			if h := fs["/tmp"]; h == nil || h.Mode != 0o1777 {
				t.Errorf("/tmp: %+v, want mode 1777", h)
			}
			uid, _, _ := strings.Cut(wantUser, ":")
			if uid != "65535" && !regexp.MustCompile(`(?m)^[a-z]+:x:`+uid+`:`).Match(readFile(t, got, "/etc/passwd")) {
				t.Errorf("user %s is not in /etc/passwd", uid)
			}
		})
	}
}

func TestParseDockerfileRefusesWhatItCannotBuild(t *testing.T) {
	for name, text := range map[string]string{
		"RUN in the final stage": "FROM golang AS builder\nRUN true\nFROM scratch\nRUN true\n",
		"shell-form entrypoint":  "FROM scratch\nENTRYPOINT /bin/x\n",
		"unknown instruction":    "FROM scratch\nHEALTHCHECK NONE\n",
		"no FROM":                "# empty\n",
	} {
		if _, err := ParseDockerfile(strings.NewReader(text)); err == nil {
			t.Errorf("%s: parsed without an error", name)
		}
	}
	s, err := ParseDockerfile(strings.NewReader("FROM golang AS builder\nRUN go build \\\n  -o /out/x .\nFROM base:nonroot\nCOPY --from=builder /out/x /x\nUSER 1:1\nENTRYPOINT [\"/x\", \"-v\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Base != "base:nonroot" || s.User != "1:1" || len(s.Copies) != 1 || s.Copies[0] != (Copy{From: "builder", Src: "/out/x", Dst: "/x"}) || len(s.Entrypoint) != 2 {
		t.Errorf("parsed %+v", s)
	}
}

func TestBuildRefusesAnUnknownBase(t *testing.T) {
	_, _, err := Build(&Stage{Base: "alpine:3", Entrypoint: []string{"/x"}}, Options{Tag: "localhost/x:1"})
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("err = %v", err)
	}
}

// scratchDockerfile has the shape of upstream kube-vip's Dockerfile: a builder stage with
// ENV and RUN --mount, and a final stage on scratch that copies the CA bundle and the
// binary from it, as root, with the binary as the entrypoint.
const scratchDockerfile = `# syntax=docker/dockerfile:experimental
FROM golang:1-alpine as dev
ENV GO111MODULE=on
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 make build

FROM scratch
COPY --from=dev /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=dev /src/tool /
ENTRYPOINT ["/tool"]
`

// TestBuildOnScratch: an image on scratch holds only what its stage copies (with their
// parent directories), runs as root (no USER), and has BuildKit's PATH and no stand-in.
func TestBuildOnScratch(t *testing.T) {
	s, err := ParseDockerfile(strings.NewReader(scratchDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, ca := filepath.Join(dir, "tool"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(bin, []byte("binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, []byte("CA"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tool.tar")
	o := Options{Tag: "registry.example/tool:v1", Files: map[string]string{"/src/tool": bin, "/etc/ssl/certs/ca-certificates.crt": ca}, CABundle: "/nonexistent"}
	if err := BuildFile(s, o, out); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "" || strings.Join(cf.Config.Entrypoint, " ") != "/tool" || len(cf.Config.Labels) != 0 ||
		len(cf.Config.Env) != 1 || !strings.HasPrefix(cf.Config.Env[0], "PATH=") {
		t.Errorf("config %+v, want root, entrypoint /tool, PATH only, no labels", cf.Config)
	}
	var names []string
	for name, h := range files(t, img) {
		names = append(names, name)
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, want root", name, h.Uid, h.Gid)
		}
	}
	slices.Sort(names)
	want := []string{"/etc", "/etc/ssl", "/etc/ssl/certs", "/etc/ssl/certs/ca-certificates.crt", "/tool"}
	if !slices.Equal(names, want) {
		t.Errorf("image files %q, want %q", names, want)
	}
	if b := readFile(t, img, "/tool"); string(b) != "binary" {
		t.Errorf("/tool holds %q", b)
	}
	if b := readFile(t, img, "/etc/ssl/certs/ca-certificates.crt"); string(b) != "CA" {
		t.Errorf("CA bundle %q", b)
	}
}
