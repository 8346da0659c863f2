#!/usr/bin/env bash
# `make test`: installs what is missing, builds, checks that Package.swift declares exactly what
# each target imports (scripts/imports-check.py), starts the private PostgreSQL (unless
# DATABASE_URL is set) with a fresh test database, runs the whole suite (unit, adapter and
# integration tests against real PostgreSQL, the development IdP over HTTP and HTTPS, and
# glewlwyd, and a failover suite on a two-node Patroni cluster), then
# schemathesis against a live broker with docs/openapi.yaml as the contract, the worker
# clients (clients/) against a live broker, then scans
# every log of the run and a dump of the database for any secret the tests saw. Stops what
# it started.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
swift build --build-tests

logs="$PWD/.run/test-logs"
rm -rf "$logs"
mkdir -p "$logs"

DATABASE_URL_GIVEN=${DATABASE_URL:-}
if [ -z "${DATABASE_URL:-}" ]; then
  export PGDATABASE_NAME=tokenbroker_test
  # The private cluster may be stopped and started by the fault tests (PostgreSQL restarted mid-refresh).
  export TOKENBROKER_TEST_PG_CONTROL="$PWD/scripts/pg.sh"
  scripts/pg.sh start >/dev/null
  trap 'scripts/pgbouncer.sh stop; scripts/patroni.sh stop; scripts/pg.sh stop' EXIT
  admin="$(PGDATABASE_NAME=postgres scripts/pg.sh url)"
  psql "$admin" -qc "DROP DATABASE IF EXISTS tokenbroker_test WITH (FORCE)" -c "CREATE DATABASE tokenbroker_test" >/dev/null
  DATABASE_URL="$(scripts/pg.sh url)"
  # The pooler suite runs replicas through PgBouncer in transaction mode (deploy/REPLICAS.md).
  TOKENBROKER_TEST_PGBOUNCER_URL="$(scripts/pgbouncer.sh start)"
  export TOKENBROKER_TEST_PGBOUNCER_URL
  # The failover suite runs replicas on a two-node Patroni cluster (synchronous replication
  # unless a test switches it) through a multi-host URL, and fails it over (scripts/patroni.sh).
  TOKENBROKER_TEST_PATRONI_URL="$(scripts/patroni.sh start sync)"
  psql "$(PGDATABASE_NAME=postgres scripts/patroni.sh url)" -qc "DROP DATABASE IF EXISTS tokenbroker_test WITH (FORCE)" \
    -c "CREATE DATABASE tokenbroker_test" >/dev/null
  export TOKENBROKER_TEST_PATRONI_URL TOKENBROKER_TEST_PATRONI_CONTROL="$PWD/scripts/patroni.sh"
fi
export DATABASE_URL
# glewlwyd 2.7.5 (Debian's), a real IdP for the DPoP-nonce and mutual-TLS suites (GlewlwydTests);
# stopped on exit, also when it fails to start midway.
trap 'scripts/glewlwyd.sh stop; if [ -z "${DATABASE_URL_GIVEN:-}" ]; then scripts/pgbouncer.sh stop; scripts/patroni.sh stop; scripts/pg.sh stop; fi' EXIT
TOKENBROKER_TEST_GLEWLWYD_URL="$(scripts/glewlwyd.sh start)"
TOKENBROKER_TEST_GLEWLWYD_DIR="$(scripts/glewlwyd.sh dir)"
export TOKENBROKER_TEST_GLEWLWYD_URL TOKENBROKER_TEST_GLEWLWYD_DIR
export TOKENBROKER_BIN_DIR="$(swift build --show-bin-path)"
export TOKENBROKER_TEST_LOGS="$logs"

status=0
# Package.swift declares exactly what each target imports.
python3 scripts/imports-check.py || status=1
swift test --skip-build --no-parallel 2>&1 | tee "$logs/swift-test.out" || status=$?
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# The OpenAPI file as a contract, checked by schemathesis against a live broker.
scripts/schemathesis.sh || status=1

# The worker clients (Python, Swift, and one generated from the OpenAPI file) against a live broker.
scripts/clients.sh || status=1

# The docs say what the code does: links and anchors, variables, CLI pages; each check shown failing.
python3 scripts/docs-check.py || status=1
python3 scripts/docs-check.py --self-test || status=1

# What a newcomer meets: configuration errors, a second make run, the README's walk-through.
(unset DATABASE_URL; scripts/newcomer-check.sh) || status=1

# The operators' kit: alert rules and their tests, manifests, /metrics, dashboard, runbooks.
scripts/ops-check.sh || status=1

# The whole run's logs and the database must not hold any secret the tests handled.
pg_dump --data-only --dbname "$DATABASE_URL" > "$logs/database.dump"
python3 scripts/scan-secrets.py "$logs" || status=1
# Every log line of the run is JSON with typed fields, and refresh failures were logged with their code.
python3 scripts/check-logs.py "$logs" || status=1
exit $status
