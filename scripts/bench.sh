#!/usr/bin/env bash
# `make bench`: release build, private PostgreSQL with a fresh bench database, then
# bench/bench.py (wrk against the broker and against nginx in the same run; the failover
# benchmark on a two-node Patroni cluster, scripts/patroni.sh), then bench/plot.py
# (docs/pictures/bench-*.svg from bench/results.json). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh bench
# `scripts/bench.sh migrations` needs only its tool (and PostgreSQL), not the broker.
if [ "${1:-}" = migrations ]; then swift build -c release --product migration-locks; else swift build -c release; fi
if [ -z "${DATABASE_URL:-}" ]; then
  export PGDATABASE_NAME=tokenbroker_bench
  scripts/pg.sh start >/dev/null
  trap 'scripts/pg.sh stop' EXIT
  psql "$(PGDATABASE_NAME=postgres scripts/pg.sh url)" -qc "DROP DATABASE IF EXISTS tokenbroker_bench WITH (FORCE)" -c "CREATE DATABASE tokenbroker_bench" >/dev/null
  DATABASE_URL="$(scripts/pg.sh url)"
  # The failover benchmark runs on a two-node Patroni cluster of its own (scripts/patroni.sh).
  if [ "${1:-}" = "" ] || [ "${1:-}" = failover ]; then
    trap 'scripts/patroni.sh stop; scripts/pg.sh stop' EXIT
    TOKENBROKER_BENCH_PATRONI_URL="$(scripts/patroni.sh start sync)"
    psql "$(PGDATABASE_NAME=postgres scripts/patroni.sh url)" -qc "DROP DATABASE IF EXISTS tokenbroker_bench WITH (FORCE)" \
      -c "CREATE DATABASE tokenbroker_bench" >/dev/null
    export TOKENBROKER_BENCH_PATRONI_URL
  fi
fi
export DATABASE_URL
python3 bench/bench.py "$@"
# The figures as pictures (docs/pictures/bench-*.svg), with matplotlib from PyPI in a venv of its own.
if [ "${1:-}" != migrations ]; then
  [ -x .run/venv-plot/bin/python ] || { python3 -m venv .run/venv-plot && .run/venv-plot/bin/pip install -q "matplotlib==3.9.2"; }
  .run/venv-plot/bin/python bench/plot.py
fi
