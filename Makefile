# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# gardener-extension-kube-vip
#
#   make demo   the extension end to end on 3 real nodes (kubelet + containerd) + local Keystone/Neutron (make demo-down stops it)
#   make check  vet, gofmt, the SPDX headers, the generate check, actionlint, helm lint, golangci-lint
#   make test   integration tests against the real parts, the dataplanes, then make check and the unit tests
#
# Needs Debian (apt), Go (go.mod's version) and root; see README.md.

SHELL := /bin/bash
comma := ,
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

export GONOSUMDB := github.com/gardener,github.com/kube-vip,github.com/mdlayher
GO ?= go
RESULTS := .local/test-results

# Unit tests: every package outside test/ (they need nothing but Go). The product's packages
# (agent, controller, cmd) run under the race detector, where races can be; the tooling's
# (chart rendering, generators, image builder) without it, which spares compiling their
# dependencies a second time with race instrumentation.
UNIT_RACE_PKGS = ./agent/... ./controller/... ./cmd/...
UNIT_PLAIN_PKGS = $$($(GO) list ./... | grep -v -e '/test/' -e '-kube-vip/agent' -e '-kube-vip/controller' -e '-kube-vip/cmd')
# Integration tests: everything under test/ but the dataplanes and the demo. A Keystone +
# Neutron on sqlite (WAL) queues concurrent writes (12 parallel port creates took 25 s on a
# busy 2-core machine, against ~0.2 s each alone), and the failover tests measure sub-second
# timings on the same two cores: hack/test-integration.sh runs the fault matrices on a
# Neutron of their own beside the packages that time no failover, then the failover
# packages one at a time with the machine to themselves.
INTEGRATION_PKGS = $$($(GO) list ./test/... | grep -v -e /test/integration/dataplane -e /test/integration/ovn -e /test/demo$$)
# The front door through a real Neutron router (RabbitMQ, linuxbridge + L3 agents), and the
# demo, which then walks it as make demo does (and checks that the release it builds is
# reproducible): its own step, because hack/dataplane.sh restarts Neutron with the agents and
# removes them again. The demo runs here only, not in the integration tier as well.
DATAPLANE_PKGS = ./test/integration/dataplane/... ./test/demo/
# The front door through ML2/OVN (hack/ovn.sh: OVS's userspace datapath, OVN, Neutron with the
# OVN driver), on a Keystone + Neutron of its own.
OVN_PKGS = ./test/integration/ovn/...
OVN_ENV = KUBE_VIP_OPENSTACK_DIR=$(CURDIR)/.local/openstack-ovn KUBE_VIP_OPENSTACK_ENV=$(CURDIR)/.local/openstack-ovn/env.sh KEYSTONE_PORT=5010 NEUTRON_PORT=9710
UNIT_TIMEOUT ?= 10m
INTEGRATION_TIMEOUT ?= 40m
TEST_FLAGS ?=
# Tests of these directories test the project's tooling (the bench, the test harnesses, the
# build tools), not the product: the summaries count them apart.
TOOLING_DIRS := test/bench,test/netns,test/framework,hack/tools
# gotestsum (a tool directive in go.mod) runs `go test -json`, prints each test as it finishes
# and the output of the failed ones at the end, and keeps the JSON; hack/test-summary.sh
# counts it into the tier's lines (product, tooling, total with the tier's time).
GOTESTSUM = $(GO) tool gotestsum --format testname --format-hide-empty-pkg
# The product's unit tests run under the race detector (needs cgo: gcc, from hack/install-deps.sh).
UNIT_RACE_FLAGS ?= -race
# The election's simulation (thousands of fault schedules, agent/election/sim_test.go) runs
# once, without the race detector, which makes it ten times slower; its replay and mutation
# tests run under it.
SIM_TEST := ^TestSimulation$$
# -count=1: the integration tests talk to Neutron, kube-apiservers and the kernel, which Go's
# test cache does not track; a cached replay would count a pass that touched nothing.
# -vet=off: make check's go vet ./... checks these packages with every analyzer; go test's
# own subset would run once more per package, one at a time under -p 1.
INTEGRATION_FLAGS ?= -count=1 -vet=off

