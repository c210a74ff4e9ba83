// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// imagebuild builds the controller, agent and sandbox images from the project's sources
// without Docker or a registry and writes one docker-archive tarball per image, ready for
// `ctr -n k8s.io images import`; with -layout, the controller and agent images (what a release
// publishes) as OCI image layouts, one directory per image, each an index of the -arch
// architectures whose images carry the org.opencontainers.image.* labels.
//
//	go run ./hack/tools/imagebuild/cmd/imagebuild -o .local/images -version dev
//	go run ./hack/tools/imagebuild/cmd/imagebuild -layout -o bin/release -registry ghcr.io/<owner> -version v0.1.0 \
//	  -source https://github.com/<owner>/<repo> -revision $(git rev-parse HEAD)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gardener/gardener-extension-kube-vip/hack/tools/imagebuild"
)

func main() {
	c := imagebuild.Config{}
	flag.StringVar(&c.Root, "root", ".", "module root")
	flag.StringVar(&c.Out, "o", ".local/images", "output directory")
	flag.StringVar(&c.Registry, "registry", "localhost/kube-vip", "image reference prefix")
	flag.StringVar(&c.Version, "version", "dev", "image tag and the binaries' version")
	flag.StringVar(&c.CABundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA bundle for the images (empty: none)")
	flag.BoolVar(&c.Layout, "layout", false, "write the release images as OCI image layouts")
	arches := flag.String("arch", "amd64,arm64", "architectures of a layout, comma-separated")
	source := flag.String("source", "", "with -layout: the source repository URL (label org.opencontainers.image.source)")
	revision := flag.String("revision", "", "with -layout: the commit (label org.opencontainers.image.revision)")
	licenses := flag.String("licenses", "Apache-2.0", "with -layout: the SPDX licence expression (label org.opencontainers.image.licenses)")
	flag.Parse()
	if c.Layout {
		if *source == "" || *revision == "" {
			fmt.Fprintln(os.Stderr, "imagebuild: -layout needs -source and -revision (the release images' labels)")
			os.Exit(2)
		}
		c.Arches = strings.Split(*arches, ",")
		c.Labels = imagebuild.OCILabels(*source, *revision, c.Version, *licenses)
	}
	images := imagebuild.Images
	if c.Layout {
		images = imagebuild.ReleaseImages()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := imagebuild.BuildAll(ctx, c, images); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
	for _, img := range images {
		fmt.Printf("%s %s\n", c.Ref(img), c.Tarball(img))
	}
}
