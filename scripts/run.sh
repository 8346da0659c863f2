#!/usr/bin/env bash
# `make run`: installs what is missing, builds, starts the private PostgreSQL (unless
# DATABASE_URL is set), migrates, starts the development IdP on 127.0.0.1:9000 and the broker
# on 127.0.0.1:8080, and prints how to try it with curl. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
swift build
bin="$(swift build --show-bin-path)"
mkdir -p .run

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${started_pg:-}" ] && scripts/pg.sh stop
}
trap cleanup EXIT INT TERM

if [ -z "${DATABASE_URL:-}" ]; then
  DATABASE_URL="$(scripts/pg.sh start)"; started_pg=1
fi
export DATABASE_URL
# A development sealing key, made once and kept under .run/ (never committed).
[ -f .run/sealing.key ] || { "$bin/tokenbroker" sealing-key generate > .run/sealing.key; chmod 600 .run/sealing.key; }
export TOKENBROKER_SEALING_KEY_FILE="$PWD/.run/sealing.key"
export TOKENBROKER_LISTEN="${TOKENBROKER_LISTEN:-127.0.0.1:8080}"
"$bin/tokenbroker" migrate

"$bin/dev-idp" --listen 127.0.0.1:9000 2> .run/dev-idp.log & pids+=($!)
[ -f .run/operator.key ] || { "$bin/tokenbroker" apikey create --role operator --name make-run --all-tenants > .run/operator.key; chmod 600 .run/operator.key; }
"$bin/tokenbroker" serve & pids+=($!)
for _ in $(seq 50); do curl -sf "http://$TOKENBROKER_LISTEN/healthz" >/dev/null && break; sleep 0.1; done

cat <<TXT

tokenbroker is running on http://$TOKENBROKER_LISTEN, the development IdP on http://127.0.0.1:9000.
An operator key is in .run/operator.key. Try (the README walks through the same steps):

  B=http://$TOKENBROKER_LISTEN; I=http://127.0.0.1:9000; OP=\$(cat .run/operator.key)
  curl -s -XPUT \$B/v1/tenants/acme -H "Authorization: Bearer \$OP" -d '{"name":"Acme"}'
  curl -s -XPOST \$I/admin/clients -d '{"client_id":"acme-app","client_secret":"dev-secret","redirect_uris":["http://127.0.0.1:8080/v1/callback"]}'
  curl -s -XPUT \$B/v1/tenants/acme/clients/app -H "Authorization: Bearer \$OP" \\
    -d '{"issuer":"http://127.0.0.1:9000","client_id":"acme-app","auth_method":"client_secret_basic","client_secret":"dev-secret","redirect_uri":"http://127.0.0.1:8080/v1/callback","scopes":["openid","offline_access"]}'
  KEY=\$(curl -s -XPOST \$B/v1/apikeys -H "Authorization: Bearer \$OP" -d '{"name":"acme","roles":["admin","worker","enrol"],"tenants":["acme"]}' | sed -E 's/.*"key":"([^"]+)".*/\1/')
  URL=\$(curl -s -XPOST \$B/v1/tenants/acme/logins -H "Authorization: Bearer \$KEY" -d '{"client":"app","login_hint":"alice"}' | sed -E 's/.*"authorization_url":"([^"]+)".*/\1/')
  SID=\$(curl -s -L "\$URL" | sed -E 's/.*"session_id":"([^"]+)".*/\1/')     # the browser's part: IdP, then the callback
  curl -s -XPOST \$B/v1/tenants/acme/sessions/\$SID/token -H "Authorization: Bearer \$KEY" -d '{"min_ttl":60}'

Ctrl-C stops the broker, the IdP and the database.
TXT
wait "${pids[1]}"
