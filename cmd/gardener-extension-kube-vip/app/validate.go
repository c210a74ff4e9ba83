// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener/gardener-extension-kube-vip/controller/exposure"
)

// NewValidateCommand checks the kube-vip exposure providerConfig of the Shoots in YAML
// files offline, e.g. gardenadm's config directory before `gardenadm init`.
func NewValidateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate PATH...",
		Short: "Checks the kube-vip exposure providerConfig of the Shoots in YAML files or directories, offline.",
		Long: "Checks the kube-vip exposure providerConfig of every Shoot in the given YAML files (directories: every .yaml and .yml file in them, " +
			"as gardenadm init -d reads them) with the controller's decoder and checks, and prints the error the exposure's status would show. " +
			"That a named network, subnet or floating pool exists is checked by the controller against Neutron.",
		Args:          cobra.MinimumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return validatePaths(cmd.OutOrStdout(), args)
		},
	}
}

// errInvalid reports that a Shoot failed the check (its error is printed already).
var errInvalid = errors.New("the provider config is invalid")

func validatePaths(out io.Writer, paths []string) error {
	files, err := yamlFiles(paths)
	if err != nil {
		return err
	}
	shoots := 0
	failed := false
	for _, file := range files {
		found, err := shootsIn(file)
		if err != nil {
			return err
		}
		for _, shoot := range found {
			shoots++
			name := fmt.Sprintf("%s: Shoot %s/%s", file, shoot.Namespace, shoot.Name)
			if err := exposure.ValidateShoot(shoot); err != nil {
				failed = true
				_, _ = fmt.Fprintf(out, "%s: %v\n", name, err)
				continue
			}
			_, _ = fmt.Fprintf(out, "%s: valid\n", name)
		}
	}
	switch {
	case shoots == 0:
		return fmt.Errorf("no Shoot in %s", strings.Join(paths, ", "))
	case failed:
		return errInvalid
	}
	return nil
}

// yamlFiles expands directories into their .yaml and .yml files, sorted.
func yamlFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(files)
	return files, nil
}

// shootsIn reads the Shoots among the YAML documents of a file.
func shootsIn(file string) ([]*gardencorev1beta1.Shoot, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var shoots []*gardencorev1beta1.Shoot
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return shoots, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if meta.Kind != "Shoot" || meta.APIVersion != gardencorev1beta1.SchemeGroupVersion.String() {
			continue
		}
		shoot := &gardencorev1beta1.Shoot{}
		if err := yaml.Unmarshal(doc, shoot); err != nil {
			return nil, fmt.Errorf("reading the Shoot in %s: %w", file, err)
		}
		shoots = append(shoots, shoot)
	}
}
