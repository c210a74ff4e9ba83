// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

const (
	// VersionFile holds the release version (e.g. v0.1.0), the one source of it.
	VersionFile = "VERSION"
	// ImageVectorFile is the embedded image vector, relative to the repository root.
	ImageVectorFile = "charts/images.yaml"
	// DefaultRegistry is where the release workflow pushes when nothing else is said:
	// ghcr.io/<owner>.
	DefaultRegistry = "ghcr.io/gardener-extension-kube-vip"
	// ControllerImage and AgentImage are the names of the two images under the registry.
	ControllerImage = "gardener-extension-kube-vip"
	AgentImage      = "kube-vip-agent"
)

// Release names what a release publishes: its version and the registry it pushes to.
type Release struct {
	// Version is the content of VERSION, e.g. v0.1.0.
	Version string
	// Registry is the prefix of the images and the chart, e.g. ghcr.io/<owner>.
	Registry string
}

// ReadVersion reads VERSION at root.
func ReadVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, VersionFile))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(v) {
		return "", fmt.Errorf("%s holds %q, want a version like v1.2.3", VersionFile, v)
	}
	return v, nil
}

// ChartVersion is the chart's SemVer version: the release version without its "v". It is
// also the tag `helm push` gives the chart in the OCI registry.
func (r Release) ChartVersion() string { return strings.TrimPrefix(r.Version, "v") }

// Image is the repository of one of the project's images.
func (r Release) Image(name string) string { return r.Registry + "/" + name }

// ChartRepository is the OCI repository of the chart (without oci://).
func (r Release) ChartRepository() string { return r.Registry + "/charts/" + ControllerImage }

// edit sets the value of key in the first line `key: …` that follows the line matching
// anchor (both matched after leading blanks), keeping the indentation and the rest of the
// file, comments included.
type edit struct{ anchor, key, value string }

// Stamp writes the version and registry into the hand-kept files that name them: the
// chart's Chart.yaml and values.yaml, the image vector and the operator Extension.
func Stamp(root string, r Release) error {
	files := map[string][]edit{
		filepath.Join(ChartDir, "Chart.yaml"): {
			{"", "version", r.ChartVersion()},
			{"", "appVersion", r.Version},
		},
		filepath.Join(ChartDir, "values.yaml"): {
			{"image:", "repository", r.Image(ControllerImage)},
			{"image:", "tag", r.Version},
		},
		ImageVectorFile: {
			{"- name: " + ControllerImage, "repository", r.Image(ControllerImage)},
			{"- name: " + ControllerImage, "tag", r.Version},
			{"- name: " + AgentImage, "repository", r.Image(AgentImage)},
			{"- name: " + AgentImage, "tag", r.Version},
		},
		ExtensionFile: {
			{"ociRepository:", "repository", r.ChartRepository()},
			{"ociRepository:", "tag", r.ChartVersion()},
			{"image:", "repository", r.Image(ControllerImage)},
			{"image:", "tag", r.Version},
		},
	}
	for file, edits := range files {
		path := filepath.Join(root, file)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		for _, e := range edits {
			if err := e.apply(lines); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (e edit) apply(lines []string) error {
	start := 0
	if e.anchor != "" {
		start = -1
		for i, l := range lines {
			if strings.TrimSpace(l) == e.anchor {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return fmt.Errorf("no line %q", e.anchor)
		}
	}
	for i := start; i < len(lines); i++ {
		rest := strings.TrimLeft(lines[i], " ")
		if strings.HasPrefix(rest, e.key+":") {
			lines[i] = lines[i][:len(lines[i])-len(rest)] + e.key + ": " + e.value
			return nil
		}
	}
	return fmt.Errorf("no %q after %q", e.key, e.anchor)
}
