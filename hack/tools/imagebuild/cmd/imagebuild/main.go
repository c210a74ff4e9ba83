// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// imagebuild builds the controller, agent and sandbox images from the project's sources
// without Docker or a registry and writes one docker-archive tarball per image, ready for
// `ctr -n k8s.io images import`; with -layout, the controller and agent images (what a release
// publishes) as OCI image layouts, one directory per image.
//
//	go run ./hack/tools/imagebuild/cmd/imagebuild -o .local/images -version dev
//	go run ./hack/tools/imagebuild/cmd/imagebuild -layout -o bin/release -registry ghcr.io/<owner> -version v0.1.0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
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
	flag.Parse()
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
