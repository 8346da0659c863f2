#!/usr/bin/env bash
# Part of scripts/clients.sh: generates a Python client from docs/openapi.yaml with
# openapi-python-client (PyPI, pinned, in .run/venv-gen) — any warning fails, as a contract a
# generator half understands is not one — and runs a worker's scenario through it
# (clients/generated) against the live broker that clients.sh started.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.29.1
venv=.run/venv-gen
if ! "$venv/bin/pip" show openapi-python-client 2>/dev/null | grep -q "^Version: $version$"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "openapi-python-client==$version"
fi
out=.run/generated
rm -rf "$out"; mkdir -p "$out"
"$venv/bin/openapi-python-client" generate --path docs/openapi.yaml --output-path "$out/tokenbroker_generated" \
  --meta none --config clients/generated/config.yaml 2>&1 | tee "$out/generate.out"
if grep -qi "warning\|error" "$out/generate.out"; then
  echo "generated-client.sh: openapi-python-client did not take docs/openapi.yaml cleanly (above)" >&2
  exit 1
fi
PYTHONPATH="$out:clients/python/tests" "$venv/bin/python" -m unittest discover -s clients/generated -v
