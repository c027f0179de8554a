# homing: dead-letter handling for SQS + Lambda, in Go.
# `make help` lists the targets.

GO         ?= go
ARCH       ?= $(shell $(GO) env GOARCH)
EMULATOR_PORT ?= 4566
AWS_REGION ?= us-east-1

FUNCTIONS  := $(notdir $(wildcard functions/*))
BOOTSTRAPS := $(FUNCTIONS:%=bin/%/bootstrap)

# What every test and tool talking to the emulator sees; the SDK reads
# AWS_ENDPOINT_URL itself, so no Go code knows about the emulator.
EMULATOR_ENV := AWS_ENDPOINT_URL=http://127.0.0.1:$(EMULATOR_PORT) AWS_REGION=$(AWS_REGION) \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true

.PHONY: help build unit e2e test lint bench fuzz emulator-up emulator-down clean FORCE

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: $(BOOTSTRAPS) ## one Lambda bootstrap per function under bin/<function>/ (ARCH=arm64 for AWS)

bin/%/bootstrap: FORCE
	CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $@ ./functions/$*

unit: ## unit tests: no network, no node, no emulator
	$(GO) test -race -count=1 ./...

e2e: ## start the emulator, run the e2e-tagged tests against it, stop it (also on failure)
	@scripts/emulator.sh up
	@$(EMULATOR_ENV) $(GO) test -tags e2e -count=1 -timeout 15m ./...; rc=$$?; scripts/emulator.sh down; exit $$rc

test: unit e2e ## everything CI runs

lint: ## gofmt, go vet, staticcheck (pinned as a go.mod tool)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags e2e ./...

bench: ## benchmarks with allocations (compare runs with benchstat)
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee .local/bench.txt

fuzz: ## a short fuzzing session per fuzz target
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./internal/order/
	$(GO) test -run '^$$' -fuzz FuzzHandleEvent -fuzztime 30s ./functions/consumer/

emulator-up: ## install (project-local venv) and start ministack on 127.0.0.1:$(EMULATOR_PORT)
	@scripts/emulator.sh up

emulator-down: ## stop the emulator this project started
	@scripts/emulator.sh down

clean: emulator-down ## remove build output and local state
	rm -rf bin .local

FORCE:
