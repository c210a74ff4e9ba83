// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Command package-chart packages charts/gardener-extension-kube-vip reproducibly, as
// `helm package` would, into the directory given as its only argument and prints the path of
// the archive: the artifact a release pushes to the OCI repository that
// manifests/operator/extension.yaml names. Run it from the repository root (`make chart` does).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/gardener/gardener-extension-kube-vip/manifests/gen"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: package-chart <output directory>")
		os.Exit(2)
	}
	path, err := run(".", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(path)
}

func run(root, outDir string) (string, error) {
	dir := filepath.Join(root, gen.ChartDir)
	meta, err := chartutil.LoadChartfile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading the chart's metadata: %w", err)
	}
	data, err := gen.PackageChart(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(outDir, fmt.Sprintf("%s-%s.tgz", meta.Name, meta.Version))
	return path, os.WriteFile(path, data, 0o644)
}
