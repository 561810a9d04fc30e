# hutch — build, demo, test. See README.md.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
# Debian packages hutch needs at run and test time (chromium: the browser
# that loads preview URLs in the integration tests; e2fsprogs: volumes).
APT_PACKAGES := mmdebstrap busybox-static iproute2 ca-certificates nftables tmux chromium e2fsprogs
# Commands the conformance suite runs, each with the Debian package that
# provides it; installed only when the command is missing (node may come
# from elsewhere, e.g. NodeSource, whose nodejs bundles npm).
APT_COMMANDS := node:nodejs npm:npm jq:jq
# issue 39: ADD of a git repository runs the host's git, and its tests serve
# a repository with git's http-backend.
APT_COMMANDS += git:git
# The microVM runtime's packages (QEMU's microvm machine and Debian's cloud
# kernel, whose modules the guest loads): part of deps, since `make test`
# runs the integration suite in that runtime too.
MICROVM_APT_PACKAGES := qemu-system-x86 linux-image-cloud-amd64
APT_PACKAGES += $(MICROVM_APT_PACKAGES)
# The runtimes the integration tests run in (internal/testutil.Runtimes):
# gVisor's whole suite, and a subset sized for TCG in microVMs.
export HUTCH_TEST_RUNTIMES ?= gvisor,microvm
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GO_SOURCES := $(shell find . -name '*.go' -not -path './node_modules/*' 2>/dev/null) go.mod go.sum
# The web console's files, embedded in the daemon (internal/console).
CONSOLE_FILES := $(shell find internal/console/web -type f 2>/dev/null)

.PHONY: all build deps deps-packages deps-microvm kube-deps demo test unit integration conformance bench lint proto clean console-vendor bench-console

all: build

# runsc is rebuilt only when the pinned gVisor version changes (a stamp file
# names it, and how it is built: change the suffix with the recipe), not on
# every go.mod edit: the build takes about two minutes.
GVISOR_VERSION := $(shell awk '$$1 == "gvisor.dev/gvisor" {print $$2}' go.mod)
RUNSC_STAMP := $(BIN)/.runsc-$(GVISOR_VERSION)-seccomp-version
RUNSC_BUILD := $(BIN)/.build-runsc
# Removes a runsc build copy: its directories are read-only like the module
# cache's (its files may be hard links to the cache's: never chmod those).
RM_RUNSC_BUILD := { test ! -d $(RUNSC_BUILD) || find $(RUNSC_BUILD) -type d -exec chmod u+w {} +; } && rm -rf $(RUNSC_BUILD)
$(shell test -x $(BIN)/runsc || rm -f $(BIN)/.runsc-*)

build: $(BIN)/hutch $(BIN)/hutch-agent $(RUNSC_STAMP)

$(BIN)/hutch: $(GO_SOURCES) $(CONSOLE_FILES)
	CGO_ENABLED=0 $(GO) build -ldflags='-X github.com/hutch-dev/hutch/internal/cli.Version=$(HUTCH_VERSION)' -o $@ ./cmd/hutch

# The agent runs inside sandboxes: static, no cgo.
$(BIN)/hutch-agent: $(GO_SOURCES)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w -X main.version=$(HUTCH_VERSION)' -o $@ ./cmd/hutch-agent

# runsc is compiled from the gVisor Go module pinned in go.mod (tool directive),
# with its seccomp filters precompiled as gVisor's own builds have them (about
# 30 ms off every sandbox boot): from a copy of the module (hard links where
# possible) in which seccompgen registers them, through -modfile. The pinned
# version is stamped into runsc's version package (`runsc --version` names
# it; a plain `go build` says VERSION_MISSING).
$(RUNSC_STAMP):
	$(RM_RUNSC_BUILD) && mkdir -p $(RUNSC_BUILD)
	$(GO) mod download gvisor.dev/gvisor && mod=$$($(GO) list -m -f '{{.Dir}}' gvisor.dev/gvisor) && \
		{ cp -al "$$mod" $(RUNSC_BUILD)/gvisor 2>/dev/null || cp -a "$$mod" $(RUNSC_BUILD)/gvisor; }
	$(GO) run ./internal/runtime/gvisor/seccompgen $(RUNSC_BUILD)/gvisor
	cp go.mod $(RUNSC_BUILD)/runsc.mod && cp go.sum $(RUNSC_BUILD)/runsc.sum
	echo 'replace gvisor.dev/gvisor => $(RUNSC_BUILD)/gvisor' >> $(RUNSC_BUILD)/runsc.mod
	CGO_ENABLED=0 $(GO) build -modfile=$(RUNSC_BUILD)/runsc.mod \
		-ldflags='-X gvisor.dev/gvisor/runsc/version.version=$(GVISOR_VERSION)' -o $(BIN)/runsc gvisor.dev/gvisor/runsc
	$(RM_RUNSC_BUILD)
	@rm -f $(BIN)/.runsc-*; touch $@

