# agentsfleet — the targets the README names. `make test` and `make dev` do all
# their own set-up on a fresh machine.

SHELL   := /bin/bash
GO      ?= go
PYTHON  ?= python3
VENV    := .venv
MOTO    := $(VENV)/.moto-installed
CFNLINT := $(VENV)/.cfnlint-installed
BIN     := bin
LAMBDA_OUT := build/lambda
# Every folder of functions/ with a main.go is a Lambda.
FUNCTIONS  := $(patsubst functions/%/main.go,%,$(wildcard functions/*/main.go))
GOTEST_FLAGS ?= -count=1 -timeout 20m

.PHONY: all build lambdas release test test-race dev bench synth lint-template deploy lint fmt venv tools clean

all: build

## venv: Python virtualenv with moto server (pinned in localstack/requirements.txt).
venv: $(MOTO)
$(MOTO): localstack/requirements.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r localstack/requirements.txt
	touch $@

## tools: system tools the build and tests use: a C compiler and static libc
## (sandboxd's confinement trampoline is C, built through cgo), ripgrep, and
## Debian's chromium with a font (the browser tools of `make dev` and
## `agentsfleet run`, and their tests). Installs them with apt-get when root;
## otherwise a missing Chromium is only a warning (the browser tools say they
## are not available).
APT_INSTALL := apt-get install -y -qq --no-install-recommends
tools:
	@if ! command -v cc >/dev/null 2>&1 || ! echo 'int main(void){return 0;}' | cc -static -x c -o /dev/null - >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing gcc and libc6-dev"; \
	    ($(APT_INSTALL) gcc libc6-dev >/dev/null 2>&1 || { apt-get update -qq && $(APT_INSTALL) gcc libc6-dev; }); \
	  else echo "error: a C compiler with static libc is needed (apt-get install gcc libc6-dev)"; exit 1; fi; fi
	@command -v rg >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing ripgrep"; \
	    ($(APT_INSTALL) ripgrep >/dev/null 2>&1 || { apt-get update -qq && $(APT_INSTALL) ripgrep; }); \
	  else echo "warning: rg (ripgrep) not found; grep tests use grep -rnE and rg comparisons skip"; fi; }
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing chromium"; \
	    ($(APT_INSTALL) chromium fonts-liberation >/dev/null 2>&1 || { apt-get update -qq && $(APT_INSTALL) chromium fonts-liberation; }); \
	  else echo "warning: no Chromium found (as root, make tools installs Debian's chromium; or set AGENTSFLEET_BROWSER): the browser tools are not available locally"; fi; }

## build: every binary for this machine into bin/ (sandboxd as the image
## builds it: static, see sandboximage.BuildFlags).
build: tools
	$(GO) build -o $(BIN)/ ./functions/... ./cmd/...
	CGO_ENABLED=1 $(GO) build -trimpath -tags netgo,osusergo -ldflags "-s -w -linkmode external -extldflags -static" -o $(BIN)/ ./sandboximage/...

## lambdas: Lambda binaries for provided.al2023 on arm64.
lambdas:
	@for f in $(FUNCTIONS); do \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w" \
	    -o $(LAMBDA_OUT)/$$f/bootstrap ./functions/$$f || exit 1; \
	done

## release: the operator CLI for Linux and macOS, amd64 and arm64 (static, no
## cgo), into dist/agentsfleet-<os>-<arch>, stamped with `git describe` (what
## `agentsfleet version` prints), and dist/SHA256SUMS, which
## `cd dist && sha256sum -c SHA256SUMS` (or shasum -a 256 -c) checks.
RELEASE_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
RELEASE_VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
SHA256SUM         := $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo shasum -a 256)
release:
	@mkdir -p dist && rm -f dist/agentsfleet-* dist/SHA256SUMS
	@for p in $(RELEASE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; echo "dist/agentsfleet-$$os-$$arch ($(RELEASE_VERSION))"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w -X main.version=$(RELEASE_VERSION)" \
	    -o dist/agentsfleet-$$os-$$arch ./cmd/agentsfleet || exit 1; \
	done
	cd dist && $(SHA256SUM) agentsfleet-* > SHA256SUMS

# Packages whose concurrency the race detector checks in every `make test`.
RACE_PKGS := ./shared/runner/ ./shared/invoke/ ./shared/model/... ./shared/store/ ./shared/sandbox/server/ ./shared/sandbox/client/ ./shared/sandbox/session/ ./shared/sandbox/confine/ ./shared/sandbox/launch/ ./shared/sandbox/launch/pool/ ./shared/sandbox/launch/local/ ./shared/web/ ./shared/schedule/... ./shared/api/... ./shared/slack/...

## test: all tests, against a moto server the tests start themselves, then
## the concurrent packages again under the race detector. The Lambdas are
## built first: a cgo import in one of them fails here.
test: venv tools lambdas
	$(GO) vet ./...
	$(GO) test $(GOTEST_FLAGS) ./...
	$(GO) test -race $(GOTEST_FLAGS) $(RACE_PKGS)
	cd infra && $(CDK_ENV) CDK_VALIDATION=false $(GO) vet ./... && $(CDK_ENV) CDK_VALIDATION=false $(GO) test $(GOTEST_FLAGS) ./...
	$(MAKE) --no-print-directory lint-template

## test-race: the tests under the race detector.
test-race: venv tools
	$(GO) test -race $(GOTEST_FLAGS) ./...

## dev: the product on this machine, against moto (or AWS_ENDPOINT_URL).
dev: venv build
	$(BIN)/agentsfleet dev

## bench: benchmarks that print ratios against baselines measured in the same run.
bench: venv tools build
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./... | tee bench.txt

## synth: the CDK app (infra/, its own Go module) into cdk.out/Agentsfleet.template.json;
## SYNTH_ARGS="-c network=private" passes context, CDK_OUT another output
## directory. Needs node, not the CDK CLI.
CDK_ENV := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
CDK_OUT ?= cdk.out
synth: lambdas
	cd infra && $(CDK_ENV) CDK_OUTDIR=$(abspath $(CDK_OUT)) $(GO) run . $(SYNTH_ARGS)

## lint-template: cfn-lint (pinned in infra/requirements-lint.txt, set in
## infra/cfnlintrc.yaml) over the template of both network layouts and of
## the browser sandboxes: the public one in cdk.out, the private one in
## build/cdk.out-private, the public one with sandboxBrowser in
## build/cdk.out-browser. An error or a warning fails.
$(CFNLINT): $(MOTO) infra/requirements-lint.txt
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r localstack/requirements.txt -r infra/requirements-lint.txt
	touch $@
lint-template: $(CFNLINT)
	$(MAKE) --no-print-directory synth SYNTH_ARGS= CDK_OUT=cdk.out
	$(MAKE) --no-print-directory synth SYNTH_ARGS="-c network=private" CDK_OUT=build/cdk.out-private
	$(MAKE) --no-print-directory synth SYNTH_ARGS="-c sandboxBrowser=true -c browserWarmPool=small=1" CDK_OUT=build/cdk.out-browser
	$(VENV)/bin/cfn-lint --config-file infra/cfnlintrc.yaml -- cdk.out/Agentsfleet.template.json build/cdk.out-private/Agentsfleet.template.json \
	  build/cdk.out-browser/Agentsfleet.template.json

## deploy: `cdk deploy` of the stack (cdk.json), DEPLOY_ARGS passed on
## ("-c network=private", "--profile p"). Needs AWS credentials and Docker.
deploy: lambdas
	$(CDK_ENV) npx --yes aws-cdk@2 deploy $(DEPLOY_ARGS) Agentsfleet

## lint: gofmt, go vet and staticcheck.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) build bench.txt
