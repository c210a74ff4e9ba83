// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gardener/gardener-extension-kube-vip/charts"
	"github.com/gardener/gardener-extension-kube-vip/hack/tools/imagebuild"
)

// kubeVIPModule is upstream kube-vip's Go module.
const kubeVIPModule = "github.com/kube-vip/kube-vip"

// LoadKubeVIP builds upstream kube-vip's image, as an operator mirrors it, and imports it
// into every node's containerd under the reference the extension's image vector names for
// kube-vip (so the controller's default kube-vip image is present and the kubelet pulls
// nothing). The binary comes from the Go module proxy at the vector's tag
// (hack/bench/build-kube-vip.sh); the image is what the final stage of that release's own
// Dockerfile says (scratch, the CA bundle, /kube-vip as the entrypoint, root), read from
// the module. It returns the reference.
func (c *Cluster) LoadKubeVIP(ctx context.Context) (string, error) {
	ref, err := charts.FindImage(charts.ImageNameKubeVip)
	if err != nil {
		return "", err
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("the image vector's kube-vip image %q has no plain tag to build: %w", ref, err)
	}
	version := tag.TagStr()
	bin, err := buildKubeVIP(ctx, c.images.Root, version)
	if err != nil {
		return "", err
	}
	dir, err := moduleDir(ctx, kubeVIPModule, version)
	if err != nil {
		return "", err
	}
	stage, err := imagebuild.ParseDockerfileFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return "", err
	}
	files := map[string]string{}
	for _, cp := range stage.Copies {
		switch {
		case cp.Dst == c.images.CABundle && c.images.CABundle != "":
			files[cp.Src] = c.images.CABundle
		case path.Base(cp.Src) == "kube-vip":
			files[cp.Src] = bin
		default:
			return "", fmt.Errorf("kube-vip %s's Dockerfile copies %s to %s, which this build does not provide", version, cp.Src, cp.Dst)
		}
	}
	out := filepath.Join(c.images.Out, "kube-vip-"+version+".tar")
	if err := imagebuild.BuildFile(stage, imagebuild.Options{Tag: ref, Files: files}, out); err != nil {
		return "", fmt.Errorf("kube-vip image: %w", err)
	}
	for _, n := range c.nodes {
		if err := n.ImportImage(ctx, out); err != nil {
			return "", fmt.Errorf("%s: %w", n.Name(), err)
		}
	}
	return ref, nil
}

// buildKubeVIP builds (or finds cached) kube-vip at version and returns the binary's path.
func buildKubeVIP(ctx context.Context, root, version string) (string, error) {
	return runScript(ctx, root, []string{"KUBE_VIP_VERSION=" + version}, "hack/bench/build-kube-vip.sh")
}

// runScript runs one of the repository's scripts (path relative to root, in root, with
// env added to the environment) and returns its trimmed standard output.
func runScript(ctx context.Context, root string, env []string, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, script), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", script, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// moduleDir is the directory of a module version in the module cache (downloading it
// through the module proxy if it is not there).
func moduleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	// Outside any module, so that nothing of it is read or written.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GONOSUMDB="+module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || err != nil || info.Error != "" || info.Dir == "" {
		cause := errors.Join(err, jerr)
		if cause == nil {
			cause = fmt.Errorf("no module directory: %q", info.Error)
		}
		return "", fmt.Errorf("go mod download %s@%s: %w: %s", module, version, cause, stderr.String())
	}
	return info.Dir, nil
}