# The Kubernetes control plane the cluster tests run (issue 35: 5):
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from
# k8s.io/kubernetes, and etcd from go.etcd.io/etcd/server/v3, at the versions
# pinned in deps/kube/go.mod and deps/kube/etcd/go.mod (modules of their own:
# hutch's go.mod does not pull k8s.io/kubernetes). Built once per machine
# into a directory named by both versions (the first time: 12 minutes on 2
# cores with the modules already downloaded, 4 GB of Go build cache, 377 MB
# of binaries), reused afterwards: the build writes
# a temporary directory and renames it when complete, so an interrupted build
# is never taken as done. HUTCH_KUBE_CACHE chooses where; by default
# /var/cache/hutch for root, else $$XDG_CACHE_HOME/hutch (~/.cache/hutch).
# internal/kubecp (the tests' kubetest, hutch bench --cluster) finds the binaries by the same rule.
KUBE_MOD := $(CURDIR)/deps/kube
KUBE_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" {print $$2}' $(KUBE_MOD)/go.mod)
ETCD_VERSION := $(shell awk '$$1 == "go.etcd.io/etcd/server/v3" {print $$2}' $(KUBE_MOD)/etcd/go.mod)
KUBE_CACHE := $(or $(HUTCH_KUBE_CACHE),$(if $(filter 0,$(shell id -u)),/var/cache/hutch,$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/hutch))
KUBE_DIR := $(KUBE_CACHE)/kube-$(KUBE_VERSION)-etcd-$(ETCD_VERSION)
KUBE_CMDS := kube-apiserver kube-controller-manager kube-scheduler kubectl
# The version the Kubernetes binaries print, as the release's own build
# stamps it (hack/lib/version.sh); no build date or commit: the build stays
# reproducible.
KUBE_MAJOR := $(patsubst v%,%,$(word 1,$(subst ., ,$(KUBE_VERSION))))
KUBE_MINOR := $(word 2,$(subst ., ,$(KUBE_VERSION)))
KUBE_LDFLAGS := $(foreach p,k8s.io/client-go/pkg/version k8s.io/component-base/version,\
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=$(KUBE_MAJOR) -X $(p).gitMinor=$(KUBE_MINOR))

# issue 36: agent-sandbox's own controller, built unmodified from its module
# at the version pinned in deps/agentsandbox/go.mod, and its CRDs from the
# same module, into AGENT_SANDBOX_DIR (bin/, crds/) of the same cache; the
# cluster tests apply and start them (internal/kubecp, AgentSandboxDir).
# About 7 minutes the first time on 2 shared cores (modules and build cache
# cold), 46 MB.
AS_MOD := $(CURDIR)/deps/agentsandbox
AGENT_SANDBOX_VERSION := $(shell awk '$$1 == "require" && $$2 == "sigs.k8s.io/agent-sandbox" {print $$3} $$1 == "sigs.k8s.io/agent-sandbox" {print $$2}' $(AS_MOD)/go.mod)
AGENT_SANDBOX_DIR := $(KUBE_CACHE)/agent-sandbox-$(AGENT_SANDBOX_VERSION)

kube-deps: $(KUBE_DIR) $(AGENT_SANDBOX_DIR)

