#!/usr/bin/env bash
# Part of `make test`: schemathesis (PyPI, pinned, in .run/venv) against a live broker and the
# development IdP, with docs/openapi.yaml as the contract: every documented route exists and
# answers only documented statuses, content types and bodies — error responses included — and
# never a 5xx. Needs DATABASE_URL (migrated) and TOKENBROKER_BIN_DIR; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
version=4.32.5
venv=.run/venv
if [ ! -x "$venv/bin/st" ] || ! "$venv/bin/st" --version 2>/dev/null | grep -q "$version"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
fi
# The contract must be valid and lint-clean before anything is tested against it.
scripts/openapi-check.sh
logs="${TOKENBROKER_TEST_LOGS:-.run}"
source scripts/live.sh schemathesis
# Path parameters (scripts/schemathesis.toml) name this tenant, its client and one session.
export ST_TENANT="$LIVE_TENANT" ST_SESSION="$(live_session alice)"
B=$LIVE_BROKER key=$LIVE_KEY

# One worker: hypothesis's lambda introspection is not thread-safe in this version.
"$venv/bin/st" --config-file scripts/schemathesis.toml run docs/openapi.yaml --url "$B" --header "Authorization: Bearer $key" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --phases examples,coverage,fuzzing --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" --workers 1 --seed 1 \
  --suppress-health-check all --no-color 2>&1 | tee "$logs/schemathesis.out"