# The release version (VERSION is its one source) and the registry a release pushes to
# (ghcr.io/<owner>): `make generate` writes both into the chart, the image vector and the
# registration manifests; the release workflow sets REGISTRY to its repository's owner.
VERSION := $(shell cat VERSION)
REGISTRY ?= ghcr.io/gardener-extension-kube-vip
LDFLAGS := -X main.version=$(VERSION)
# The release images' org.opencontainers.image.source and .revision labels; the release
# workflow sets SOURCE to the repository it runs in (the label links a GHCR package to it).
SOURCE ?= https://github.com/gardener/gardener-extension-kube-vip
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The release images' architectures. The demo's test builds both, as the release does, and
# checks each image's binary (a cold arm64 build compiles every dependency once more: about
# 4 min on 2 cores; from Go's build cache, seconds).
RELEASE_ARCHES ?= amd64,arm64

.PHONY: build
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

.PHONY: install-deps
install-deps:
	hack/install-deps.sh

# Packages the Helm chart (reproducibly, with helm's library) into bin/chart/, the archive a
# release pushes to the OCI repository named in manifests/operator/extension.yaml.
.PHONY: chart
chart:
	$(GO) run ./manifests/gen/cmd/package-chart bin/chart

# Code generators. Add a line per generator; check-generate covers whatever they write.
.PHONY: generate
generate:
	$(GO) tool deepcopy-gen --go-header-file hack/boilerplate.go.txt --output-file zz_generated.deepcopy.go ./controller/apis/v1alpha1
	$(GO) run ./manifests/gen/cmd/generate-registration -registry $(REGISTRY)

# The release: `make generate` for REGISTRY, then the controller and agent images as OCI
# image layouts (bin/release/<image>/, built with hack/tools/imagebuild as the Dockerfiles
# describe: one index of a linux/amd64 and a linux/arm64 image, with the
# org.opencontainers.image.* labels) and the packaged chart (bin/release/<chart>-<version>.tgz),
# reproducibly: the same sources, commit and Go toolchain give the same digests.
# .github/workflows/release.yaml pushes them.
.PHONY: release-artifacts
RELEASE_DIR ?= bin/release
release-artifacts: generate
	rm -rf $(RELEASE_DIR)
	$(GO) run ./hack/tools/imagebuild/cmd/imagebuild -layout -o $(RELEASE_DIR) -registry $(REGISTRY) -version $(VERSION) \
	  -arch $(RELEASE_ARCHES) -source $(SOURCE) -revision $(REVISION)
	$(GO) run ./manifests/gen/cmd/package-chart $(RELEASE_DIR)

# Fails if `make generate` would change any file (runs the generators in a copy of the tree).
.PHONY: check-generate
check-generate:
	hack/check-generate.sh

.PHONY: vet
vet:
	$(GO) vet ./...

# Tools and the kube binaries are cached by version outside the clone (XDG cache), so that a
# fresh clone on a used machine builds none of them again.
KUBE_VIP_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gardener-extension-kube-vip
export KUBE_VIP_CACHE

# golangci-lint, built from the module proxy at a pinned version into the cache (a new
# version builds a new binary).
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(KUBE_VIP_CACHE)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)

# One build at a time (make test's prebuild may be building it): a second caller waits for
# the first and finds the binary.
$(GOLANGCI_LINT):
	@mkdir -p $(KUBE_VIP_CACHE)/tools/.gobin
	@exec 9>$(KUBE_VIP_CACHE)/tools/.golangci-lint.lock; flock 9; [ -x $@ ] && exit 0; \
	echo "lint: building golangci-lint $(GOLANGCI_LINT_VERSION) once into $(KUBE_VIP_CACHE)/tools (about 4-7 min on 2 idle cores)"; \
	GOBIN=$(KUBE_VIP_CACHE)/tools/.gobin GOFLAGS= $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	mv $(KUBE_VIP_CACHE)/tools/.gobin/golangci-lint $@