$(AGENT_SANDBOX_DIR):
	@test -n "$(AGENT_SANDBOX_VERSION)" || { echo "kube-deps: no agent-sandbox version pinned in $(AS_MOD)/go.mod"; exit 1; }
	@echo "building agent-sandbox $(AGENT_SANDBOX_VERSION) into $@"
	mkdir -p $(KUBE_CACHE)
	tmp=$$(mktemp -d $(KUBE_CACHE)/.build-as-XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	mkdir "$$tmp/bin" "$$tmp/crds" && cd $(AS_MOD) && \
	GONOSUMDB=sigs.k8s.io/agent-sandbox CGO_ENABLED=0 $(GO) build -trimpath \
		-ldflags='-s -w -X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=$(AGENT_SANDBOX_VERSION)' \
		-o "$$tmp/bin/" sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller && \
	cp "$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/agent-sandbox)"/k8s/crds/*.yaml "$$tmp/crds/" && \
	chmod -R u+w,go+rX "$$tmp" && mv -T "$$tmp" $@

$(KUBE_DIR):
	@test -n "$(KUBE_VERSION)" -a -n "$(ETCD_VERSION)" || { echo "kube-deps: no version pinned in $(KUBE_MOD)/go.mod or etcd/go.mod"; exit 1; }
	@echo "building Kubernetes $(KUBE_VERSION) and etcd $(ETCD_VERSION) into $@ (the first time on a machine: 12-20 minutes)"
	mkdir -p $(KUBE_CACHE)
	tmp=$$(mktemp -d $(KUBE_CACHE)/.build-kube-XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	mkdir "$$tmp/bin" && \
	(cd $(KUBE_MOD) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w $(KUBE_LDFLAGS)' -o "$$tmp/bin/" \
		$(addprefix k8s.io/kubernetes/cmd/,$(KUBE_CMDS))) && \
	(cd $(KUBE_MOD)/etcd && CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o "$$tmp/bin/etcd" go.etcd.io/etcd/server/v3) && \
	chmod 755 "$$tmp" && mv -T "$$tmp" $@

# Installs the Debian packages that are missing (needs root), and builds the
# Kubernetes control plane the cluster tests run (kube-deps). The demo needs
# only the packages (deps-packages): its first run stays a few minutes.
deps: deps-packages kube-deps

deps-packages:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done; \
		for c in $(APT_COMMANDS); do command -v $${c%%:*} >/dev/null 2>&1 || echo $${c#*:}; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# The microVM runtime's host packages (see MICROVM_APT_PACKAGES); deps
# installs them too.
deps-microvm: deps-packages

# First sandbox: builds everything, builds the python image, runs code, and
# names the web console of the daemon that ran it (docs/usage/console.md): the
# one at $HUTCH_URL read as the CLI reads it (http:// when it names no
# scheme, no trailing slash), else at the client's default URL.
DEFAULT_URL := $(shell sed -n 's/^const DefaultURL = "\(.*\)"$$/\1/p' client/client.go)
demo: deps-packages build
	$(BIN)/hutch doctor
	$(BIN)/hutch run python -- python3 -c 'print("hello from a gVisor sandbox:", 2+2)'
	@url=$${HUTCH_URL:-$(DEFAULT_URL)}; case $$url in *://*) ;; *) url=http://$$url ;; esac; \
		url=$$(printf '%s' "$$url" | sed 's|/*$$||'); echo "console: open $$url/ui/ in a browser"

# Every test: unit tests, then integration tests against real sandboxes
# (in each of HUTCH_TEST_RUNTIMES), then the JS conformance suite. The
# integration package takes ~15 min on a quiet 2-core machine and much
# longer on a busy one: its timeout is a guard against a hang, not a
# budget (CI stops at 90 min).
test: deps build
	$(GO) test -count=1 -timeout 70m ./...
	$(MAKE) --no-print-directory conformance
	$(MAKE) --no-print-directory test-package

# The seeds' code samples with the real iii-sdk from npm (pinned in
# conformance/package-lock.json), against a daemon that run.sh starts.
conformance: deps build
	cd conformance && npm ci --ignore-scripts --no-audit --no-fund && ./run.sh

unit:
	$(GO) test -short -count=1 ./...

integration: deps build
	$(GO) test -count=1 -timeout 30m -v ./integration/...

# The benchmark (docs/performance.md): against a private daemon that it
# starts and stops itself, or with HUTCH_URL set against that daemon. Docker
# and runsc do are measured too when present. IMAGE_CACHE holds the python
# image (built there on first use); BENCH_FLAGS passes more options.
IMAGE_CACHE ?= /var/lib/hutch/images
bench: build
	$(BIN)/hutch bench $(if $(HUTCH_URL),,--private) --image-cache $(IMAGE_CACHE) --json-out $(BIN)/bench-results.json $(BENCH_FLAGS)

# The console's benchmark scenario (docs/performance.md, "The console"): its sandboxes page
# with N (default 100) sandboxes, in headless chromium, against a daemon it
# starts itself.
bench-console: build
	cd conformance && npm ci --ignore-scripts --no-audit --no-fund && HUTCH_BIN=$(BIN)/hutch node bench/console-list.mjs

# Refreshes the console's vendored xterm.js files (internal/console/web/vendor)
# from the npm packages pinned in internal/console/package-lock.json.
console-vendor:
	cd internal/console && npm ci --ignore-scripts --no-audit --no-fund && npm run vendor

# Regenerates the protobuf code: the agent's, and the E2B envd services'
# (api/e2b). issue 40: buf compiles the protos (no protoc needed) and runs the
# plugins at the versions of go.mod's runtime libraries; go run fetches and
# caches each, so regeneration is reproducible.
BUF = github.com/bufbuild/buf/cmd/buf@v1.75.0
PROTOC_GEN_GO = google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC = google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
PROTOC_GEN_CONNECT_GO = connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
PROTO_GO = {"local":["$(GO)","run","$(PROTOC_GEN_GO)"],"out":".","opt":"paths=source_relative"}
PROTO_GRPC = {"local":["$(GO)","run","$(PROTOC_GEN_GO_GRPC)"],"out":".","opt":"paths=source_relative"}
PROTO_CONNECT = {"local":["$(GO)","run","$(PROTOC_GEN_CONNECT_GO)"],"out":".","opt":"paths=source_relative"}

proto:
	$(GO) run $(BUF) generate --template '{"version":"v2","plugins":[$(PROTO_GO),$(PROTO_GRPC)]}' \
		--path api/agent/v1 .
	$(GO) run $(BUF) generate --template '{"version":"v2","plugins":[$(PROTO_GO),$(PROTO_CONNECT)]}' \
		--path api/e2b/envd/process --path api/e2b/envd/filesystem .

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

clean:
	$(RM_RUNSC_BUILD)
	rm -rf $(BIN)

# issue 38: fuzzing. `make fuzz` runs every native fuzz target for FUZZTIME
# each (a campaign; `make test` already runs each on its committed corpus,
# testdata/fuzz/). FUZZ=pkg:Target,... narrows the list. New inputs the
# fuzzer keeps go to Go's cache; a failure writes its input to the
# package's testdata/fuzz/ (commit it with the fix). Execs per target are
# printed at the end (docs/reliability.md).
FUZZTIME ?= 3m
FUZZ_TARGETS := internal/tarfs:FuzzExtract internal/image:FuzzUnpackLayers internal/functions:FuzzPayloads \
	internal/engineapi:FuzzFrames internal/e2bapi/envd:FuzzConnect internal/agentclient:FuzzAgentFrames \
	internal/previewhost:FuzzParse internal/gitcmd:FuzzParsers internal/dnsgate:FuzzServeDNS internal/config:FuzzParse
FUZZ ?= $(FUZZ_TARGETS)
.PHONY: fuzz
fuzz:
	@set -e; mkdir -p $(BIN)/fuzz; : > $(BIN)/fuzz/summary; \
	for t in $(subst $(comma), ,$(FUZZ)); do \
		pkg=$${t%%:*}; fn=$${t##*:}; log=$(BIN)/fuzz/$$(echo $$pkg | tr / _)-$$fn.log; \
		echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x -parallel 1 ./$$pkg > $$log 2>&1 \
			|| { tail -30 $$log; exit 1; }; \
		echo "$$pkg $$fn $$(grep -o 'execs: [0-9]*' $$log | tail -1 | cut -d' ' -f2) execs, $$(grep -o 'total: [0-9]*' $$log | tail -1 | cut -d' ' -f2) corpus" >> $(BIN)/fuzz/summary; \
	done; cat $(BIN)/fuzz/summary
comma := ,
# issue 41: operations. HUTCH_VERSION is stamped into hutch (`hutch version`,
# /healthz) and hutch-agent: the commit, and whether the tree had changes.
HUTCH_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# promtool (Debian's prometheus package) checks deploy/prometheus's rules in
# deploy/deploy_test.go.
APT_PACKAGES += prometheus
# issue 41: systemd-nspawn boots the package test's root under systemd.
APT_PACKAGES += systemd-container
# The Debian package (packaging/, docs/operations.md): DEB_VERSION must
# start with a digit and grow from one package to the next.
DEB_VERSION ?= 0.0.0~git$(shell date -u +%Y%m%d%H%M%S)
DEB := $(BIN)/hutch_$(DEB_VERSION)_amd64.deb
.PHONY: deb install test-package
deb: build
	packaging/build-deb.sh $(BIN) $(DEB_VERSION) $(DEB)
# Installs what the package holds onto this system (DESTDIR for a staging
# root) and, onto / itself, makes the group and data dir and starts the
# unit where systemd runs.
install: build
	packaging/stage.sh $(BIN) $(DESTDIR)/
	@if [ -z "$(DESTDIR)" ]; then packaging/debian/postinst configure; fi
# The package test (deploy/package_test.go, -tags package; the last part of
# make test): builds two packages and
# installs, upgrades, removes and purges them in a fresh Debian root.
test-package: build
	HUTCH_REQUIRE_INTEGRATION=1 $(GO) test -tags package -count=1 -timeout 30m -run TestPackage -v ./deploy/
