// SPDX-FileCopyrightText: 2026 SAP SE or an SAP affiliate company and Gardener contributors
//
// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package deps pins the libraries the project builds on, so that go.mod lists them
// before the code that uses them lands, and so that `go build -tags tools ./hack/tools/deps`
// warms the build cache in one step.
package deps

import (
	_ "github.com/gardener/gardener/extensions/pkg/controller/cmd"
	_ "github.com/gardener/gardener/extensions/pkg/controller/heartbeat"
	_ "github.com/gardener/gardener/extensions/pkg/controller/heartbeat/cmd"
	_ "github.com/gardener/gardener/extensions/pkg/controller/selfhostedshootexposure"
	_ "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	_ "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	_ "github.com/gardener/gardener/pkg/chartrenderer"
	_ "github.com/gardener/gardener/pkg/logger"
	_ "github.com/go-logr/logr"
	_ "github.com/gophercloud/gophercloud/v2/openstack"
	_ "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	_ "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	_ "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	_ "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	_ "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	_ "github.com/gophercloud/gophercloud/v2/testhelper"
	_ "github.com/mdlayher/arp"
	_ "github.com/mdlayher/ethernet"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/spf13/pflag"
	_ "github.com/vishvananda/netlink"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/leaderelection/resourcelock"
	_ "k8s.io/client-go/tools/watch"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
)
