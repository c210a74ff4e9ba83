// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package imagebuild

import (
	"archive/tar"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// distrolessStatic is the base both project Dockerfiles use. Without a registry it cannot
// be pulled, so baseLayer stands in for it with the parts a static Go binary uses: the
// users and groups, /tmp, the nonroot home and the CA bundle.
const distrolessStatic = "gcr.io/distroless/static-debian12"

// scratch is the empty base (upstream kube-vip's final stage uses it); an image on it has
// only what its stage copies, and the PATH that BuildKit sets for every image.
const (
	scratch     = "scratch"
	defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// Environment and working directories distroless static sets in its config.
var (
	baseEnv     = []string{defaultPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	baseWorkDir = map[string]string{"": "/", "latest": "/", "nonroot": "/home/nonroot"}
)

// The users of distroless static, by name, with uid = gid.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n"
)

// Options say where the files a stage copies come from and how the image is named.
type Options struct {
	// Tag is the image reference, e.g. localhost/kube-vip/kube-vip-agent:dev.
	Tag string
	// Files maps the source of each COPY (a path in the builder stage) to a local file.
	Files map[string]string
	// CABundle is the host's CA bundle copied to /etc/ssl/certs/ca-certificates.crt of the
	// distroless stand-in; empty for none. A stage on scratch copies its own, through Files.
	CABundle string
	// Arch is the image's architecture (GOARCH of the files); amd64 if empty.
	Arch string
	// Labels are set in the image config, e.g. the org.opencontainers.image.* labels.
	Labels map[string]string
}

// Variant is one architecture of a multi-architecture image: its files.
type Variant struct {
	Arch  string
	Files map[string]string
}

// PauseStage is the sandbox (pause) image: one static binary that sleeps until it is
// signalled, run as the unprivileged user upstream's pause image uses.
func PauseStage() *Stage {
	return &Stage{
		Base:       distrolessStatic + ":nonroot",
		Copies:     []Copy{{From: "builder", Src: "/out/pause", Dst: "/pause"}},
		User:       "65535:65535",
		Entrypoint: []string{"/pause"},
	}
}

// Build builds the image a stage describes, on the distroless stand-in or on scratch.
func Build(s *Stage, o Options) (v1.Image, name.Tag, error) {
	ref, err := name.NewTag(o.Tag)
	if err != nil {
		return nil, name.Tag{}, fmt.Errorf("image tag %q: %w", o.Tag, err)
	}
	var layers []v1.Layer
	env, workDir := []string{defaultPath}, "/"
	var labels map[string]string
	for k, v := range o.Labels {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	if s.Base != scratch {
		baseName, variant, _ := strings.Cut(s.Base, ":")
		var ok bool
		workDir, ok = baseWorkDir[variant]
		if baseName != distrolessStatic || !ok {
			return nil, name.Tag{}, fmt.Errorf("base image %s is not supported; only %s[:nonroot] has a stand-in, and %s needs none", s.Base, distrolessStatic, scratch)
		}
		base, err := baseLayer(o.CABundle)
		if err != nil {
			return nil, name.Tag{}, err
		}
		layers = append(layers, base)
		env = baseEnv
		if labels == nil {
			labels = map[string]string{}
		}
		labels["io.gardener.kube-vip.base-stand-in"] = s.Base
	}
	app, err := appLayer(s.Copies, o.Files, s.Base == scratch)
	if err != nil {
		return nil, name.Tag{}, err
	}
	img, err := mutate.AppendLayers(empty.Image, append(layers, app)...)
	if err != nil {
		return nil, name.Tag{}, fmt.Errorf("appending layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, name.Tag{}, fmt.Errorf("reading the image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", cmp.Or(o.Arch, "amd64")
	cf.Config.Env = append([]string(nil), env...)
	cf.Config.WorkingDir = workDir
	cf.Config.User = s.User
	cf.Config.Entrypoint = append([]string(nil), s.Entrypoint...)
	cf.Config.Labels = labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, name.Tag{}, fmt.Errorf("setting the image config: %w", err)
	}
	return img, ref, nil
}

// BuildFile builds the image and writes it as a docker-archive tarball to out.
func BuildFile(s *Stage, o Options, out string) error {
	img, ref, err := Build(s, o)
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return os.Rename(tmp, out)
}

// BuildLayout builds the image for each variant and writes them as one multi-architecture
// image (an index of one manifest per architecture) in an OCI image layout to the directory
// dir (replaced if it exists), the index annotated with the reference, as `crane push <dir>`
// reads it.
func BuildLayout(s *Stage, o Options, variants []Variant, dir string) error {
	var (
		addenda []mutate.IndexAddendum
		ref     name.Tag
	)
	for _, v := range variants {
		vo := o
		vo.Arch, vo.Files = v.Arch, v.Files
		img, r, err := Build(s, vo)
		if err != nil {
			return fmt.Errorf("%s: %w", v.Arch, err)
		}
		ref = r
		addenda = append(addenda, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: v.Arch}}})
	}
	if len(addenda) == 0 {
		return fmt.Errorf("%s: no architecture to build", dir)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.DockerManifestList), addenda...)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()})); err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	return nil
}

// entry is one file or directory of a layer.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
	dir      bool
}

func baseLayer(caBundle string) (v1.Layer, error) {
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, gid: 65532, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	if caBundle != "" {
		ca, err := os.ReadFile(caBundle)
		if err != nil {
			return nil, fmt.Errorf("reading the CA bundle: %w", err)
		}
		entries = append(entries,
			entry{name: "etc/ssl/", mode: 0o755, dir: true},
			entry{name: "etc/ssl/certs/", mode: 0o755, dir: true},
			entry{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca})
	}
	return layer(entries)
}

// appLayer lays the copied files out; withDirs adds their parent directories.
func appLayer(copies []Copy, files map[string]string, withDirs bool) (v1.Layer, error) {
	var (
		entries []entry
		dirs    map[string]bool
	)
	if withDirs {
		dirs = map[string]bool{}
	}
	for _, c := range copies {
		src, ok := files[c.Src]
		if !ok {
			return nil, fmt.Errorf("COPY %s %s: no local file given for %s", c.Src, c.Dst, c.Src)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("COPY %s %s: %w", c.Src, c.Dst, err)
		}
		dst := c.Dst
		if strings.HasSuffix(dst, "/") {
			dst += path.Base(c.Src)
		}
		dst = strings.TrimPrefix(path.Clean(dst), "/")
		entries = append(entries, parentDirs(dst, dirs)...)
		entries = append(entries, entry{name: dst, mode: 0o755, data: data})
	}
	return layer(entries)
}

// parentDirs are the directory entries a file at name needs that seen does not hold yet,
// outermost first; it adds them to seen. On a base with a file system (distroless), a
// directory entry of the upper layer would replace the lower one's mode and owner, so
// only a layer onto scratch gets them.
func parentDirs(name string, seen map[string]bool) []entry {
	if seen == nil {
		return nil
	}
	var out []entry
	for dir := path.Dir(name); dir != "." && !seen[dir]; dir = path.Dir(dir) {
		seen[dir] = true
		out = append([]entry{{name: dir + "/", mode: 0o755, dir: true}}, out...)
	}
	return out
}

// layer writes the entries into a reproducible (zero mtime) uncompressed tar layer.
func layer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}
