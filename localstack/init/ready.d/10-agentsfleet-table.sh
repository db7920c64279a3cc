#!/usr/bin/env bash
# LocalStack ready hook: create agentsfleet's DynamoDB table with the schema
# of shared/store (table.json beside this file is kept equal to
# store.CreateTableInput by a test) and turn on its TTL.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
table="${AGENTSFLEET_TABLE:-agentsfleet}"
if awslocal dynamodb describe-table --table-name "$table" >/dev/null 2>&1; then
  echo "agentsfleet: table $table exists"
  exit 0
fi
awslocal dynamodb create-table --cli-input-json "file://$here/table.json" --table-name "$table" >/dev/null
awslocal dynamodb wait table-exists --table-name "$table"
awslocal dynamodb update-time-to-live --table-name "$table" \
  --time-to-live-specification "Enabled=true,AttributeName=expiresAt"
echo "agentsfleet: created table $table"
