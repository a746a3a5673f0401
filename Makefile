# driftguard: make build test bench lint demo
SHELL := /usr/bin/env bash
GO ?= go
TOOLS_BIN := $(shell tools/build.sh --print)
export KUBEBUILDER_ASSETS := $(TOOLS_BIN)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build tools test-tools generate verify test test-unit test-e2e test-norace test-promrules fuzz fuzz-short bench bench-quick bench-scale bench-cel soak lint demo image image-docker clean

all: build

build: ## Build bin/driftguard
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/driftguard ./cmd/driftguard

tools: ## Build the control-plane binaries, kubectl, KWOK, helm and linters into the cache (seconds when warm)
	tools/build.sh >/dev/null

test-tools: ## Only the binaries the tests, benchmarks and the demo run (no linters, no controller-gen)
	tools/build.sh test >/dev/null

generate: tools ## Regenerate deepcopy code and the CRD (config/crd, charts/driftguard/crds)
	$(TOOLS_BIN)/controller-gen object paths=./api/...
	$(TOOLS_BIN)/controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd
	mkdir -p charts/driftguard/crds && cp config/crd/*.yaml charts/driftguard/crds/

verify: generate ## Fail when generated files are stale
	git diff --exit-code -- api config charts/driftguard/crds

# Packages whose tests run at once: most suites wait on a control plane,
# a Git server or a guard far more than they compute, so more of them than
# the two cores run side by side (README: make test's measured time). The
# suites that run the guard as a process share one binary, built first;
# test binaries are linked without DWARF (-w: a fifth less link time; race
# reports and stack traces do not need it) and kept in bin/test (TESTBIN):
# go test links a package's binary again only when what it is built from
# changed (a third of a warm run's CPU was linking binaries that had not),
# and fuzz-short runs the same binaries instead of linking its own. go vet
# runs in make lint, with all its analyzers, not in go test (-vet=off): go
# test's vet type-checks every dependency again, about 300 s of CPU cold.
TEST_PACKAGES ?= 4
TESTBIN ?= $(CURDIR)/bin/test
# How make test builds its test binaries (one flag apart, every package
# is compiled again).
TESTBUILDFLAGS = -race -vet=off -ldflags=-w
# A race-built binary waits a second before it exits (GORACE's
# atexit_sleep_ms, for goroutines still running to be caught): every test
# binary, every fuzz target, and the Helm chart child of a race-built
# guard, which follows the guard's GORACE, once per chart (rendering's
# tests: 65 s, 25 without the wait).
GORACE ?= atexit_sleep_ms=0
export GORACE
# What runs without the race detector (test-norace): rendering's tests
# (rendering runs in one goroutine, a chart in a child process, and the
# race detector made them ten times slower: their files are built !race)
# and every fuzz target briefly (fuzz-short: seven times faster); beside
# them the alert rules' test. They are built as the guard's binary is
# (CGO_ENABLED=0 -trimpath), so that they reuse its compiled packages
# (rendering's tests and the fuzz targets link 7 packages it does not),
# and kept in bin/test-norace.
NORACEBUILDFLAGS = -trimpath -vet=off -ldflags=-w
NORACEBIN ?= $(CURDIR)/bin/test-norace
NORACE_PACKAGES = ./render
# The packages that take longest start first (go test starts packages in
# the order named), so that the run does not end on them alone.
TEST_FIRST = ./test/e2e ./test/faults ./test/install ./test/chart ./source ./test/workloadhealth ./test/compiledlayer ./test/image

# On a cold machine the modules the tests build are downloaded while the
# tools compile (tools/build.sh test is the test-tools target).
test: ## Unit tests and the end-to-end suites on a real control plane, then what runs without the race detector (rendering, every fuzz target briefly) beside the alert rules' test
	$(GO) mod download & a=$$!; (cd test/promrules && $(GO) mod download) & b=$$!; \
		tools/build.sh test >/dev/null; s=$$?; wait $$a && wait $$b && exit $$s
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/driftguard-test ./cmd/driftguard
	CI=true DRIFTGUARD_TEST_BINARY=$(CURDIR)/bin/driftguard-test $(GO) test $(TESTBUILDFLAGS) -count=1 -p $(TEST_PACKAGES) -o $(TESTBIN)/ -timeout 30m $(TEST_FIRST) ./...
	$(MAKE) --no-print-directory -j2 -O test-norace test-promrules

test-norace: test-tools ## Rendering's tests and every fuzz target briefly, without the race detector (part of make test)
	CI=true CGO_ENABLED=0 $(GO) test $(NORACEBUILDFLAGS) -count=1 -o $(NORACEBIN)/ -timeout 10m $(NORACE_PACKAGES)
	$(MAKE) --no-print-directory fuzz-short

test-unit: test-tools ## Unit tests only (no control plane; the sops CLI and helm from the tools); rendering's also without the race detector
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v -e /test/ -e /devenv)
	$(GO) test -count=1 $(NORACE_PACKAGES)

test-e2e: test-tools ## End-to-end suites only
	CI=true $(GO) test -count=1 -timeout 30m ./test/...

# test/promrules is a module of its own (Prometheus's packages); -mod=mod
# lets it follow a change of the guard's go.mod. Built as test-norace's
# binaries are, it reuses the packages of the guard's binary and, for the
# cloud clients Prometheus links (AWS, Azure, Google), of the sops CLI in
# the tools (docs/observability.md).
test-promrules: test-tools ## The chart's alerts and dashboards under Prometheus's query engine and rule evaluator, over a running guard
	cd test/promrules && CI=true CGO_ENABLED=0 $(GO) test $(NORACEBUILDFLAGS) -mod=mod -count=1 -o $(NORACEBIN)/ -timeout 20m ./...

# fuzz-short builds its binaries as test-norace does, so a cold run
# compiles no package again (coverage-guided fuzzing, make fuzz,
# instruments every package: ten minutes of a cold make test).
fuzz-short: test-tools ## Every fuzz target for 500 mutated inputs (part of make test; docs/security.md, Fuzzing)
	CGO_ENABLED=0 GO=$(GO) FUZZTIME=500x FUZZBUILDFLAGS="$(NORACEBUILDFLAGS)" FUZZBINDIR=$(NORACEBIN) tools/fuzz.sh

FUZZTIME ?= 90s
fuzz: test-tools ## Every fuzz target for FUZZTIME (90s) on one worker each; figures per target (FUZZREPORT=file for a table)
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZPARALLEL=$(or $(FUZZPARALLEL),1) tools/fuzz.sh

bench: test-tools ## Every benchmark against its target on a real API server and Git server (under 15 minutes): one `bench:` line per figure, bench/results.json (docs/performance.md)
	$(GO) run ./test/bench/cmd/benchrun

bench-quick: test-tools ## The same figures from smaller runs, the long groups' included
	$(GO) run ./test/bench/cmd/benchrun -quick

bench-scale: test-tools ## The groups longer than make bench at full size: 1,000 Guards (fleet), 100,000 objects, two shards of 1,000 Guards, the Git cache after 1,000 commits; bench/results-scale.json
	$(GO) run ./test/bench/cmd/benchrun -long -out bench/results-scale.json

# test/celcost is a module of its own (k8s.io/apiserver's CEL packages).
bench-cel: ## The compiled layer's match conditions under the API server's own CEL evaluation, no API server: each admits and refuses as it must, and its CPU per admitted update beside the floor's (docs/performance.md)
	cd test/celcost && $(GO) test -mod=mod -bench . -benchtime 2s -count 5 ./...

soak: test-tools ## 100 edits/s for 10 minutes; memory and latency every minute (SOAK=10m)
	$(GO) test -run '^$$' -bench BenchmarkSoak -benchtime 1x -timeout 30m ./test/bench/ -args -soak $(or $(SOAK),10m)

lint: tools ## gofmt, go vet, golangci-lint (third_party/ is kept as published, patch aside)
	@out=$$(gofmt -l $$(git ls-files '*.go' ':!third_party')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd test/promrules && $(GO) vet -mod=mod ./...
	cd test/celcost && $(GO) vet -mod=mod ./...
	$(TOOLS_BIN)/golangci-lint run ./...

demo: test-tools build ## Run the guard on an embedded local cluster with a Git server holding examples/shop
	bin/driftguard dev --examples examples/shop

# The image is tagged with the chart's appVersion, which the chart's default
# image tag follows; the binary inside is stamped with VERSION. `make image`
# builds it in Go (cmd/driftguard-image, no container engine): into
# bin/driftguard-image.tar (+ .spdx.json, the SBOM), or, with IMAGE set
# (IMAGE=registry/repo[:tag]), pushed there with the SBOM as an OCI referrer.
# The same commit and Go version give the same image digest: the creation
# time is the commit time (SOURCE_DATE_EPOCH). docs/install.md, Image.
IMAGE ?=
IMAGE_REPO ?= ghcr.io/driftguard/driftguard
IMAGE_TAG ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' charts/driftguard/Chart.yaml)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_FLAGS ?=
CONTAINER_ENGINE ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)

image: build ## Build the OCI image in Go: bin/driftguard-image.tar + SBOM, or push it with IMAGE=registry/repo:tag
	GOOS= GOARCH= $(GO) run ./cmd/driftguard-image --binary bin/driftguard --version $(VERSION) --revision "$(REVISION)" \
		--created "$(SOURCE_DATE_EPOCH)" $(IMAGE_FLAGS) \
		$(if $(IMAGE),--push $(IMAGE) --default-tag $(IMAGE_TAG),--tarball bin/driftguard-image.tar --tag $(IMAGE_REPO):$(IMAGE_TAG))

image-docker: ## The same image from the Dockerfile, with docker or podman ($(IMAGE_REPO):<chart appVersion>, or IMAGE)
	@if [ -z "$(CONTAINER_ENGINE)" ] || ! $(CONTAINER_ENGINE) info >/dev/null 2>&1; then \
		echo "make image-docker: no working container engine here ('$(or $(CONTAINER_ENGINE),docker) info' fails)." >&2; \
		echo "  make image builds the image without one." >&2; \
		exit 1; \
	fi
	$(CONTAINER_ENGINE) build --build-arg VERSION=$(VERSION) -t $(or $(IMAGE),$(IMAGE_REPO):$(IMAGE_TAG)) .
	@echo "built $(or $(IMAGE),$(IMAGE_REPO):$(IMAGE_TAG)) (driftguard $(VERSION)); helm install uses the tag $(IMAGE_TAG) by default"

clean:
	rm -rf bin
