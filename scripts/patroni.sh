#!/usr/bin/env bash
# A two-node Patroni cluster of PostgreSQL 15 with one etcd, for the failover suite of `make test`
# and `make bench`: loopback only, trust authentication, data under .run/patroni of the checkout
# (or a temporary folder when the unprivileged user postgres cannot reach the checkout, as with a
# clone owned by root). Timings are short so that a failover takes a few seconds: the leader key
# lives 10 s, Patroni loops every second, a crashed primary is failed over at once
# (primary_start_timeout 0), and a standby that lags however much may be promoted
# (maximum_lag_on_failover 1 GiB: with the default 1 MiB a standby whose WAL shipping was frozen
# is never promoted).
#   scripts/patroni.sh start [sync|async] -> starts (or finds running) etcd and both nodes, waits for a
#                                leader and a streaming standby, creates database $PGDATABASE_NAME
#                                (default tokenbroker), prints its multi-host DATABASE_URL
#   scripts/patroni.sh stop      -> stops the nodes, PostgreSQL and etcd; the data is kept
#   scripts/patroni.sh destroy   -> stop, and delete the data (the next start bootstraps anew)
#   scripts/patroni.sh url       -> postgresql://postgres@127.0.0.1:A,127.0.0.1:B/db?target_session_attrs=read-write…
#   scripts/patroni.sh status    -> exit 0 when etcd and both nodes run; prints the members
#   scripts/patroni.sh primary   -> the port of the PostgreSQL that accepts writes now
#   scripts/patroni.sh standby   -> the port of the other one
#   scripts/patroni.sh mode sync|async -> synchronous_mode on or off (waits for a synchronous standby when on)
#   scripts/patroni.sh wait      -> waits (60 s at most) for a leader and a streaming standby
#   scripts/patroni.sh kill-primary   -> SIGKILL of the primary's postmaster; prints its port
#   scripts/patroni.sh freeze-wal     -> SIGSTOP of the primary's walsender processes (commits go on, WAL stops reaching the standby)
#   scripts/patroni.sh thaw-wal       -> SIGCONT of every stopped walsender
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pgbin=/usr/lib/postgresql/15/bin
[ -x "$pgbin/postgres" ] || { echo "patroni.sh: PostgreSQL 15 not found (scripts/deps.sh test installs it)" >&2; exit 1; }
command -v patroni >/dev/null && command -v etcd >/dev/null \
  || { echo "patroni.sh: patroni or etcd not found (scripts/deps.sh test installs them)" >&2; exit 1; }

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

hash=$(printf '%s' "$root" | sha256sum | cut -c1-12)
base="$root/.run/patroni"
if [ "$(id -u)" -eq 0 ]; then
  mkdir -p "$root/.run"
  if ! runuser -u postgres -- test -x "$root/.run" 2>/dev/null; then base="${TMPDIR:-/tmp}/tokenbroker-patroni-$hash"; fi
