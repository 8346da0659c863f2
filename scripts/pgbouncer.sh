#!/usr/bin/env bash
# PgBouncer (Debian's) in transaction pooling mode in front of the private PostgreSQL of
# scripts/pg.sh, for the pooler suite of `make test`: unix socket only, trust auth, every
# database name passed through.
#   scripts/pgbouncer.sh start   -> prints the URL of $PGDATABASE_NAME (default tokenbroker) through the pooler
#   scripts/pgbouncer.sh stop
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(command -v pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null || true)
[ -n "$bin" ] || { echo "pgbouncer.sh: pgbouncer not found (scripts/deps.sh installs it)" >&2; exit 1; }

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pgurl=$("$root/scripts/pg.sh" url)
pgsock=${pgurl##*host=}
base="$(dirname "$pgsock")/pgbouncer"
port=6432
db="${PGDATABASE_NAME:-tokenbroker}"

case "${1:-}" in
start)
  as_pg mkdir -p "$base"
  if [ -f "$base/pgbouncer.pid" ] && kill -0 "$(cat "$base/pgbouncer.pid")" 2>/dev/null; then
    echo "postgresql://postgres@/$db?host=$base&port=$port"; exit 0
  fi
  as_pg tee "$base/users.txt" >/dev/null <<<'"postgres" ""'
  as_pg tee "$base/pgbouncer.ini" >/dev/null <<INI
[databases]
* = host=$pgsock
[pgbouncer]
listen_addr =
listen_port = $port
unix_socket_dir = $base
auth_type = trust
auth_file = $base/users.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 60
server_reset_query =
ignore_startup_parameters = extra_float_digits
logfile = $base/pgbouncer.log
pidfile = $base/pgbouncer.pid
INI
  as_pg "$bin" -d -q "$base/pgbouncer.ini"
  for _ in $(seq 1 50); do
    [ -S "$base/.s.PGSQL.$port" ] && break
    sleep 0.1
  done
  [ -S "$base/.s.PGSQL.$port" ] || { tail -n 20 "$base/pgbouncer.log" >&2; exit 1; }
  echo "postgresql://postgres@/$db?host=$base&port=$port"
  ;;
stop)
  if [ -f "$base/pgbouncer.pid" ]; then kill "$(cat "$base/pgbouncer.pid")" 2>/dev/null || true; fi
  ;;
*) echo "usage: scripts/pgbouncer.sh start|stop" >&2; exit 2 ;;
esac