# Part of `make check`. The first run builds the linter (about 7 min on 2 idle cores,
# longer under load); later runs, from any clone, reuse the cache.
.PHONY: lint
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...

# promtool, Prometheus' own tool, from Debian's prometheus package (hack/promtool.sh unpacks
# only the binary into the cache): it unit-tests the alerts of manifests/monitoring against
# synthetic series (test/monitoring). Part of `make check`: every alert of the shipped
# PrometheusRule fires on its synthetic failure and stays quiet otherwise.
.PHONY: promtool-test
promtool-test:
	@promtool=$$(hack/promtool.sh); dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	$(GO) run ./hack/tools/promrules manifests/monitoring/prometheusrule.yaml $$dir/prometheusrule.yaml && \
	cp test/monitoring/*.yaml $$dir/ && \
	$$promtool test rules $$dir/*_test.yaml

# The GitHub workflows, with actionlint (a tool directive in go.mod).
.PHONY: actionlint
actionlint:
	$(GO) tool actionlint

.PHONY: fmt-check
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: license-check
license-check:
	hack/license-headers.sh --check

# `helm lint --strict` of the chart, with helm's own linter (helm.sh/helm/v4, already a
# dependency) in a Go test: no helm binary to build or download.
.PHONY: chart-lint
# It runs here, and the unit tier skips it.
CHART_LINT_TEST := ^TestChartLint$$
chart-lint:
	$(GO) test -count=1 -run '$(CHART_LINT_TEST)' ./charts/

# Static checks; every step runs, the target fails if any did.
.PHONY: check
check:
	@rc=0; for t in vet fmt-check license-check check-generate actionlint chart-lint promtool-test lint; do $(MAKE) --no-print-directory $$t || rc=1; done; exit $$rc

.PHONY: test-unit
test-unit:
	@mkdir -p $(RESULTS)
	@start=$$SECONDS; rc=0; \
	$(GOTESTSUM) --jsonfile $(RESULTS)/unit-race.json -- -timeout $(UNIT_TIMEOUT) $(UNIT_RACE_FLAGS) -skip '$(SIM_TEST)' $(TEST_FLAGS) $(UNIT_RACE_PKGS) || rc=$$?; \
	$(GOTESTSUM) --jsonfile $(RESULTS)/unit-sim.json -- -timeout $(UNIT_TIMEOUT) -run '$(SIM_TEST)' $(TEST_FLAGS) ./agent/election/ || rc=$$?; \
	$(GOTESTSUM) --jsonfile $(RESULTS)/unit-plain.json -- -timeout $(UNIT_TIMEOUT) -skip '$(CHART_LINT_TEST)' $(TEST_FLAGS) $(UNIT_PLAIN_PKGS) || rc=$$?; \
	cat $(RESULTS)/unit-race.json $(RESULTS)/unit-sim.json $(RESULTS)/unit-plain.json >$(RESULTS)/unit.json; rm $(RESULTS)/unit-race.json $(RESULTS)/unit-sim.json $(RESULTS)/unit-plain.json; \
	hack/test-summary.sh unit $(TOOLING_DIRS) $(RESULTS)/unit.json $(RESULTS)/unit.summary $$((SECONDS - start)); exit $$rc

.PHONY: kube-binaries kube-binaries-nodes
kube-binaries:
	hack/build-kube-binaries.sh
kube-binaries-nodes:
	hack/build-kube-binaries.sh nodes

# Compiles every integration test package with the machine's full parallelism into Go's
# build cache, so that the runs below (-p 1, which also serializes compiling) only link.
# `go list -export` compiles without linking: go test links each test binary anew whatever
# the cache holds, so linking them here too would only cost the time again (about 110 s on
# 2 cores with every package compiled already).
PRECOMPILE = $(GO) list -test -export -deps
.PHONY: prebuild-integration
prebuild-integration:
	@echo "prebuild-integration: compiling the integration test packages"; start=$$SECONDS; \
	$(PRECOMPILE) $(INTEGRATION_PKGS) $(DATAPLANE_PKGS) $(OVN_PKGS) >/dev/null; \
	echo "prebuild-integration: done in $$((SECONDS - start))s"

# What the steps after the failover tests compile, compiled ahead: upstream kube-vip (the
# kube-vip tests), golangci-lint, the release's two architectures (the demo), the unit tiers'
# test packages, race-instrumented and plain (compiled, not linked: see PRECOMPILE). make
# test runs it beside its first steps at idle CPU priority (SCHED_IDLE: it gets only the
# cycles the steps leave), so that a cold machine compiles while the first tests wait on
# Neutron. Everything lands in the caches the steps read; a step that comes first builds what
# it needs itself (kube-vip and golangci-lint under the same lock). Its failure fails nothing.
# Even at idle priority it contends for caches and memory with timed tests (a rollout test
# saw needless VIP moves): it pauses (SIGSTOP, PREBUILD_PGID) from the integration tier's
# failover phase until the first of COMPILE_STEPS.
.PHONY: prebuild
prebuild:
	@start=$$SECONDS; rc=0; \
	hack/bench/build-kube-vip.sh >/dev/null || rc=1; \
	$(MAKE) --no-print-directory $(GOLANGCI_LINT) || rc=1; \
	for arch in $(subst $(comma), ,$(RELEASE_ARCHES)); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) list -export -deps -trimpath ./cmd/... ./hack/tools/imagebuild/cmd/pause >/dev/null || rc=1; \
	done; \
	$(PRECOMPILE) $(UNIT_RACE_FLAGS) $(UNIT_RACE_PKGS) >/dev/null || rc=1; \
	$(PRECOMPILE) $(UNIT_PLAIN_PKGS) ./agent/election/ >/dev/null || rc=1; \
	echo "prebuild: done in $$((SECONDS - start))s (status $$rc)"; exit $$rc

# Builds the kube binaries first (once; README.md says how long), brings Keystone + Neutron up unless
# they run already, and stops them again afterwards (also on failure) if it started them.
.PHONY: test-integration
test-integration: prebuild-integration
	@mkdir -p $(RESULTS)
	@hack/install-deps.sh
	export KUBEBUILDER_ASSETS=$$(hack/build-kube-binaries.sh) GOTESTSUM="$(GOTESTSUM)" INTEGRATION_PKGS="$(INTEGRATION_PKGS)"; start=$$SECONDS; rc=0; \
	hack/with-openstack.sh hack/test-integration.sh $(RESULTS) -timeout $(INTEGRATION_TIMEOUT) $(INTEGRATION_FLAGS) $(TEST_FLAGS) || rc=$$?; \
	hack/test-summary.sh integration $(TOOLING_DIRS) $(RESULTS)/integration.json $(RESULTS)/integration.summary $$((SECONDS - start)); exit $$rc

# The dataplane tier: hack/dataplane.sh up (Keystone + Neutron with RabbitMQ, the linuxbridge
# and L3 agents, a router, an external client namespace), the tests, then down (also on
# failure; it stops Keystone + Neutron too).
.PHONY: test-dataplane
test-dataplane:
	@mkdir -p $(RESULTS)
	@hack/install-deps.sh
	export KUBEBUILDER_ASSETS=$$(hack/build-kube-binaries.sh); rc=0; \
	hack/dataplane.sh up || rc=$$?; \
	if [ $$rc = 0 ]; then \
	  start=$$SECONDS; \
	  $(GOTESTSUM) --jsonfile $(RESULTS)/dataplane.json -- -p 1 -timeout $(INTEGRATION_TIMEOUT) $(INTEGRATION_FLAGS) $(TEST_FLAGS) $(DATAPLANE_PKGS) || rc=$$?; \
	  hack/test-summary.sh dataplane $(TOOLING_DIRS) $(RESULTS)/dataplane.json $(RESULTS)/dataplane.summary $$((SECONDS - start)); \
	fi; \
	hack/dataplane.sh down || rc=1; \
	exit $$rc

# The ML2/OVN tier: hack/ovn.sh up (OVS + OVN + a fresh Keystone + Neutron with the OVN
# driver in .local/openstack-ovn), the tests, then down (also on failure).
.PHONY: test-ovn
test-ovn:
	@mkdir -p $(RESULTS)
	@hack/install-deps.sh
	export $(OVN_ENV); rc=0; rm -rf .local/openstack-ovn; \
	hack/ovn.sh up || rc=$$?; \
	if [ $$rc = 0 ]; then \
	  start=$$SECONDS; \
	  $(GOTESTSUM) --jsonfile $(RESULTS)/ovn.json -- -p 1 -timeout $(INTEGRATION_TIMEOUT) $(INTEGRATION_FLAGS) $(TEST_FLAGS) $(OVN_PKGS) || rc=$$?; \
	  hack/test-summary.sh ovn $(TOOLING_DIRS) $(RESULTS)/ovn.json $(RESULTS)/ovn.summary $$((SECONDS - start)); \
	fi; \
	hack/ovn.sh down || rc=1; \
	exit $$rc

# Runs every tier even if an earlier one fails, then prints the tiers' summaries and what the
# suite cost: each step's time, the slowest tests and packages (hack/test-cost.sh). The kube
# binaries (all of them: the node tiers need kubelet too) are a step of their own, so that a
# cold machine shows what building them cost. The steps that need only Go's compiler (check,
# unit) come last: on a cold machine, prebuild has compiled most of what they need while the
# failover tests ran (a check's failure still fails the run).
COMPILE_STEPS := check test-unit
TEST_STEPS := kube-binaries-nodes test-integration test-dataplane test-ovn $(COMPILE_STEPS)
# What runs beside the steps (TestMakeTestExitsWithItsStepsStatus sets stand-ins for it and
# the steps). The EXIT trap's kills end in `|| true`: under .SHELLFLAGS' -e, a kill of the
# prebuild group that has already ended would turn a passing run's status into 1.
PREBUILD_TARGET := prebuild
.PHONY: test
test:
	@mkdir -p $(RESULTS); rm -f $(RESULTS)/*.summary $(RESULTS)/*.json $(RESULTS)/steps $(RESULTS)/prebuild.log; rc=0; \
	set -m; chrt --idle 0 $(MAKE) --no-print-directory $(PREBUILD_TARGET) >$(RESULTS)/prebuild.log 2>&1 & prebuild=$$!; set +m; \
	trap 'kill -CONT -- -$$prebuild 2>/dev/null || true; kill -- -$$prebuild 2>/dev/null || true' EXIT; \
	for step in $(TEST_STEPS); do \
	  case " $(COMPILE_STEPS) " in *" $$step "*) kill -CONT -- -$$prebuild 2>/dev/null || true;; esac; \
	  start=$$SECONDS; PREBUILD_PGID=$$prebuild $(MAKE) --no-print-directory $$step || rc=1; echo "$$step $$((SECONDS - start))" >>$(RESULTS)/steps; \
	done; \
	wait $$prebuild || echo "make test: prebuild failed (the steps built what they needed themselves): $(RESULTS)/prebuild.log"; \
	tail -n 1 $(RESULTS)/prebuild.log; \
	echo "==== summary"; \
	hack/test-cost.sh $(RESULTS) || true; \
	cat $(RESULTS)/unit.summary $(RESULTS)/integration.summary $(RESULTS)/dataplane.summary $(RESULTS)/ovn.summary 2>/dev/null || true; \
	hack/handback.sh || true; \
	if [ $$rc != 0 ]; then echo "make test: FAILED"; else echo "make test: passed"; fi; \
	{ cat $(RESULTS)/unit.summary $(RESULTS)/integration.summary $(RESULTS)/dataplane.summary $(RESULTS)/ovn.summary 2>/dev/null || true; } \
	  | awk -v rc=$$rc 'function n(k,  i) { for (i = 2; i <= NF; i++) if ($$i ~ "^" k) return $$(i-1); return 0 } \
	      $$2 != "product:" && $$2 != "tooling:" { next } \
	      { c = ($$2 == "tooling:") ? "t" : "p"; P[c] += n("passed"); F[c] += n("failed"); S[c] += n("skipped") } \
	      END { printf "product: %d passed, %d failed, %d skipped\n", P["p"], F["p"], S["p"]; \
	        printf "tooling: %d passed, %d failed, %d skipped\n", P["t"], F["t"], S["t"]; \
	        printf "total: %d passed, %d failed, %d skipped\n", P["p"]+P["t"], F["p"]+F["t"], S["p"]+S["t"]; \
	        if (rc != 0 && F["p"]+F["t"] == 0) print "(a step other than the tests failed: see above)"}'; \
	exit $$rc

.PHONY: env-up env-down env-status
env-up:
	hack/local-env.sh up
env-down:
	hack/local-env.sh down
env-status:
	hack/local-env.sh status

.PHONY: demo demo-down
# The extension end to end (root; README.md says how long): a
# self-hosted shoot of 3 real nodes (test/nodes: containerd + kubelet + etcd +
# kube-apiserver each), local Keystone + Neutron, the extension installed from the artifacts of
# release-artifacts (chart archive, images imported into containerd; controller and agents as pods), a SelfHostedShootExposure and a live failover; runs on
# in the background (hack/demo.sh) and writes .local/demo/env.sh.
demo:
	rc=0; hack/demo.sh up || rc=$$?; hack/handback.sh || true; exit $$rc
# Stops the demo (its exposure is deleted through the controller), then the local env.
demo-down:
	rc=0; hack/demo.sh down || rc=$$?; hack/handback.sh || true; exit $$rc

.PHONY: e2e
# The extension as an operator installs it (root; needs the local Keystone + Neutron, which
# hack/with-openstack.sh starts if they do not run): 3 nodes with their own kubelet and
# containerd (test/nodes), the controller from its chart, then each scenario (test/e2e); then
# the scenarios through the floating IP and the Neutron router (test-dataplane).
e2e:
	@hack/install-deps.sh
	hack/build-kube-binaries.sh nodes >/dev/null
	rc=0; hack/with-openstack.sh $(GO) test -count=1 -p 1 -timeout 30m $(TEST_FLAGS) ./test/nodes/... ./test/e2e/... || rc=$$?; \
	$(MAKE) --no-print-directory test-dataplane || rc=1; exit $$rc

.PHONY: bench
# Failover benchmark (root, ~30 min on 2 cores; brings up Keystone + Neutron for the controller
# figures if they do not run): the tables, then ours behind the Neutron router with its extra
# cost (test/bench/make-bench.sh brings hack/dataplane.sh up and down under the dataplane
# lock); test/bench/out/{results.json,timeline.png,dataplane.json}. BENCH_FLAGS go to the
# tables run; BENCH_DATAPLANE=0 skips the router rows.
bench:
	@hack/install-deps.sh
	rc=0; GO=$(GO) hack/with-openstack.sh test/bench/make-bench.sh $(BENCH_FLAGS) || rc=$$?; hack/handback.sh || true; exit $$rc
