# longrun — every command a developer or CI needs. `make test` installs what it needs
# (Go modules, DynamoDB Local into the git-ignored .cache/) and runs every test.
SHELL   := /bin/bash
GO      ?= go
CACHE   := .cache
DDB_DIR := $(CACHE)/dynamodb-local
DDB_PKG := amplify-dynamodb-simulator@2.9.30
FUZZTIME ?= 10s
BENCHTIME ?= 3s
# DynamoDB Local runs the whole suite; it starts once and every package shares it.
WITH_DDB := $(GO) run ./cmd/ddblocal --
STAGE   ?= dev
CDK_CLI := aws-cdk@2.1148.1
CDK     := $(CACHE)/cdk/node_modules/.bin/cdk
# The CDK app runs CDK's JavaScript under Node (jsii); keep it quiet and offline.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export CDK_DISABLE_VERSION_CHECK := 1

.PHONY: all run test unit fuzz bench build synth deploy destroy cdk-install test-localstack localstack-up localstack-down lint deps ddb-install ddb-run tools-check clean

all: lint test

tools-check:
	@command -v $(GO) >/dev/null || { echo "Go 1.26 is required"; exit 1; }
	@command -v java >/dev/null || { echo "Java 17+ is required (DynamoDB Local)"; exit 1; }
	@command -v npm >/dev/null || { echo "npm is required (it fetches DynamoDB Local)"; exit 1; }

deps:
	$(GO) mod download

# DynamoDB Local ships inside an npm package; its licence forbids committing it, so it is
# fetched into the cache and never into the module tree.
ddb-install: $(DDB_DIR)/DynamoDBLocal.jar

$(DDB_DIR)/DynamoDBLocal.jar: | tools-check
	rm -rf $(CACHE)/npm-pack && mkdir -p $(CACHE)/npm-pack
	cd $(CACHE)/npm-pack && npm pack --silent --cache ../npm $(DDB_PKG) >/dev/null && tar xzf amplify-dynamodb-simulator-*.tgz
	rm -rf $(DDB_DIR) && mv $(CACHE)/npm-pack/package/emulator $(DDB_DIR)
	rm -rf $(CACHE)/npm-pack
	@test -f $@ && echo "DynamoDB Local installed in $(DDB_DIR)"

# The whole local stack: the API on http://127.0.0.1:8080/v1, the AWS edge on :4566.
run: deps ddb-install
	$(GO) build -o $(CACHE)/bin/longrun-local ./cmd/longrun-local
	$(CACHE)/bin/longrun-local $(RUNFLAGS)

# Serve DynamoDB Local in the foreground (Ctrl-C stops it).
ddb-run: deps ddb-install
	$(WITH_DDB)

lint: deps
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: deps ddb-install lint unit fuzz synth

unit:
	$(WITH_DDB) $(GO) test -race -count=1 ./...

# Short fixed fuzz runs of the parsers that face clients.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzCanonicalize$$' -fuzztime=$(FUZZTIME) ./internal/core/jcs
	$(GO) test -run='^$$' -fuzz='^FuzzValidateKey$$' -fuzztime=$(FUZZTIME) ./internal/core/admission

# Figures for docs/performance.md, against DynamoDB Local; one package at a time, so
# benchmarks do not compete for the 2 cores.
bench: deps ddb-install
	$(WITH_DDB) $(GO) test -p 1 -run='^$$' -bench=. -benchtime=$(BENCHTIME) ./internal/...

# Release build: every function for linux/arm64 (-tags lambda.norpc, trimmed, stripped),
# zipped into dist/<function>.zip for CDK; prints binary and zip sizes.
ARCH ?= arm64
build:
	$(GO) build ./...
	$(GO) run ./cmd/release -out dist -arch $(ARCH)

# Synthesize the CDK app offline into cdk.out (needs the zips of `make build`).
# (Context reaches a CDK app through CDK_CONTEXT_JSON, as the CDK CLI passes it.)
synth: build
	CDK_CONTEXT_JSON='{"stage":"$(STAGE)","codeDir":"dist"}' CDK_OUTDIR=cdk.out $(GO) run ./infra
	@ls cdk.out/*.template.json

# The CDK CLI, installed into the git-ignored cache (never into the module tree).
cdk-install: $(CDK)
$(CDK):
	mkdir -p $(CACHE)/cdk
	npm install --silent --no-fund --no-audit --prefix $(CACHE)/cdk $(CDK_CLI)

# Deploy a stage to the AWS account of the current credentials: make deploy STAGE=prod
deploy: build cdk-install
	$(CDK) deploy --app "$(GO) run ./infra" -c stage=$(STAGE) --no-notices --require-approval broadening longrun-$(STAGE)

destroy: cdk-install
	$(CDK) destroy --app "$(GO) run ./infra" -c stage=$(STAGE) --no-notices longrun-$(STAGE)

# LocalStack (needs Docker and LOCALSTACK_AUTH_TOKEN; see localstack/README.md).
localstack-up:
	docker compose -f localstack/docker-compose.yml up -d --wait

localstack-down:
	docker compose -f localstack/docker-compose.yml down

test-localstack: build
	bash localstack/test.sh

clean:
	rm -rf bin dist cdk.out
