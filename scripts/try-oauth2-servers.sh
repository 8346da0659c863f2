#!/usr/bin/env bash
# Tries the broker's plain OAuth 2.0 registrations ("protocol": "oauth2") against real OAuth 2.0
# servers nobody on the project wrote, running on this machine, as a new user would: curl only.
#   1. Authlib (PyPI), scripts/try/authlib_as.py: rotating and reusable refresh tokens, RFC 8414
#      metadata at the path-insertion location, RFC 7009 revocation, GET /api/me.
#   2. glewlwyd (Debian), scripts/try/glewlwyd.sh: its OAuth2 plugin (legacy, non-OpenID).
# Installs what it needs (Debian packages, a venv under .run/), builds, starts its own private
# PostgreSQL unless DATABASE_URL is set, and removes everything it started and wrote when it ends
# (KEEP=1 keeps .run/try-oauth2 with the logs and the servers' state). Not part of `make test`.
# Usage: scripts/try-oauth2-servers.sh [authlib] [glewlwyd]    (default: both)
# Prints PASS/FAIL per check and the servers' own counts; exit status 1 when a check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
which_servers="${*:-authlib glewlwyd}"
W=$root/.run/try-oauth2
rm -rf "$W"; mkdir -p "$W"

# ---- what it needs ----
scripts/deps.sh build
case " $which_servers " in *" authlib "*)
  python3 -m venv "$W/venv" && "$W/venv/bin/pip" install -q 'authlib>=1.3' flask ;;
esac
PY=$W/venv/bin/python
if [ -z "${TOKENBROKER_BIN_DIR:-}" ]; then swift build >&2; TOKENBROKER_BIN_DIR=$(swift build --show-bin-path); fi
TB=$TOKENBROKER_BIN_DIR/tokenbroker

pids=(); started_pg=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$started_pg" ] && scripts/pg.sh stop >/dev/null 2>&1 || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$W"
}
trap cleanup EXIT INT TERM
if [ -z "${DATABASE_URL:-}" ]; then DATABASE_URL=$(scripts/pg.sh start); started_pg=1; fi
export DATABASE_URL
"$TB" migrate >/dev/null 2>&1

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
j() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }   # j 'd["a"]' < json
fails=0; passes=0
check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then passes=$((passes+1)); echo "PASS $1"; else fails=$((fails+1)); echo "FAIL $1: expected '$2', got '$3'"; fi
}
note() { echo "     $*"; }

BP=$(free_port); B=http://127.0.0.1:$BP
export TOKENBROKER_SEALING_KEYS="k1:$(head -c 32 /dev/urandom | base64)" TOKENBROKER_LISTEN=127.0.0.1:$BP TOKENBROKER_ACCESS_LOG=true
"$TB" serve 2> "$W/broker.log" & pids+=($!)
for _ in $(seq 100); do curl -sf "$B/healthz" >/dev/null && break; sleep 0.1; done
OP=$("$TB" apikey create --role operator --name try-oauth2 --all-tenants 2>/dev/null)
KEY=$(curl -sf -XPOST "$B/v1/apikeys" -H "Authorization: Bearer $OP" \
  -d '{"name":"try-oauth2","roles":["worker","admin","enrol","operator"],"tenants":["*"]}' | j 'd["key"]')
CB=$B/v1/callback

# api METHOD PATH [BODY] -> prints "STATUS BODY" (the answer's headers in $W/last-headers.$$)
api() {
  local f out; f=$(mktemp "$W/body.XXXXXX")
  out=$(curl -s -o "$f" -D "$f.h" -w '%{http_code}' -X "$1" "$B$2" -H "Authorization: Bearer $KEY" ${3:+-d "$3"})
  echo "$out $(cat "$f")"; mv "$f.h" "$W/last-headers.$BASHPID" 2>/dev/null; rm -f "$f"
}
retry_after() { grep -i '^retry-after:' "$W"/last-headers.* 2>/dev/null | tail -1 | tr -d '\r' | awk '{print $2}'; }
status() { echo "${1%% *}"; }
body() { echo "${1#* }"; }

