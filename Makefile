# driftguard: make build test bench lint demo
SHELL := /usr/bin/env bash
GO ?= go
TOOLS_BIN := $(shell tools/build.sh --print)
export KUBEBUILDER_ASSETS := $(TOOLS_BIN)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build tools generate verify test test-unit test-e2e bench bench-quick soak lint demo clean

all: build

build: ## Build bin/driftguard
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/driftguard ./cmd/driftguard

tools: ## Build the control-plane binaries, kubectl, KWOK, helm and linters into the cache (seconds when warm)
	tools/build.sh >/dev/null

generate: tools ## Regenerate deepcopy code and the CRD (config/crd, charts/driftguard/crds)
	$(TOOLS_BIN)/controller-gen object paths=./api/...
	$(TOOLS_BIN)/controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd
	mkdir -p charts/driftguard/crds && cp config/crd/*.yaml charts/driftguard/crds/

verify: generate ## Fail when generated files are stale
	git diff --exit-code -- api config charts/driftguard/crds

test: tools ## Unit tests and the end-to-end suites on a real control plane
	CI=true $(GO) test -race -count=1 -timeout 30m ./...

test-unit: ## Unit tests only (no control plane)
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v -e /test/ -e /devenv)

test-e2e: tools ## End-to-end suites only
	CI=true $(GO) test -count=1 -timeout 30m ./test/...

bench: tools ## Every benchmark against its target on a real API server and Git server (under 15 minutes): one `bench:` line per figure, bench/results.json (docs/performance.md)
	$(GO) run ./test/bench/cmd/benchrun

bench-quick: tools ## The same figures from smaller runs (under 3 minutes)
	$(GO) run ./test/bench/cmd/benchrun -quick

soak: tools ## 100 edits/s for 10 minutes; memory and latency every minute (SOAK=10m)
	$(GO) test -run '^$$' -bench BenchmarkSoak -benchtime 1x -timeout 30m ./test/bench/ -args -soak $(or $(SOAK),10m)

lint: tools ## gofmt, go vet, golangci-lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(TOOLS_BIN)/golangci-lint run ./...

demo: tools build ## Run the guard on an embedded local cluster with a Git server holding examples/shop
	bin/driftguard dev --examples examples/shop

clean:
	rm -rf bin
