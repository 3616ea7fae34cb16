#!/usr/bin/env bash
# LocalStack runs this once it is ready. The stack itself is provisioned from the host by
# the project's own CDK app (localstack/test.sh runs cdklocal), so the hook only checks that
# the services longrun needs answer, then marks the container healthy.
set -euo pipefail
for check in "dynamodb list-tables" "stepfunctions list-state-machines" "sqs list-queues" "events list-event-buses" "lambda list-functions"; do
  awslocal $check >/dev/null
done
touch /tmp/longrun-ready
echo "longrun: LocalStack is ready for cdklocal deploy"