fi
# Ports from the checkout's path, so that two checkouts on one machine do not meet:
# PostgreSQL p0 p0+1, Patroni's REST API p0+2 p0+3, etcd p0+4 (clients) p0+5 (peers).
p0=$((21000 + 10 * (16#${hash:0:4} % 1000)))
pg_port() { echo $((p0 + $1)); }
api_port() { echo $((p0 + 2 + $1)); }
etcd_client=$((p0 + 4)); etcd_peer=$((p0 + 5))
db="${PGDATABASE_NAME:-tokenbroker}"
url="postgresql://postgres@127.0.0.1:$(pg_port 0),127.0.0.1:$(pg_port 1)/$db?target_session_attrs=read-write&connect_timeout=2"
scope="tokenbroker-$hash"

q() {   # q PORT SQL: one value from the node on PORT, empty when it does not answer
  psql "postgresql://postgres@127.0.0.1:$1/postgres?connect_timeout=1" -Atqc "$2" 2>/dev/null || true
}
primary() { for n in 0 1; do [ "$(q "$(pg_port $n)" 'SELECT pg_is_in_recovery()')" = f ] && { pg_port $n; return 0; }; done; return 1; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_config() {   # node_config N MODE
  local n=$1 sync=false
  [ "$2" = sync ] && sync=true
  cat <<YAML
scope: $scope
namespace: /tokenbroker/
name: node$n
log: {level: WARNING, traceback_level: ERROR}
restapi:
  listen: 127.0.0.1:$(api_port "$n")
  connect_address: 127.0.0.1:$(api_port "$n")
etcd3:
  hosts: 127.0.0.1:$etcd_client
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1073741824
    primary_start_timeout: 0
    synchronous_mode: $sync
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 400
        shared_buffers: 128MB
        fsync: "off"
        wal_log_hints: "on"
        wal_keep_size: 256MB
        max_wal_senders: 10
        max_replication_slots: 10
        hot_standby: "on"
  initdb: [{encoding: UTF8}, {locale: C.UTF-8}]
postgresql:
  listen: 127.0.0.1:$(pg_port "$n")
  connect_address: 127.0.0.1:$(pg_port "$n")
  data_dir: $base/node$n/data
  bin_dir: $pgbin
  pgpass: $base/node$n/pgpass
  authentication:
    superuser: {username: postgres, password: postgres}
    replication: {username: postgres, password: postgres}
    rewind: {username: postgres, password: postgres}
  parameters:
    unix_socket_directories: $base/node$n
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
watchdog: {mode: "off"}
tags: {nofailover: false, noloadbalance: false, clonefrom: false, nosync: false}
YAML
}

# Waits (bounded) for a leader and a standby streaming from it on the leader's timeline (a
# synchronous one in sync mode: Patroni fails over to nobody else).
wait_healthy() {
  local deadline=$((SECONDS + ${1:-60})) p sync
  while [ $SECONDS -lt $deadline ]; do
    if p=$(primary); then
      sync=false; [ "$(mode_now)" = sync ] && sync=true
      # In async mode no commit waits for the standby any more (Patroni cleared synchronous_standby_names).
      if [ "$(q "$p" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'$($sync && echo " AND sync_state = 'sync'" || echo " AND current_setting('synchronous_standby_names') = ''")")" = 1 ] \
         && curl -fsS "http://127.0.0.1:$(api_port 0)/cluster" 2>/dev/null | python3 -c '
import json, sys
m = json.load(sys.stdin)["members"]
leader = [x for x in m if x["role"] == "leader"]
standby = [x for x in m if x["role"] == ("sync_standby" if sys.argv[1] == "true" else "replica") or (sys.argv[1] == "false" and x["role"] == "sync_standby")]
ok = len(leader) == 1 and len(standby) == 1 and all(x["state"] == "running" for x in m) and standby[0].get("timeline") == leader[0].get("timeline")
sys.exit(0 if ok else 1)' "$sync"; then
        return 0
      fi
    fi
    sleep 0.2
  done
  echo "patroni.sh: no leader with a streaming standby within ${1:-60} s; logs in $base" >&2
  for f in "$base"/node*.log; do tail -n 15 "$f" >&2; done
  return 1
}

mode_now() {
  local m
  m=$(curl -fsS "http://127.0.0.1:$(api_port 0)/config" 2>/dev/null || curl -fsS "http://127.0.0.1:$(api_port 1)/config" 2>/dev/null || true)
  case "$m" in *'"synchronous_mode": true'*) echo sync ;; *) echo async ;; esac
}

stop_all() {
  "$0" thaw-wal
  for n in 0 1; do alive "$base/node$n.pid" && kill "$(cat "$base/node$n.pid")" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    alive "$base/node0.pid" || alive "$base/node1.pid" || break
    sleep 0.1
  done
  for n in 0 1; do
    alive "$base/node$n.pid" && kill -9 "$(cat "$base/node$n.pid")" 2>/dev/null || true
    # A postmaster Patroni left behind (Patroni killed, or its own stop timed out).
    if [ -f "$base/node$n/data/postmaster.pid" ]; then
      as_pg "$pgbin/pg_ctl" -D "$base/node$n/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
    fi
  done
  alive "$base/etcd.pid" && kill "$(cat "$base/etcd.pid")" 2>/dev/null || true
  for _ in $(seq 1 50); do alive "$base/etcd.pid" || break; sleep 0.1; done
  rm -f "$base"/*.pid
}

case "${1:-}" in
start)
  mode=${2:-sync}
  [ "$mode" = sync ] || [ "$mode" = async ] || { echo "patroni.sh: start sync|async" >&2; exit 2; }
  mkdir -p "$base"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$base"
  if ! alive "$base/etcd.pid"; then
    as_pg bash -c "exec setsid etcd --name tb --data-dir '$base/etcd' \
      --listen-client-urls http://127.0.0.1:$etcd_client --advertise-client-urls http://127.0.0.1:$etcd_client \
      --listen-peer-urls http://127.0.0.1:$etcd_peer --initial-advertise-peer-urls http://127.0.0.1:$etcd_peer \
      --initial-cluster tb=http://127.0.0.1:$etcd_peer --heartbeat-interval 100 --election-timeout 1000 \
      </dev/null >'$base/etcd.log' 2>&1 & echo \$! >'$base/etcd.pid'"
    for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$etcd_client/health" 2>/dev/null | grep -q true && break; sleep 0.1; done
    curl -fsS "http://127.0.0.1:$etcd_client/health" 2>/dev/null | grep -q true || { tail -n 20 "$base/etcd.log" >&2; exit 1; }
  fi
  for n in 0 1; do
    alive "$base/node$n.pid" && continue
    as_pg mkdir -p "$base/node$n"
    node_config "$n" "$mode" | as_pg tee "$base/node$n.yml" >/dev/null
    as_pg bash -c "exec setsid patroni '$base/node$n.yml' </dev/null >>'$base/node$n.log' 2>&1 & echo \$! >'$base/node$n.pid'"
    # node0 bootstraps alone, so that it is the first leader; node1 then clones it.
    if [ "$n" = 0 ]; then
      for _ in $(seq 1 300); do primary >/dev/null && break; sleep 0.2; done
      primary >/dev/null || { tail -n 20 "$base/node0.log" >&2; exit 1; }
    fi
  done
  [ "$(mode_now)" = "$mode" ] || "$0" mode "$mode" >/dev/null
  wait_healthy 60
  p=$(primary)
  [ "$(q "$p" "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ] || q "$p" "CREATE DATABASE \"$db\"" >/dev/null
  echo "$url"
  ;;
stop) stop_all ;;
destroy)
  stop_all
  as_pg rm -rf "$base/node0" "$base/node1" "$base/etcd"
  rm -f "$base"/*.log "$base"/*.yml
  ;;
url) echo "$url" ;;
status)
  alive "$base/etcd.pid" && alive "$base/node0.pid" && alive "$base/node1.pid" || exit 1
  patronictl -c "$base/node0.yml" list 2>/dev/null || true
  ;;
primary) primary ;;
standby) p=$(primary) && { [ "$p" = "$(pg_port 0)" ] && pg_port 1 || pg_port 0; } ;;
mode)
  case "${2:-}" in sync) v=true ;; async) v=false ;; *) echo "patroni.sh: mode sync|async" >&2; exit 2 ;; esac
  curl -fsS -XPATCH -d "{\"synchronous_mode\": $v}" "http://127.0.0.1:$(api_port 0)/config" >/dev/null 2>&1 \
    || curl -fsS -XPATCH -d "{\"synchronous_mode\": $v}" "http://127.0.0.1:$(api_port 1)/config" >/dev/null
  wait_healthy 30
  ;;
wait) wait_healthy "${2:-60}" ;;
kill-primary)
  p=$(primary) || { echo "patroni.sh: no primary" >&2; exit 1; }
  n=$((p - p0))
  kill -9 "$(head -n 1 "$base/node$n/data/postmaster.pid")"
  echo "$p"
  ;;
freeze-wal)
  p=$(primary) || { echo "patroni.sh: no primary" >&2; exit 1; }
  pids=$(q "$p" "SELECT pid FROM pg_stat_replication")
  [ -n "$pids" ] || { echo "patroni.sh: the primary has no walsender" >&2; exit 1; }
  for pid in $pids; do kill -STOP "$pid"; echo "$pid" >>"$base/frozen"; done
  ;;
thaw-wal)
  if [ -f "$base/frozen" ]; then
    while read -r pid; do kill -CONT "$pid" 2>/dev/null || true; done <"$base/frozen"
    rm -f "$base/frozen"
  fi
  ;;
*) echo "usage: scripts/patroni.sh start [sync|async]|stop|destroy|url|status|primary|standby|mode sync|async|wait|kill-primary|freeze-wal|thaw-wal" >&2; exit 2 ;;
esac
