#!/usr/bin/env bash
# What a newcomer meets, checked (run by `make test`; about a minute, every wait bounded):
# configuration errors name their variable and exit 2; `migrate` twice prints no NOTICE; a
# `make run` serves; a second one beside it exits 2 at once naming the port variables and
# leaves the first serving; the README's walk-through ("Five minutes to a token") runs as a
# script against the first and succeeds; a busy port stops `serve` naming TOKENBROKER_LISTEN;
# stopping the first `make run` (SIGTERM: a background job ignores SIGINT) leaves running the PostgreSQL cluster it did not start.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(swift build --show-bin-path)"
work=$(mktemp -d); first=
fail() { echo "newcomer-check: FAIL: $*" >&2; exit 1; }
finish() { [ -n "$first" ] && kill -TERM "$first" 2>/dev/null && wait "$first" 2>/dev/null; rm -rf "$work"; }
trap finish EXIT

# 1. Configuration errors: status 2, the variable named.
expect2() {  # expect2 WORD command...: exit 2, stderr names WORD
  local rc=0; "${@:2}" >/dev/null 2>"$work/err" || rc=$?
  [ "$rc" = 2 ] && grep -q -- "$1" "$work/err" || fail "$* -> exit $rc: $(cat "$work/err")"
}
expect2 DATABASE_URL env DATABASE_URL='not a url' "$bin/tokenbroker" tenant list
expect2 DATABASE_URL env DATABASE_URL='mysql://db/x' "$bin/tokenbroker" migrate
expect2 TOKENBROKER_LISTEN env DATABASE_URL=postgresql:///x TOKENBROKER_LISTEN=nowhere "$bin/tokenbroker" routes
expect2 --all env TOKENBROKER_API_KEY=k "$bin/tokenbroker" signout --tenant acme
# Captured first: `grep -q` leaving early would kill the writer with SIGPIPE, and pipefail report it.
help=$("$bin/tokenbroker" serve --help) && grep -q TOKENBROKER_SEALING_KEY_FILE <<<"$help" || fail "serve --help lists no variables"
version=$("$bin/tokenbroker" --version) && grep -qE '^tokenbroker [0-9]+\.[0-9]+\.[0-9]+$' <<<"$version" || fail "--version"
echo "newcomer-check: configuration errors name their variable, exit 2"

# 2. A make run, on free ports, with its own folder; the cluster's state before it is kept.
export PGDATABASE_NAME=tokenbroker_walk
unset DATABASE_URL
pg_before=stopped; scripts/pg.sh status && pg_before=running
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export TOKENBROKER_LISTEN=127.0.0.1:$(free) DEV_IDP_LISTEN=127.0.0.1:$(free) MAKE_RUN_DIR="$work/run"
scripts/run.sh >"$work/first.out" 2>&1 & first=$!
for _ in $(seq 1800); do [ -f "$work/run/env" ] && break; kill -0 $first 2>/dev/null || fail "make run exited: $(tail -5 "$work/first.out")"; sleep 0.1; done
[ -f "$work/run/env" ] || fail "make run not ready in 180 s"
(. "$work/run/env"; tokenbroker migrate 2>&1) > "$work/migrate.out" || fail "migrate: $(cat "$work/migrate.out")"
! grep -qi notice "$work/migrate.out" || fail "migrate printed notices: $(head -2 "$work/migrate.out")"
echo "newcomer-check: make run serves on $TOKENBROKER_LISTEN; migrate again prints nothing"

# 3. A second make run beside it: exit 2 within seconds, naming the variables; the first serves on.
rc=0; timeout 30 scripts/run.sh >/dev/null 2>"$work/second.err" || rc=$?
[ "$rc" = 2 ] && grep -q TOKENBROKER_LISTEN "$work/second.err" && grep -q DEV_IDP_LISTEN "$work/second.err" \
  || fail "second make run -> exit $rc: $(cat "$work/second.err")"
curl -sf "http://$TOKENBROKER_LISTEN/readyz" >/dev/null || fail "the first make run stopped serving"
echo "newcomer-check: a second make run exits 2: $(head -1 "$work/second.err")"

# 4. The README's walk-through, as a script (its .run/env is this make run's).
sed -n '/<!-- walk:begin -->/,/<!-- walk:end -->/p' README.md | sed '1,2d;$d' | sed '$d' \
  | sed "s#^\. \.run/env#. '$work/run/env'#" > "$work/walk.sh"
start=$(date +%s.%N)
timeout 120 bash -euo pipefail "$work/walk.sh" > "$work/walk.out" 2>&1 || fail "the README's walk-through: $(tail -15 "$work/walk.out")"
grep -q '"state":"revoked"' "$work/walk.out" || fail "the walk-through ended without a revoked session: $(tail -3 "$work/walk.out")"
printf 'newcomer-check: the README walk-through ran in %.1f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"

# 5. serve on the taken port: exit 2 naming TOKENBROKER_LISTEN.
(. "$work/run/env"; expect2 TOKENBROKER_LISTEN "$bin/tokenbroker" serve)

# 6. Stopping the first make run leaves the cluster as it found it.
kill -TERM $first; wait $first 2>/dev/null || true; first=
if [ "$pg_before" = running ]; then scripts/pg.sh status || fail "make run stopped a cluster it did not start"; fi
echo "newcomer-check: ok"
