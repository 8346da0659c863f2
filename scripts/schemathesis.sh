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
bin="${TOKENBROKER_BIN_DIR:?}"
logs="${TOKENBROKER_TEST_LOGS:-.run}"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
idp_port=$(free_port); broker_port=$(free_port)
I=http://127.0.0.1:$idp_port; B=http://127.0.0.1:$broker_port
export TOKENBROKER_SEALING_KEYS="k1:$(head -c 32 /dev/urandom | base64)" TOKENBROKER_LISTEN=127.0.0.1:$broker_port TOKENBROKER_ACCESS_LOG=true
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
"$bin/dev-idp" --listen 127.0.0.1:$idp_port 2> "$logs/schemathesis-dev-idp.log" & pids+=($!)
"$bin/tokenbroker" serve 2> "$logs/schemathesis-broker.log" & pids+=($!)
for _ in $(seq 100); do curl -sf $B/healthz >/dev/null && curl -sf $I/jwks >/dev/null && break; sleep 0.1; done

# One tenant (fresh each run) with a client, a session, and a key that may do everything there.
export ST_TENANT="st-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
op=$("$bin/tokenbroker" apikey create --role operator --name schemathesis-operator --all-tenants)
curl -sf -XPUT $B/v1/tenants/$ST_TENANT -H "Authorization: Bearer $op" -d '{"name":"Schemathesis"}' >/dev/null
curl -sf -XPOST $I/admin/clients -d "{\"client_id\":\"st-app\",\"client_secret\":\"st-secret\",\"redirect_uris\":[\"$B/v1/callback\"]}" >/dev/null
curl -sf -XPUT $B/v1/tenants/$ST_TENANT/clients/app -H "Authorization: Bearer $op" -d "{\"issuer\":\"$I\",\"client_id\":\"st-app\",
  \"auth_method\":\"client_secret_basic\",\"client_secret\":\"st-secret\",\"redirect_uri\":\"$B/v1/callback\",\"scopes\":[\"openid\",\"offline_access\"]}" >/dev/null
key=$(curl -sf -XPOST $B/v1/apikeys -H "Authorization: Bearer $op" \
  -d '{"name":"schemathesis","roles":["worker","admin","enrol","operator"],"tenants":["*"]}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
rt=$(curl -sf -XPOST $I/admin/grants -d '{"client_id":"st-app","subjects":["alice"]}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["refresh_tokens"]["alice"])')
export ST_SESSION=$(curl -sf -XPOST $B/v1/tenants/$ST_TENANT/sessions:import -H "Authorization: Bearer $key" \
  -d "{\"client\":\"app\",\"subject\":\"alice\",\"refresh_token\":\"$rt\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session_id"])')

# One worker: hypothesis's lambda introspection is not thread-safe in this version.
"$venv/bin/st" --config-file scripts/schemathesis.toml run docs/openapi.yaml --url "$B" --header "Authorization: Bearer $key" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --phases examples,coverage,fuzzing --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" --workers 1 --seed 1 \
  --suppress-health-check all --no-color 2>&1 | tee "$logs/schemathesis.out"