# login TENANT CLIENT USER -> the session id; the browser's part done with curl: the authorization
# URL (auto-approved at the server) redirects to the broker's callback, whose answer names the session.
login() {
  local r url cb
  r=$(api POST "/v1/tenants/$1/logins" "{\"client\":\"$2\",\"login_hint\":\"$3\"}")
  url=$(body "$r" | j 'd["authorization_url"]')
  echo "$url" > "$W/last-authorization-url"
  cb=$(curl -s -o /dev/null -w '%{redirect_url}' -b "$W/cookies" -c "$W/cookies" "$url")
  echo "$cb" > "$W/last-callback-url"
  curl -s "$cb" > "$W/last-callback"
  j 'd["session_id"]' < "$W/last-callback" 2>/dev/null || { echo "login failed: $(cat "$W/last-callback")" >&2; echo none; }
}
token() { api POST "/v1/tenants/$1/sessions/$2/token" "${3:-{\}}"; }

# ======================================================================================
authlib_round() {  # authlib_round MODE (rotating|reusable)
  local mode=$1 AP AS ISS T=try-authlib-$1-$(head -c 3 /dev/urandom | od -An -tx1 | tr -d " \n") r s sid at at2 st
  AP=$(free_port); AS=http://127.0.0.1:$AP; ISS=$AS/tenant1
  local asp
  as_start() {  # the server, with its state file: a restart keeps its grants
    "$PY" "$root/scripts/try/authlib_as.py" --port "$AP" --state "$W/authlib-$mode.json" --refresh "$mode" --expires-in 120 \
      --client "meta-basic:secret-basic:client_secret_basic:$CB" --client "desc-post:secret-post:client_secret_post:$CB" \
      --client "short-basic:secret-short:client_secret_basic:$CB" --short-client short-basic \
      2>> "$W/authlib-$mode.log" & asp=$!; pids+=($asp)
    for _ in $(seq 100); do curl -sf "$AS/admin/stats" >/dev/null && break; sleep 0.1; done
  }
  as_start
  stat() { curl -s "$AS/admin/stats" | j "d.get('$1', 0)"; }
  echo "== Authlib $($PY -c 'import authlib; print(authlib.__version__)'), refresh tokens $mode, issuer $ISS"
  curl -sf -XPUT "$B/v1/tenants/$T" -H "Authorization: Bearer $OP" -d '{"name":"try"}' >/dev/null

  local grant='{"refresh_token":"'$mode'"}'
  # (a) issuer with a path, endpoints from RFC 8414 metadata; client_secret_basic
  r=$(api PUT "/v1/tenants/$T/clients/meta" '{"protocol":"oauth2","issuer":"'"$ISS"'","client_id":"meta-basic",
    "client_secret":"secret-basic","auth_method":"client_secret_basic","redirect_uri":"'"$CB"'","scopes":["read","write"],
    "descriptor":{"grant":'"$grant"',"subject":{"from":"userinfo","url":"'"$ISS"'/api/me","pointer":"/id"},
                  "token_response":{"keep":{"region":"/region","granted":"/scope"}}},
    "upstream":{"base_url":"'"$ISS"'/api","allow_private_addresses":true}}')
  check "authlib-$mode: register (issuer + RFC 8414 metadata, client_secret_basic)" 201 "$(status "$r")"
  [ "$(status "$r")" = 201 ] || note "$r"
  # (b) explicit endpoints in the descriptor, no metadata; client_secret_post; subject as the login
  r=$(api PUT "/v1/tenants/$T/clients/desc" '{"protocol":"oauth2","client_id":"desc-post",
    "client_secret":"secret-post","auth_method":"client_secret_post","redirect_uri":"'"$CB"'","scopes":["read"],
    "descriptor":{"endpoints":{"authorization":"'"$ISS"'/authorize","token":"'"$ISS"'/token","revocation":"'"$ISS"'/revoke"},
                  "grant":'"$grant"',"subject":{"from":"userinfo","url":"'"$ISS"'/api/me","pointer":"/login"},"revocation":{"client_auth":"form"}}}')
  check "authlib-$mode: register (descriptor endpoints, client_secret_post)" 201 "$(status "$r")"
  [ "$(status "$r")" = 201 ] || note "$r"

  # docs/provider-descriptors.md: subject.from defaults to "userinfo" for oauth2
  r=$(api PUT "/v1/tenants/$T/clients/nofrom" '{"protocol":"oauth2","issuer":"'"$ISS"'","client_id":"meta-basic",
    "client_secret":"secret-basic","auth_method":"client_secret_basic","redirect_uri":"'"$CB"'","scopes":["read"],
    "descriptor":{"subject":{"url":"'"$ISS"'/api/me","pointer":"/id"}}}')
  check "authlib-$mode: register with subject.url and .pointer, no subject.from (documented default: userinfo)" 201 "$(status "$r")"
  [ "$(status "$r")" = 201 ] || note "$r"

  for c in meta desc; do
    sid=$(login "$T" "$c" alice)
    local url; url=$(cat "$W/last-authorization-url")
    check "authlib-$mode/$c: login gives a session" yes "$([ "$sid" != none ] && echo yes || echo no)"
    [ "$sid" != none ] || { note "authorization URL: $url"; note "callback: $(cat "$W/last-callback")"; continue; }
    check "authlib-$mode/$c: authorization URL has PKCE S256, no openid, no nonce" "yes" \
      "$(echo "$url" | grep -q 'code_challenge_method=S256' && ! echo "$url" | grep -Eq 'openid|nonce=' && echo yes || echo no)"
    note "authorization URL: $(echo "$url" | sed -E 's/(code_challenge|state)=[^&]*/\1=…/g')"
    note "callback answer: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({k:d[k] for k in d if "token" not in k})' "$W/last-callback")"
    # replaying the callback (same code, same state) must not reach the server
    local before; before=$(stat code_replayed)
    r=$(curl -s -w ' %{http_code}' "$(cat "$W/last-callback-url")")
    note "callback replayed: ${r: -3} ${r:0:200}"
    check "authlib-$mode/$c: replayed callback refused" yes "$([ "${r: -3}" -ge 400 ] && echo yes || echo no)"
    check "authlib-$mode/$c: replayed code never presented to the server" "$before" "$(stat code_replayed)"

    r=$(token "$T" "$sid"); s=$(status "$r")
    check "authlib-$mode/$c: token" 200 "$s"
    note "token answer: $(body "$r" | j '{k:v for k,v in d.items() if k!="access_token"}')"
    at=$(body "$r" | j 'd["access_token"]' 2>/dev/null || echo none)
    check "authlib-$mode/$c: the token works at /api/me" 200 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $at" "$ISS/api/me")"
    r=$(api GET "/v1/tenants/$T/sessions/$sid")
    local want_sub=42; [ "$c" = desc ] && want_sub=alice
    check "authlib-$mode/$c: session subject from /api/me" "$want_sub" "$(body "$r" | j 'd.get("subject")')"
    note "session: $(body "$r" | j '{k:d[k] for k in ("subject","issuer","state","refresh_mode","grant_expires_at","expires_at") if k in d}')"
    if [ "$c" = meta ]; then
      r=$(token "$T" "$sid")
      check "authlib-$mode/$c: token_response.keep (region, granted) handed out as metadata" "eu-west-1 read write" \
        "$(body "$r" | j 'str(d.get("metadata",{}).get("region"))+" "+str(d.get("metadata",{}).get("granted"))')"
    fi

    # forced refreshes, one after another
    local ok0 n=5 i new=0 prev=$at
    ok0=$(stat refresh_ok)
    for i in $(seq $n); do
      r=$(token "$T" "$sid" '{"force_refresh":true}')
      at2=$(body "$r" | j 'd.get("access_token")' 2>/dev/null || echo "")
      [ "$(status "$r")" = 200 ] && [ "$at2" != "$prev" ] && new=$((new+1)); prev=$at2
      [ "$(status "$r")" = 200 ] || note "forced refresh $i: $r"
    done
    check "authlib-$mode/$c: $n forced refreshes, each a new token" $n $new
    check "authlib-$mode/$c: server counted $n refreshes" $((ok0+n)) "$(stat refresh_ok)"
    check "authlib-$mode/$c: the old access token is dead at the server" 401 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $at" "$ISS/api/me")"
    check "authlib-$mode/$c: the newest token works" 200 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $prev" "$ISS/api/me")"

    # 8 concurrent forced refreshes of one session: single flight
    ok0=$(stat refresh_ok)
    for i in $(seq 8); do (token "$T" "$sid" '{"force_refresh":true}' > "$W/conc.$i") & done; wait_jobs
    note "8 concurrent forced refreshes: statuses $(for i in $(seq 8); do cut -d' ' -f1 "$W/conc.$i"; done | sort | uniq -c | tr -s ' \n' ' '), server refreshes +$(( $(stat refresh_ok) - ok0 ))"
    check "authlib-$mode/$c: no refresh token presented twice" 0 "$(stat refresh_reuse)"

    if [ "$c" = meta ]; then
      # The outbound proxy: the session's calls to the server's own protected resource, the
      # token never leaving the broker; the server revokes the token (RFC 7009), its resource
      # then answers 401 invalid_token (Authlib's ResourceProtector, RFC 6750 §3.1), and 6
      # concurrent proxied calls cause one refresh at the server, each retried once.
      local PK pr cur
      PK=$(curl -sf -XPOST "$B/v1/apikeys" -H "Authorization: Bearer $OP" -d '{"name":"try-proxy","roles":["proxy"],"tenants":["'"$T"'"]}' | j 'd["key"]')
      pr=$(curl -s -w ' %{http_code}' -H "Authorization: Bearer $PK" "$B/v1/tenants/$T/proxy/sessions/$sid/me")
      check "authlib-$mode/$c: proxied GET /api/me" "200 alice" "${pr: -3} $(echo "${pr% *}" | j 'd.get("login")' 2>/dev/null)"
      check "authlib-$mode/$c: the proxy-only key gets no token" 403 "$(curl -s -o /dev/null -w '%{http_code}' -XPOST -H "Authorization: Bearer $PK" "$B/v1/tenants/$T/sessions/$sid/token")"
      cur=$(body "$(token "$T" "$sid")" | j 'd["access_token"]')
      curl -s -o /dev/null -u meta-basic:secret-basic -d "token=$cur&token_type_hint=access_token" "$ISS/revoke"
      check "authlib-$mode/$c: the server refuses the revoked token" 401 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $cur" "$ISS/api/me")"
      note "the server's challenge: $(curl -s -D - -o /dev/null -H "Authorization: Bearer $cur" "$ISS/api/me" | grep -i '^www-authenticate' | tr -d '\r')"
      ok0=$(stat refresh_ok)
      for i in $(seq 6); do (curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PK" "$B/v1/tenants/$T/proxy/sessions/$sid/me" > "$W/px.$i") & done; wait_jobs
      check "authlib-$mode/$c: 6 concurrent proxied calls after the revocation all 200" "6" "$(cat "$W"/px.* | grep -o 200 | wc -l | tr -d ' ')"
      check "authlib-$mode/$c: one refresh at the server for them" $((ok0+1)) "$(stat refresh_ok)"
      check "authlib-$mode/$c: still no refresh token presented twice" 0 "$(stat refresh_reuse)"
    fi
  done
  echo "${sid:-none}" > "$W/authlib-$mode.sid"   # the desc session, for the failure modes

  # ---- failure modes, on the metadata client ----
  sid=$(login "$T" meta alice)
  # wrong client secret: every caller 502 idp_client_rejected, the session kept, its refresh token unspent
  api PUT "/v1/tenants/$T/clients/meta" '{"protocol":"oauth2","issuer":"'"$ISS"'","client_id":"meta-basic",
    "client_secret":"WRONG","auth_method":"client_secret_basic","redirect_uri":"'"$CB"'","scopes":["read","write"],
    "descriptor":{"grant":'"$grant"',"subject":{"from":"userinfo","url":"'"$ISS"'/api/me","pointer":"/id"},
                  "token_response":{"keep":{"region":"/region","granted":"/scope"}}}}' >/dev/null
  local refused0; refused0=$(stat client_secret_refused)
  for i in $(seq 4); do (token "$T" "$sid" '{"force_refresh":true}' > "$W/bad.$i") & done; wait_jobs
  local codes; codes=$(for i in $(seq 4); do echo "$(cut -d' ' -f1 "$W/bad.$i")/$(body "$(cat "$W/bad.$i")" | j 'd.get("error")' 2>/dev/null)"; done | sort | uniq -c | tr -s ' \n' ' ')
  note "wrong secret, 4 concurrent forced refreshes: $codes; first answer: $(head -c 300 "$W/bad.1")"
  check "authlib-$mode: wrong secret -> every caller 502 idp_client_rejected" "4 502/idp_client_rejected" "$(echo $codes)"
  note "server refused the client $(( $(stat client_secret_refused) - refused0 )) time(s)"
  r=$(api GET "/v1/tenants/$T/sessions/$sid")
  check "authlib-$mode: wrong secret -> session still active" active "$(body "$r" | j 'd.get("state")')"
  # put the right secret back
  api PUT "/v1/tenants/$T/clients/meta" '{"protocol":"oauth2","issuer":"'"$ISS"'","client_id":"meta-basic",
    "client_secret":"secret-basic","auth_method":"client_secret_basic","redirect_uri":"'"$CB"'","scopes":["read","write"],
    "descriptor":{"grant":'"$grant"',"subject":{"from":"userinfo","url":"'"$ISS"'/api/me","pointer":"/id"},
                  "token_response":{"keep":{"region":"/region","granted":"/scope"}}}}' >/dev/null
  local ok1; ok1=$(stat refresh_ok)
  rm -f "$W"/last-headers.*; r=$(token "$T" "$sid" '{"force_refresh":true}')
  note "secret fixed, forced refresh: $(status "$r") $(body "$r" | head -c 200 | sed 's/"access_token":"[^"]*"/"access_token":"…"/') Retry-After: $(retry_after); server refreshes +$(( $(stat refresh_ok) - ok1 ))"
  note "session then: $(body "$(api GET "/v1/tenants/$T/sessions/$sid")" | j '{k:d[k] for k in ("state","backoff_until","failure_count","last_error")}')"
  if [ "$(status "$r")" != 200 ]; then
    local ra; ra=$(retry_after)
    sleep "$(( ${ra:-1} + 1 ))"; r=$(token "$T" "$sid" '{"force_refresh":true}')
    note "after Retry-After: $(status "$r")"
  fi
  check "authlib-$mode: secret fixed -> refresh works again" 200 "$(status "$r")"
  check "authlib-$mode: still no reuse at the server" 0 "$(stat refresh_reuse)"

  # the server down during a refresh, then back with its state
  kill "$asp"; wait "$asp" 2>/dev/null || true
  r=$(token "$T" "$sid" '{"force_refresh":true}')
  note "server down, forced refresh: $(echo "$r" | head -c 300)"
  check "authlib-$mode: server down -> 503" 503 "$(status "$r")"
  r=$(token "$T" "$sid")
  note "server down, plain token request (token still valid): $(status "$r")"
  check "authlib-$mode: server down -> the valid token is still handed out" 200 "$(status "$r")"
  as_start
  r=$(token "$T" "$sid" '{"force_refresh":true}')
  if [ "$(status "$r")" != 200 ]; then note "server back, first forced refresh: $(echo "$r" | head -c 300)"; sleep 3; r=$(token "$T" "$sid" '{"force_refresh":true}'); fi
  check "authlib-$mode: server back -> refresh works" 200 "$(status "$r")"
  check "authlib-$mode: still no reuse at the server" 0 "$(stat refresh_reuse)"

  # revocation: the broker revokes at the server (RFC 7009)
  at=$(body "$(token "$T" "$sid")" | j 'd["access_token"]' 2>/dev/null || echo none)
  local rv0; rv0=$(stat revoked_refresh)
  r=$(api DELETE "/v1/tenants/$T/sessions/$sid")
  note "DELETE session: $r"
  check "authlib-$mode: revoke -> idp_revocation confirmed" confirmed "$(body "$r" | j 'd.get("idp_revocation")')"
  check "authlib-$mode: server saw the refresh token revoked" $((rv0+1)) "$(stat revoked_refresh)"
  check "authlib-$mode: the access token is dead at the server" 401 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $at" "$ISS/api/me")"
  r=$(token "$T" "$sid"); check "authlib-$mode: token after revoke -> 409" 409 "$(status "$r")"
  # and the descriptor client (revocation with client_secret_post in the form)
  sid=$(cat "$W/authlib-$mode.sid")
  if [ "$sid" != none ]; then
    rv0=$(stat revoked_refresh)
    r=$(api DELETE "/v1/tenants/$T/sessions/$sid")
    check "authlib-$mode/desc: revoke -> confirmed, seen by the server" "confirmed $((rv0+1))" "$(body "$r" | j 'd.get("idp_revocation")') $(stat revoked_refresh)"
  fi

  # a grant revoked at the server (an admin there): the next refresh ends the session
  sid=$(login "$T" meta bob)
  curl -s -XPOST "$AS/admin/revoke-user/bob" >/dev/null
  r=$(token "$T" "$sid" '{"force_refresh":true}')
  note "grant revoked at the server, forced refresh: $(echo "$r" | head -c 300)"
  r=$(api GET "/v1/tenants/$T/sessions/$sid")
  check "authlib-$mode: grant revoked at the server -> needs_reauth" needs_reauth "$(body "$r" | j 'd.get("state")')"

  # the server dies after refreshing (the old refresh token rotated, the new one stored) and
  # before answering: the answer is lost. The old refresh token must never be presented again.
  sid=$(login "$T" meta alice)
  local replaced; replaced=$(body "$(token "$T" "$sid")" | j 'd["access_token"]' 2>/dev/null || echo none)
  curl -s -XPOST "$AS/admin/die-after-next-refresh" >/dev/null
  r=$(token "$T" "$sid" '{"force_refresh":true}')
  note "answer lost (server died after refreshing): $(echo "$r" | head -c 300 | sed 's/"access_token":"[^"]*"/"access_token":"…"/')"
  at=$(body "$r" | j 'd["access_token"]' 2>/dev/null || echo none)
  if [ "$at" != none ]; then
    check "authlib-$mode: lost answer -> a forced refresh does not answer the token it was asked to replace" yes "$([ "$at" != "$replaced" ] && echo yes || echo no)"
  fi
  wait "$asp" 2>/dev/null || true
  as_start
  [ "$at" = none ] || note "the token that forced refresh answered, at the restarted server's /api/me: $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $at" "$ISS/api/me")"
  note "session then: $(body "$(api GET "/v1/tenants/$T/sessions/$sid")" | j '{k:d[k] for k in ("state","reason","failure_count","last_error","backoff_until")}')"
  r=$(token "$T" "$sid" '{"force_refresh":true}')
  [ "$(status "$r")" = 200 ] || { sleep 3; r=$(token "$T" "$sid" '{"force_refresh":true}'); }
  note "after the restart, forced refresh: $(echo "$r" | head -c 300 | sed 's/"access_token":"[^"]*"/"access_token":"…"/')"
  note "session then: $(body "$(api GET "/v1/tenants/$T/sessions/$sid")" | j '{k:d[k] for k in ("state","reason","failure_count","last_error")}')"
  check "authlib-$mode: lost answer -> no refresh token presented after rotation" 0 "$(stat refresh_reuse)"
  if [ "$mode" = reusable ]; then
    check "authlib-$mode: lost answer -> the reusable token simply refreshes again" 200 "$(status "$r")"
  fi

  if [ "$mode" = rotating ]; then
    # proactive refreshes by the broker's timers: access tokens of 20 s, watched for 45 s
    api PUT "/v1/tenants/$T/clients/short" '{"protocol":"oauth2","issuer":"'"$ISS"'","client_id":"short-basic",
      "client_secret":"secret-short","auth_method":"client_secret_basic","redirect_uri":"'"$CB"'","scopes":["read"],
      "descriptor":{"subject":{"from":"userinfo","url":"'"$ISS"'/api/me","pointer":"/id"}}}' >/dev/null
    sid=$(login "$T" short alice)
    sleep 45
    local proactive; proactive=$(curl -s "$AS/admin/events" | python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin) if e["kind"]=="refresh_ok" and e.get("client")=="short-basic"))')
    note "proactive refreshes of a 20 s token in 45 s: $proactive; session: $(body "$(api GET "/v1/tenants/$T/sessions/$sid")" | j '{k:d[k] for k in ("state","refresh_mode","next_refresh_at","version")}')"
    check "authlib-$mode: the timers refreshed the 20 s token ahead of expiry (at least twice in 45 s)" yes "$([ "$proactive" -ge 2 ] && echo yes || echo no)"
    check "authlib-$mode: still no reuse at the server" 0 "$(stat refresh_reuse)"
  fi

  echo "   server's counts ($mode): $(curl -s "$AS/admin/stats")"
  kill "$asp" 2>/dev/null || true
}
wait_jobs() { for p in $(jobs -pr); do case " ${pids[*]} " in *" $p "*) ;; *) wait "$p" 2>/dev/null || true ;; esac; done; }

case " $which_servers " in *" authlib "*) authlib_round rotating; authlib_round reusable ;; esac
case " $which_servers " in *" glewlwyd "*) source "$root/scripts/try/glewlwyd.sh" ;; esac

echo "== $passes passed, $fails failed (broker log: $W/broker.log${KEEP:+, kept})"
[ "$fails" -eq 0 ]
