#!/usr/bin/env bash
# Part of `make test`: the worker clients against a live broker and the development IdP —
# the Python package (clients/python), the Swift package (clients/swift), and a client
# generated from docs/openapi.yaml (openapi-python-client, pinned, in .run/venv-gen) driven
# through a worker's scenario. Needs DATABASE_URL (migrated) and TOKENBROKER_BIN_DIR.
# Usage: scripts/clients.sh [python|swift|generated]...   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("${@:-python swift generated}"); parts=(${parts[*]})
source scripts/live.sh clients
status=0
for part in "${parts[@]}"; do
  live_tenant
  case $part in
    python)
      echo "== clients/python" >&2
      PYTHONPATH=clients/python/src:clients/python/tests python3 -m unittest discover -s clients/python/tests -v || status=1 ;;
    swift)
      echo "== clients/swift" >&2
      swift test --package-path clients/swift || status=1 ;;
    generated)
      echo "== a client generated from docs/openapi.yaml" >&2
      scripts/generated-client.sh || status=1 ;;
    *) echo "clients.sh: unknown part $part" >&2; exit 2 ;;
  esac
done
exit $status
