#!/usr/bin/env bash
# `make run`: installs what is missing, builds, starts the private PostgreSQL (unless
# DATABASE_URL is set or it already runs), migrates, starts the development IdP on
# DEV_IDP_LISTEN (127.0.0.1:9000) and the broker on TOKENBROKER_LISTEN (127.0.0.1:8080), writes
# .run/env (the walk-through's variables, and `tokenbroker` on PATH with this database) and
# prints how to try it. Ctrl-C stops everything it started, and nothing else: a cluster that
# was already running is left running.
# Exit 2 at once, before anything starts, when either port is taken (another `make run`?).
set -euo pipefail
cd "$(dirname "$0")/.."
listen="${TOKENBROKER_LISTEN:-127.0.0.1:8080}"
run="${MAKE_RUN_DIR:-.run}"   # keys, logs and env of this make run (the docs check uses its own)
idp_listen="${DEV_IDP_LISTEN:-127.0.0.1:9000}"

# A port something already answers on: bash connects to it (no tool needed).
taken() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
for v in TOKENBROKER_LISTEN DEV_IDP_LISTEN; do
  addr=$listen; [ "$v" = DEV_IDP_LISTEN ] && addr=$idp_listen
  if taken "$addr"; then
    echo "make run: $addr ($v) is already in use, by another make run or another program; nothing was started." >&2
    echo "  Move this one: TOKENBROKER_LISTEN=127.0.0.1:8081 DEV_IDP_LISTEN=127.0.0.1:9001 make run" >&2
    exit 2
  fi
done

scripts/deps.sh
swift build
bin="$(swift build --show-bin-path)"
mkdir -p "$run"; run=$(cd "$run" && pwd)

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${started_pg:-}" ]; then scripts/pg.sh stop; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${DATABASE_URL:-}" ]; then
  scripts/pg.sh status || started_pg=1
  DATABASE_URL="$(scripts/pg.sh start)"
fi
export DATABASE_URL
# A development sealing key, made once and kept under .run/ (never committed).
[ -f "$run/sealing.key" ] || { "$bin/tokenbroker" sealing-key generate > "$run/sealing.key"; chmod 600 "$run/sealing.key"; }
export TOKENBROKER_SEALING_KEY_FILE="$run/sealing.key"
export TOKENBROKER_LISTEN="$listen"
"$bin/tokenbroker" migrate

"$bin/dev-idp" --listen "$idp_listen" 2> "$run/dev-idp.log" & pids+=($!)
"$bin/tokenbroker" serve & pids+=($!)
ready=
for _ in $(seq 100); do
  kill -0 "${pids[1]}" 2>/dev/null || { echo "make run: the broker exited (see above)" >&2; exit 1; }
  curl -sf "http://$listen/readyz" >/dev/null && curl -sf "http://$idp_listen/.well-known/openid-configuration" >/dev/null && { ready=1; break; }
  sleep 0.1
done
[ -n "$ready" ] || { echo "make run: the broker or the development IdP did not become ready in 10 s" >&2; exit 1; }
# An operator key, kept while the database knows it (a new database gets a new one).
if ! { [ -f "$run/operator.key" ] && curl -sf "http://$listen/v1/apikeys" -H "Authorization: Bearer $(cat "$run/operator.key")" >/dev/null; }; then
  (umask 077; "$bin/tokenbroker" apikey create --role operator --name make-run --all-tenants > "$run/operator.key")
fi

# What another shell needs: `. .run/env`.
cat > "$run/env" <<ENV
# Written by make run: the walk-through's variables, and the CLI with this database.
export B=http://$listen I=http://$idp_listen OP=\$(cat "$run/operator.key")
export PATH="$bin:\$PATH" DATABASE_URL='$DATABASE_URL' TOKENBROKER_SEALING_KEY_FILE="$run/sealing.key" TOKENBROKER_URL=http://$listen
ENV

cat <<TXT

tokenbroker is running on http://$listen, the development IdP on http://$idp_listen.
In another shell, from this folder:

  . .run/env            # B, I, OP (an operator key), and \`tokenbroker\` on PATH with this database
  tokenbroker tenant list

then follow the README's walk-through ("Five minutes to a token").
Ctrl-C stops the broker and the IdP$( [ -n "${started_pg:-}" ] && echo " and the database" || echo " (the database was already running: it is left running)").
TXT
wait "${pids[1]}"
