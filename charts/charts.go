// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package charts embeds the extension's image vector (images.yaml) and names its images.
package charts

import (
	_ "embed"
	"fmt"

	"github.com/gardener/gardener/pkg/utils/imagevector"
)

const (
	// ImageNameController is the image of the extension controller.
	ImageNameController = "gardener-extension-kube-vip"
	// ImageNameAgent is the image of the kube-vip-agent DaemonSet.
	ImageNameAgent = "kube-vip-agent"
	// ImageNameKubeVip is the image of upstream kube-vip (agent implementation kube-vip).
	ImageNameKubeVip = "kube-vip"
)

// ImagesYAML is the content of images.yaml.
//
//go:embed images.yaml
var ImagesYAML []byte

// ImageVector returns the embedded image vector merged with the overwrite file that the
// environment variable IMAGEVECTOR_OVERWRITE names, if it is set.
func ImageVector() (imagevector.ImageVector, error) {
	vector, _, err := imagevector.Read(ImagesYAML)
	if err != nil {
		return nil, fmt.Errorf("reading the embedded image vector: %w", err)
	}
	vector, _, err = imagevector.WithEnvOverride(vector, nil, imagevector.OverrideEnv)
	if err != nil {
		return nil, fmt.Errorf("applying the image vector overwrite of $%s: %w", imagevector.OverrideEnv, err)
	}
	return vector, nil
}

// FindImage returns the reference of the named image of ImageVector, e.g.
// "repo/agent:v0.1.0", "repo/agent@sha256:…" or "repo/agent:v0.1.0@sha256:…".
func FindImage(name string) (string, error) {
	vector, err := ImageVector()
	if err != nil {
		return "", err
	}
	image, err := vector.FindImage(name)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", name, err)
	}
	return image.String(), nil
}
