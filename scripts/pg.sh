#!/usr/bin/env bash
# The private PostgreSQL cluster of `make run` and `make test`: initdb into .run/pg under the
# checkout (or a temporary folder when the checkout is not reachable by the unprivileged user),
# unix socket only, trust auth for the local socket, no system service.
#   scripts/pg.sh start   -> prints the DATABASE_URL of database "tokenbroker" (created if missing)
#   scripts/pg.sh stop
#   scripts/pg.sh url
#   scripts/pg.sh status  -> exit 0 when this checkout's cluster is running
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$pgbin" ] || { echo "pg.sh: PostgreSQL server binaries not found (scripts/deps.sh installs them)" >&2; exit 1; }

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

base="$root/.run/pg"
if [ "$(id -u)" -eq 0 ]; then
  mkdir -p "$root/.run"
  if ! runuser -u postgres -- test -x "$root/.run" 2>/dev/null; then
    base="${TMPDIR:-/tmp}/tokenbroker-pg-$(printf '%s' "$root" | sha256sum | cut -c1-12)"
  fi
fi
data="$base/data"; sock="$base/sock"; db="${PGDATABASE_NAME:-tokenbroker}"
url="postgresql://postgres@/$db?host=$sock"

case "${1:-}" in
start)
  mkdir -p "$base"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$base"
  as_pg mkdir -p "$sock"
  if [ ! -f "$data/PG_VERSION" ]; then
    as_pg "$pgbin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$base/initdb.log" 2>&1 \
      || { cat "$base/initdb.log" >&2; exit 1; }
  fi
  if ! as_pg "$pgbin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    as_pg "$pgbin/pg_ctl" -D "$data" -l "$base/server.log" -w -t 60 start \
      -o "-c listen_addresses='' -c unix_socket_directories='$sock' -c max_connections=400 -c shared_buffers=256MB -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_preload_libraries=pg_stat_statements" >/dev/null \
      || { tail -n 20 "$base/server.log" >&2; exit 1; }
  fi
  if ! psql "postgresql://postgres@/postgres?host=$sock" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
    psql "postgresql://postgres@/postgres?host=$sock" -qc "CREATE DATABASE \"$db\"" >/dev/null
  fi
  echo "$url"
  ;;
stop)
  if [ -f "$data/PG_VERSION" ]; then as_pg "$pgbin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true; fi
  ;;
url) echo "$url" ;;
status) [ -f "$data/PG_VERSION" ] && as_pg "$pgbin/pg_ctl" -D "$data" status >/dev/null 2>&1 ;;
*) echo "usage: scripts/pg.sh start|stop|url|status" >&2; exit 2 ;;
esac
