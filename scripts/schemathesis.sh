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
# The contract must be valid OpenAPI 3.1 before anything is tested against it (its own venv:
# its jsonschema pins are not schemathesis's).
validator=0.9.0
osv=.run/venv-osv
if ! "$osv/bin/pip" show openapi-spec-validator 2>/dev/null | grep -q "^Version: $validator$"; then
  python3 -m venv "$osv"
  "$osv/bin/pip" install --quiet --disable-pip-version-check "openapi-spec-validator==$validator"
fi
"$osv/bin/openapi-spec-validator" docs/openapi.yaml
# A comma in an unquoted flow-style text cuts it and makes a key with no value, which the
# validator accepts inside schemas: refuse those too.
"$osv/bin/python" - docs/openapi.yaml <<'PY'
import sys, yaml
bad = []
def walk(o, path):
    if isinstance(o, dict):
        for k, v in o.items():
            if v is None and isinstance(k, str) and " " in k:
                bad.append("/".join(path + [k]))
            walk(v, path + [str(k)])
    elif isinstance(o, list):
        for i, v in enumerate(o):
            walk(v, path + [str(i)])
walk(yaml.safe_load(open(sys.argv[1])), [])
if bad:
    sys.exit("docs/openapi.yaml: a text cut by an unquoted comma (quote it): " + "; ".join(bad))
PY
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
