# homing: dead-letter handling for SQS + Lambda, in Go.
# `make help` lists the targets; CONTRIBUTING.md explains them.

GO            ?= go
# go.mod's `toolchain` line names the Go release that builds, tests and
# scans; an older go fetches it through the Go module proxy (GOTOOLCHAIN=auto),
# also on machines whose go.env says GOTOOLCHAIN=local.
export GOTOOLCHAIN ?= auto
HOST_ARCH     := $(shell $(GO) env GOARCH)
ARCH          ?= $(HOST_ARCH)
AWS_REGION    ?= us-east-1
EMULATOR      ?= ministack
EMULATOR_PORT ?= 4566
TAX_PORT      ?= 4580
# moto's server: the second emulator of the contract suites (make e2e).
MOTO_PORT     ?= 4599
# LocalStack's open-source runtime in host mode (no Docker; scripts/localstack.sh):
# the queue suites' third implementation. LOCALSTACK_PYTHON: a Python >= 3.13
# to build its venv with (default: the newest found on PATH or under pyenv).
LOCALSTACK_PORT   ?= 4610
LOCALSTACK_PYTHON ?=
STACK         ?= Homing
# N: the orders of make soak (default 5000), the dead letters per contender
# of make bench-replay on the bare emulator (default 1000).
N             ?=

