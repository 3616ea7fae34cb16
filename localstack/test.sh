#!/usr/bin/env bash
# make test-localstack: the end-to-end suite, unchanged, against LocalStack.
#  1. start LocalStack (localstack/docker-compose.yml)
#  2. deploy the CDK app into it with cdklocal (stage "local", functions built for this host)
#  3. run the portable e2e tests with the stack's outputs as their target
# make has built dist/ for ARCH (this host's by default) and passes the CDK's name for it.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LOCALSTACK_AUTH_TOKEN:?LocalStack needs LOCALSTACK_AUTH_TOKEN: see localstack/README.md}"
: "${CDK_ARCH:?run this through make test-localstack}"
command -v docker >/dev/null || { echo "Docker (with a running engine) is required"; exit 1; }

docker compose -f localstack/docker-compose.yml up -d --wait

# cdklocal in a prefix of its own (.cache/cdk is the CLI tree `make cdk-install` builds from
# infra/cli's lockfile), pinned with its whole tree by localstack/cli's lockfile, without
# install scripts.
rm -rf .cache/cdklocal && mkdir -p .cache/cdklocal
cp localstack/cli/package.json localstack/cli/package-lock.json .cache/cdklocal/
npm ci --silent --no-fund --no-audit --ignore-scripts --prefix .cache/cdklocal
export AWS_ENDPOINT_URL=http://localhost:4566 AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export CDK_DISABLE_CLI_TELEMETRY=true CDK_DISABLE_VERSION_CHECK=1 JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
cdklocal=.cache/cdklocal/node_modules/.bin/cdklocal
app="go run ./infra"
# demoTypes: the portable e2e tests drive demo.task, which only dev stages serve by default.
"$cdklocal" bootstrap --app "$app" --no-notices -c stage=local -c architecture="$CDK_ARCH" -c demoTypes=true -c tracing=false
"$cdklocal" deploy longrun-local --app "$app" --no-notices --require-approval never \
  -c stage=local -c architecture="$CDK_ARCH" -c demoTypes=true -c tracing=false --outputs-file .cache/localstack-outputs.json

output() { node -e "const o=require('./.cache/localstack-outputs.json')['longrun-local']; process.stdout.write(o['$1'])"; }
export LONGRUN_E2E_API_URL="$(output ApiUrl | sed 's:/*$::')"
export LONGRUN_E2E_TABLE="$(output TableName)"
export LONGRUN_E2E_STATE_MACHINES="$(output StateMachines)"
export LONGRUN_E2E_FUNCTION_PREFIX="$(output FunctionPrefix)"
export LONGRUN_E2E_AUTH=sigv4

# The tests that need only the API and AWS APIs (no local-stack controls, one caller).
portable='TestCreatePollSucceeded|TestFailIsAFailedStateWithATypedProblem|TestUnknownOutcomeIsSaidOutLoud|TestExportOrdersProducesItsDigest|TestFiftyInParallel|TestCancelDuringARun|TestCancelAfterSuccessAndStaleIfMatch|TestStepFunctionsAdapterAlreadyStarted'
go test -count=1 -v -run "^($portable)\$" ./internal/e2e