FUNCTIONS  := $(notdir $(wildcard functions/*))
BOOTSTRAPS := $(FUNCTIONS:%=bin/%/bootstrap)
# The example lane (examples/, its own Go module): its functions build into
# bin/ beside ours, and CI vets and tests it like the root module.
EXAMPLE_FUNCTIONS  := $(notdir $(wildcard examples/functions/*))
EXAMPLE_BOOTSTRAPS := $(EXAMPLE_FUNCTIONS:%=bin/%/bootstrap)
CDK        := $(CURDIR)/node_modules/.bin/cdk
NPM_STAMP  := node_modules/.package-lock.json
# golang.org/x/vulndb snapshot that `make lint` scans against (`make vuln`: the newest).
VULNDB     ?= v0.0.0-20261105234957-e22db6528018

# cdk, and the node that jsii starts for the infra tests and the CDK app, are
# the Node.js 24 LTS that package-lock.json pins (npm package `node`), not the machine's.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

# What every test and tool talking to the emulator sees; the SDKs read
# AWS_ENDPOINT_URL themselves, so no Go code knows about the emulator.
EMULATOR_ENV := AWS_ENDPOINT_URL=http://127.0.0.1:$(EMULATOR_PORT) AWS_REGION=$(AWS_REGION) \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true

# Functions run as local processes on ministack, in containers on LocalStack:
# that decides where they find the tax stand-in.
LOCAL_TAX_URL := $(if $(filter localstack,$(EMULATOR)),http://host.docker.internal,http://127.0.0.1):$(TAX_PORT)
CDK_LOCAL_ENV := $(EMULATOR_ENV) CDK_DEFAULT_ACCOUNT=000000000000 CDK_DEFAULT_REGION=$(AWS_REGION) \
	HOMING_PROFILE=local TAX_SERVICE_URL=$(LOCAL_TAX_URL)
CDK_FLAGS     := --no-notices --ci

# What the e2e tests learn of the emulators: each contract suite runs on
# every implementation of its service, listed as name=URL pairs, each
# implementation's gaps declared by its name. Queue: the emulator, moto and
# LocalStack in host mode (left out when the emulator is LocalStack's Docker
# profile, which has SQS itself); DynamoDB and S3: the emulator and moto.
comma := ,
SQS_ENDPOINTS      := $(EMULATOR)=http://127.0.0.1:$(EMULATOR_PORT),moto=http://127.0.0.1:$(MOTO_PORT)$(if $(filter localstack,$(EMULATOR)),,$(comma)localstack=http://127.0.0.1:$(LOCALSTACK_PORT))
DYNAMODB_ENDPOINTS := $(EMULATOR)=http://127.0.0.1:$(EMULATOR_PORT),moto=http://127.0.0.1:$(MOTO_PORT)
S3_ENDPOINTS       := $(EMULATOR)=http://127.0.0.1:$(EMULATOR_PORT),moto=http://127.0.0.1:$(MOTO_PORT)
CONTRACT_ENV  := HOMING_EMULATOR=$(EMULATOR) HOMING_SQS_ENDPOINTS=$(SQS_ENDPOINTS) HOMING_DYNAMODB_ENDPOINTS=$(DYNAMODB_ENDPOINTS) \
	HOMING_S3_ENDPOINTS=$(S3_ENDPOINTS)
# The e2e target starts host-mode LocalStack only beside another emulator.
HOST_LOCALSTACK := $(if $(filter localstack,$(EMULATOR)),,yes)

export CDK_DISABLE_VERSION_CHECK := 1

.PHONY: help demo soak build unit sim infra-test cfn-lint e2e test lint release-check release-snapshot release proxy-proof vuln bench bench-replay fuzz synth deploy-local destroy-local \
	emulator-up emulator-down moto-up moto-down localstack-up localstack-down clean FORCE

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

demo: ## the main job on the local emulator: outage, dead letters, scheduled replay, a final table; tears down (KEEP=1 keeps it up)
	@rc=0; $(MAKE) --no-print-directory deploy-local && \
	  HOMING_OUTPUTS=$(CURDIR)/.local/outputs.json KEEP=$(KEEP) $(EMULATOR_ENV) $(GO) run ./cmd/demo || rc=$$?; \
	  [ -n "$(KEEP)" ] || $(MAKE) --no-print-directory emulator-down; exit $$rc

soak: ## N orders (default 5000) through the deployed stack: outage, flaky phase, duplicates, invalid orders, crashed replays; an accounting table; tears down
	@rc=0; $(MAKE) --no-print-directory deploy-local && \
	  HOMING_OUTPUTS=$(CURDIR)/.local/outputs.json $(EMULATOR_ENV) $(GO) run ./cmd/soak -n $(or $(N),5000) -dlq $(CURDIR)/bin/dlq || rc=$$?; \
	  $(MAKE) --no-print-directory emulator-down; exit $$rc

build: $(BOOTSTRAPS) $(EXAMPLE_BOOTSTRAPS) bin/dlq ## a Lambda bootstrap per function (examples' too) in bin/<function>/ (ARCH=arm64 for AWS), and bin/dlq

bin/%/bootstrap: FORCE
	CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $@ ./functions/$*

$(EXAMPLE_BOOTSTRAPS): bin/%/bootstrap: FORCE
	cd examples && CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o ../$@ ./functions/$*

bin/dlq: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./cmd/dlq

unit: ## unit tests: no network, no node, no emulator (examples/ too)
	$(GO) test -race -count=1 ./...
	cd examples && $(GO) test -race -count=1 ./...

# SEEDS=N runs seeds 1..N (default 200); SEED=N replays one seed with its trace.
sim: ## the deterministic simulation of the whole system: SEEDS=N random seeds (default 200), or SEED=N alone
	SIM_SEEDS=$(or $(SEEDS),200) $(if $(SEED),SIM_SEED=$(SEED)) $(GO) test -count=1 -timeout 30m -run '^TestSim$$' ./internal/tools/sim

infra-test: $(NPM_STAMP) ## CDK template assertions and cdk-nag (jsii starts the project's node), then cfn-lint
	cd infra && $(GO) test -count=1 ./...
	GO=$(GO) scripts/cfnlint.sh

cfn-lint: $(NPM_STAMP) ## cfn-lint (pinned, in the emulator's venv) on every template of both profiles and the pipeline stack; fails on errors and unsuppressed warnings (infra/.cfnlintrc)
	GO=$(GO) scripts/cfnlint.sh

# -p 1: the deployed-stack tests of the root module's packages share the
# orders lane and switch the tax stand-in down and up; they must not
# overlap. The examples' tests (the payments lane, its own ledger stand-in)
# run beside them, their output printed when both are done: of the payments
# lane the root module's tests only inspect its parking queue (a browse
# hides what it samples for 15 s: the one examples' test that parks there
# reads its message back with retries).
E2E_EXAMPLES_LOG := .local/e2e-examples.log
e2e: ## emulator, moto and LocalStack (host mode) up, deploy the local stack, run the e2e-tagged tests, all down (also on failure)
	@rc=0; $(MAKE) --no-print-directory moto-up && \
	  { [ -z "$(HOST_LOCALSTACK)" ] || $(MAKE) --no-print-directory localstack-up; } && $(MAKE) --no-print-directory deploy-local && \
	  { (cd examples && HOMING_OUTPUTS=$(CURDIR)/.local/outputs.json $(EMULATOR_ENV) $(CONTRACT_ENV) $(GO) test -tags e2e -count=1 -p 1 -timeout 20m ./...) \
	      > $(E2E_EXAMPLES_LOG) 2>&1 & ex=$$!; \
	    HOMING_OUTPUTS=$(CURDIR)/.local/outputs.json $(EMULATOR_ENV) $(CONTRACT_ENV) $(GO) test -tags e2e -count=1 -p 1 -timeout 30m ./... || rc=$$?; \
	    wait $$ex || rc=$$?; echo "== examples/ (e2e, beside the root module's)"; cat $(E2E_EXAMPLES_LOG); } || rc=$$?; \
	  $(MAKE) --no-print-directory emulator-down; $(MAKE) --no-print-directory moto-down; \
	  [ -z "$(HOST_LOCALSTACK)" ] || $(MAKE) --no-print-directory localstack-down; exit $$rc

test: unit infra-test e2e ## everything CI runs

lint: ## gofmt, go vet, staticcheck, actionlint and govulncheck (pinned as go.mod tools), every module, e2e tag too; apidiff of the public API against the last tag
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... && $(GO) vet -tags e2e ./...
	$(GO) tool staticcheck ./... && $(GO) tool staticcheck -tags e2e ./...
	cd examples && $(GO) vet ./... && $(GO) vet -tags e2e ./...
	sc=$$($(GO) tool -n staticcheck) && cd examples && $$sc ./... && $$sc -tags e2e ./...
	cd infra && $(GO) vet ./...
	$(GO) tool actionlint
	GO=$(GO) scripts/vulncheck.sh $(VULNDB)
	GO=$(GO) scripts/apidiff.sh

# GoReleaser is pinned in tools/go.mod (its own module: its dependencies stay
# out of the root module's graph, and so out of an adopter's).
GORELEASER = GOWORK=off $$(cd tools && GOWORK=off $(GO) tool -n goreleaser)

release-check: ## goreleaser check of .goreleaser.yaml
	$(GORELEASER) check

release-snapshot: ## the release assets of the working tree into dist/ (goreleaser --snapshot): dlq x6, the replay bootstrap x2 zipped, checksums
	$(GORELEASER) release --snapshot --clean

release: ## the release of the tag at HEAD (CI's release workflow runs it, with GITHUB_TOKEN)
	$(GORELEASER) release --clean

# VERSION=vX.Y.Z tags the snapshot (default CHANGELOG.md's newest release);
# KEEP=1 keeps its temporary directory, SYNTH=0 skips cdk synth.
proxy-proof: $(NPM_STAMP) ## the working tree as a tagged release in a file-based module proxy; an empty module go gets it, go installs dlq, builds and synthesizes a CDK app with a lane; no replace
	GO=$(GO) VERSION=$(VERSION) KEEP=$(KEEP) SYNTH=$(SYNTH) scripts/proxyproof.sh

vuln: ## govulncheck, both modules, against the newest Go vulnerability database on the Go module proxy
	GO=$(GO) scripts/vulncheck.sh latest

bench: ## benchmarks with allocations, 6 runs each (compare runs with benchstat)
	@mkdir -p .local
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee .local/bench.txt

# N dead letters per contender and round on the bare emulator (default 1000),
# N_DELAYED through the delay proxy (default 1000; the naive mover at most
# N_NAIVE, default 200), W workers (default 4), ROUNDS rounds (default 3; the
# tables show medians), DELAY the delays added to every client write by the
# proxy, a column each (default 10ms,50ms). The dlq replay rows run bin/dlq.
bench-replay: bin/dlq ## replay engine, dlq replay, naive mover, raw SDK batch loop (1 and W workers), bare and every call +DELAY (10ms,50ms), on the emulator; CPU-bound figures marked, targets judged on round trips; tears down
	@rc=0; $(MAKE) --no-print-directory emulator-up && \
	  $(EMULATOR_ENV) $(GO) run ./cmd/benchreplay -n $(or $(N),1000) -n-delayed $(or $(N_DELAYED),1000) -workers $(or $(W),4) \
	    -rounds $(or $(ROUNDS),3) $(if $(DELAY),-delay $(DELAY)) $(if $(N_NAIVE),-n-naive $(N_NAIVE)) $(if $(ONLY),-only $(ONLY)) -dlq $(CURDIR)/bin/dlq || rc=$$?; \
	  $(MAKE) --no-print-directory emulator-down; exit $$rc

# FUZZTIME per target (default 30s); ONLY=regexp runs the targets it matches.
# A failing input lands in the package's testdata/fuzz/<Target>/ (check it in
# with its fix); a target under 1,000 inputs/s fails too (scripts/fuzz.sh).
fuzz: ## every fuzz target of both modules, FUZZTIME (default 30s) each; fails on a failing input or a target under 1,000 inputs/s
	GO=$(GO) FUZZTIME=$(or $(FUZZTIME),30s) ONLY='$(or $(ONLY),.)' scripts/fuzz.sh

# node_modules holds Go templates of the CDK CLI: a go.mod fences them off ./...
$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	echo 'module example.invalid/nodemodules' > node_modules/go.mod

synth: $(NPM_STAMP) ## build arm64 and synthesize the AWS profile into infra/cdk.out
	$(MAKE) --no-print-directory build ARCH=arm64
	cd infra && $(CDK) synth $(CDK_FLAGS) -q -c profile=aws

deploy-local: $(NPM_STAMP) build emulator-up ## deploy the local profile to the emulator; outputs in .local/outputs.json
	cd infra && $(CDK_LOCAL_ENV) $(CDK) bootstrap $(CDK_FLAGS) aws://000000000000/$(AWS_REGION)
	cd infra && $(CDK_LOCAL_ENV) $(CDK) deploy $(STACK) $(CDK_FLAGS) --require-approval never -c profile=local
	$(CDK_LOCAL_ENV) $(GO) run ./cmd/localcheck -stack $(STACK) -outputs .local/outputs.json \
		-tax-url http://127.0.0.1:$(TAX_PORT) -fix-emulator-gaps

destroy-local: $(NPM_STAMP) ## delete the local stack from the emulator
	cd infra && $(CDK_LOCAL_ENV) $(CDK) destroy $(STACK) $(CDK_FLAGS) --force -c profile=local
	rm -f .local/outputs.json

emulator-up: ## install (project-local venv) and start the emulator and the tax stand-in on 127.0.0.1
	@EMULATOR=$(EMULATOR) EMULATOR_PORT=$(EMULATOR_PORT) TAX_PORT=$(TAX_PORT) scripts/emulator.sh up

emulator-down: ## stop what emulator-up started
	@EMULATOR=$(EMULATOR) EMULATOR_PORT=$(EMULATOR_PORT) TAX_PORT=$(TAX_PORT) scripts/emulator.sh down

moto-up: ## install (project-local venv .venv-moto) and start moto's server on 127.0.0.1:MOTO_PORT (default 4599; PID in .local/)
	@MOTO_PORT=$(MOTO_PORT) scripts/emulator.sh moto-up

moto-down: ## stop what moto-up started
	@MOTO_PORT=$(MOTO_PORT) scripts/emulator.sh moto-down

localstack-up: ## install (project-local venv .venv-localstack, on a Python >= 3.13) and start LocalStack's open-source runtime without Docker on 127.0.0.1:LOCALSTACK_PORT (default 4610; PID in .local/)
	@LOCALSTACK_PORT=$(LOCALSTACK_PORT) LOCALSTACK_PYTHON=$(LOCALSTACK_PYTHON) AWS_REGION=$(AWS_REGION) scripts/localstack.sh up

localstack-down: ## stop what localstack-up started
	@LOCALSTACK_PORT=$(LOCALSTACK_PORT) scripts/localstack.sh down

clean: emulator-down moto-down localstack-down ## remove build output and local state
	rm -rf bin .local infra/cdk.out

FORCE:
