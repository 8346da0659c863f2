# Sourced by scripts/try-oauth2-servers.sh (uses its api, check, note, j, free_port, login helpers).
# glewlwyd from Debian (apt-get install glewlwyd), sqlite database under $W, its legacy OAuth2
# plugin ("oauth2-glewlwyd": not OpenID; JWT access and refresh tokens, reusable refresh tokens
# with a rolling expiry, RFC 7009 revocation, GET <prefix>/profile as "who am I"), configured
# through its admin API; the user signs in through its login API (POST /api/auth/, then the grant,
# then the authorization URL again with g_continue, as its login page does).
if ! command -v glewlwyd >/dev/null; then
  echo "installing glewlwyd" >&2
  export DEBIAN_FRONTEND=noninteractive
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends glewlwyd >/dev/null
fi
GW=$W/glewlwyd; mkdir -p "$GW"
GPORT=$(free_port); GLW=http://127.0.0.1:$GPORT; GL=$GLW/api; GP=$GL/glwd
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(open('/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3').read()); c.commit()" "$GW/glewlwyd.db"
sed -e "s/^port=.*/port=$GPORT/" -e "s|^external_url=.*|external_url=\"$GLW\"|" -e 's/^log_mode=.*/log_mode="console"/' \
    -e 's/^log_level=.*/log_level="DEBUG"/' \
    -e "s|@include \"/etc/glewlwyd/glewlwyd-db.conf\"|database = { type = \"sqlite3\"; path = \"$GW/glewlwyd.db\"; };|" \
    /etc/glewlwyd/glewlwyd.conf > "$GW/glewlwyd.conf"
glew_start() {
  glewlwyd --config-file="$GW/glewlwyd.conf" >> "$GW/glewlwyd.log" 2>&1 & gpid=$!; pids+=($gpid)
  for _ in $(seq 100); do curl -s -o /dev/null "$GL/auth/scheme/" && break; sleep 0.1; done
}
glew_start
GVERSION=$(dpkg-query -W -f='${Version}' glewlwyd)
echo "== glewlwyd $GVERSION (Debian), legacy OAuth2 plugin, $GL"
ga() { curl -s -b "$GW/admin.jar" -c "$GW/admin.jar" -X "$1" "$GL$2" -H 'Content-Type: application/json' ${3:+-d "$3"} -o /dev/null -w '%{http_code}'; }
curl -s -c "$GW/admin.jar" -XPOST "$GL/auth/" -H 'Content-Type: application/json' -d '{"username":"admin","password":"password"}' -o /dev/null
check "glewlwyd: admin signs in (Debian's default admin/password)" 200 "$(ga GET /user/admin)"
check "glewlwyd: scope 'read'" 200 "$(ga POST /scope '{"name":"read","display_name":"read","description":"read","password_required":true,"password_max_age":0,"scheme":{}}')"
check "glewlwyd: legacy OAuth2 plugin instance 'glwd'" 200 "$(ga POST /mod/plugin '{"module":"oauth2-glewlwyd","name":"glwd","display_name":"legacy OAuth2",
  "parameters":{"jwt-type":"sha","jwt-key-size":"256","key":"'"$(head -c 24 /dev/urandom | base64)"'","access-token-duration":120,
  "refresh-token-duration":1209600,"code-duration":600,"refresh-token-rolling":true,"auth-type-code-enabled":true,
  "auth-type-code-revoke-replayed":true,"auth-type-refresh-enabled":true,"auth-type-implicit-enabled":false,
  "auth-type-password-enabled":false,"auth-type-client-enabled":false,"pkce-allowed":true,"pkce-method-plain-allowed":false,
  "introspection-revocation-allowed":true,"introspection-revocation-allow-target-client":true,"introspection-revocation-auth-scope":[]}}')"
check "glewlwyd: user alice" 200 "$(ga POST /user '{"username":"alice","name":"Alice","password":"alice-password","enabled":true,"scope":["read","g_profile"]}')"
for c in basic post; do
  check "glewlwyd: client broker-$c" 200 "$(ga POST /client '{"client_id":"broker-'$c'","name":"broker","confidential":true,"client_secret":"glew-secret-'$c'",
    "redirect_uri":["'"$CB"'"],"authorization_type":["code","refresh_token"],"scope":["read"],"enabled":true}')"
done
# The server's own record of a user's refresh tokens: per token, the access tokens it gave and whether it is enabled.
glew_tokens() { python3 -c "
import sqlite3,sys; c=sqlite3.connect(sys.argv[1])
rows=c.execute('select r.gpgr_id, r.gpgr_client_id, r.gpgr_enabled, (select count(*) from gpg_access_token a where a.gpgr_id=r.gpgr_id) from gpg_refresh_token r order by r.gpgr_id').fetchall()
print(' '.join('rt%d/%s:%s:%d-access-tokens'%(i,cl,'enabled' if e else 'disabled',n) for i,cl,e,n in rows))" "$GW/glewlwyd.db"; }
glew_rt() { python3 -c "
import sqlite3,sys; c=sqlite3.connect(sys.argv[1])
r=c.execute('select r.gpgr_enabled, (select count(*) from gpg_access_token a where a.gpgr_id=r.gpgr_id) from gpg_refresh_token r order by r.gpgr_id desc limit 1').fetchone()
print('%s %d'%('enabled' if r[0] else 'disabled', r[1]))" "$GW/glewlwyd.db"; }

# glew_login TENANT CLIENT GLEW_CLIENT_ID -> session id. The browser's part: the authorization URL
# sends it to login.html?callback_url=…; the user signs in (login API) and grants the scope to the
# client, and the login page's "continue" is the callback_url with g_continue.
glew_login() {
  local r url loc cbu cb
  r=$(api POST "/v1/tenants/$1/logins" "{\"client\":\"$2\",\"login_hint\":\"alice\"}")
  url=$(body "$r" | j 'd["authorization_url"]' 2>/dev/null) || { echo "login start failed: $r" >&2; echo none; return; }
  echo "$url" > "$W/last-authorization-url"
  rm -f "$GW/alice.jar"
  loc=$(curl -s -o /dev/null -w '%{redirect_url}' "$url")
  curl -s -c "$GW/alice.jar" -XPOST "$GL/auth/" -H 'Content-Type: application/json' -d '{"username":"alice","password":"alice-password"}' -o /dev/null
  curl -s -b "$GW/alice.jar" -XPUT "$GL/auth/grant/$3" -H 'Content-Type: application/json' -d '{"scope":"read"}' -o /dev/null
  cbu=$(python3 -c 'import sys,urllib.parse as u; print(u.parse_qs(u.urlparse(sys.argv[1]).query)["callback_url"][0])' "$loc" 2>/dev/null) \
    || { echo "no login redirect: $loc" >&2; echo none; return; }
  cb=$(curl -s -b "$GW/alice.jar" -o /dev/null -w '%{redirect_url}' "$cbu&g_continue")
  echo "$cb" > "$W/last-callback-url"
  curl -s "$cb" > "$W/last-callback"
  j 'd["session_id"]' < "$W/last-callback" 2>/dev/null || { echo "callback: $(cat "$W/last-callback")" >&2; echo none; }
}

GT=try-glewlwyd-$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')
curl -sf -XPUT "$B/v1/tenants/$GT" -H "Authorization: Bearer $OP" -d '{"name":"try glewlwyd"}' >/dev/null
glew_client() {  # glew_client NAME AUTH_METHOD SECRET [GRANT]
  local g=${4:-reusable} m=basic; [ "$2" = client_secret_post ] && m=post
  api PUT "/v1/tenants/$GT/clients/$1" '{"protocol":"oauth2","client_id":"broker-'$m'","client_secret":"'"$3"'",
    "auth_method":"'"$2"'","redirect_uri":"'"$CB"'","scopes":["read"],
    "descriptor":{"endpoints":{"authorization":"'"$GP"'/auth","token":"'"$GP"'/token","revocation":"'"$GP"'/revoke"},
      "grant":{"refresh_token":"'"$g"'"},"subject":{"from":"userinfo","url":"'"$GP"'/profile","pointer":"/username"},
      "token_response":{"keep":{"issued_at":"/iat"}},"revocation":{"client_auth":"basic"}}}'
}
# glewlwyd's legacy plugin publishes no RFC 8414 metadata: a registration by issuer alone
r=$(api PUT "/v1/tenants/$GT/clients/byissuer" '{"protocol":"oauth2","issuer":"'"$GP"'","client_id":"broker-basic",
  "client_secret":"glew-secret-basic","auth_method":"client_secret_basic","redirect_uri":"'"$CB"'","scopes":["read"],
  "descriptor":{"subject":{"from":"userinfo","url":"'"$GP"'/profile","pointer":"/username"}}}')
note "register by issuer $GP (no metadata there): $(echo "$r" | head -c 400)"
if [ "$(status "$r")" = 201 ] || [ "$(status "$r")" = 200 ]; then
  r=$(api POST "/v1/tenants/$GT/logins" '{"client":"byissuer"}'); note "login start with it: $(echo "$r" | head -c 400)"
fi
r=$(glew_client basic client_secret_basic glew-secret-basic)
check "glewlwyd: register (descriptor endpoints, client_secret_basic, reusable)" yes "$(case $(status "$r") in 200|201) echo yes;; *) echo "$r";; esac)"

sid=$(glew_login "$GT" basic broker-basic)
check "glewlwyd/basic: login gives a session" yes "$([ "$sid" != none ] && echo yes || echo no)"
if [ "$sid" != none ]; then
  note "callback answer: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({k:d[k] for k in ("subject","issuer","scope","state","metadata","access_expires_at")})' "$W/last-callback")"
  r=$(curl -s -w ' %{http_code}' "$(cat "$W/last-callback-url")")
  check "glewlwyd/basic: replayed callback refused" yes "$([ "${r: -3}" -ge 400 ] && echo yes || echo no)"
  check "glewlwyd/basic: the refresh token survived the replayed callback (code never re-presented)" enabled "$(glew_rt | cut -d' ' -f1)"
  r=$(token "$GT" "$sid"); check "glewlwyd/basic: token" 200 "$(status "$r")"
  note "token answer: $(body "$r" | j '{k:v for k,v in d.items() if k!="access_token"}')"
  at=$(body "$r" | j 'd["access_token"]' 2>/dev/null || echo none)
  check "glewlwyd/basic: the token works at /profile" 200 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $at" "$GP/profile")"
  check "glewlwyd/basic: subject from /profile /username" alice "$(body "$r" | j 'd.get("subject")')"
  check "glewlwyd/basic: token_response.keep iat handed out as metadata" yes "$(body "$r" | j '"yes" if (d.get("metadata") or {}).get("issued_at") else d.get("metadata")')"
  n=0; for i in $(seq 5); do r=$(token "$GT" "$sid" '{"force_refresh":true}'); [ "$(status "$r")" = 200 ] && n=$((n+1)) || note "refresh $i: $r"; done
  check "glewlwyd/basic: 5 forced refreshes" 5 $n
  check "glewlwyd/basic: at the server, one refresh token, 6 access tokens from it" "enabled 6" "$(glew_rt)"
  for i in $(seq 8); do (token "$GT" "$sid" '{"force_refresh":true}' > "$W/gconc.$i") & done; wait_jobs
  note "8 concurrent forced refreshes: $(for i in $(seq 8); do cut -d' ' -f1 "$W/gconc.$i"; done | sort | uniq -c | tr -s ' \n' ' '), server: $(glew_rt)"

  # wrong client secret: glewlwyd answers a refresh with a bad client secret HTTP 400 with no body
  glew_client basic client_secret_basic WRONG >/dev/null
  for i in $(seq 4); do (token "$GT" "$sid" '{"force_refresh":true}' > "$W/gbad.$i") & done; wait_jobs
  codes=$(for i in $(seq 4); do echo "$(cut -d' ' -f1 "$W/gbad.$i")/$(body "$(cat "$W/gbad.$i")" | j 'd.get("error")' 2>/dev/null)"; done | sort | uniq -c | tr -s ' \n' ' ')
  note "wrong secret, 4 concurrent forced refreshes: $codes; one answer: $(head -c 300 "$W/gbad.1")"
  check "glewlwyd/basic: wrong secret -> every caller 502 idp_client_rejected" "4 502/idp_client_rejected" "$(echo $codes)"
  r=$(api GET "/v1/tenants/$GT/sessions/$sid")
  note "session after the wrong secret: $(body "$r" | j '{k:d[k] for k in ("state","reason","backoff_until","failure_count","last_error")}')"
  check "glewlwyd/basic: wrong secret -> session still active" active "$(body "$r" | j 'd.get("state")')"
  check "glewlwyd/basic: wrong secret -> refresh token still enabled at the server" enabled "$(glew_rt | cut -d' ' -f1)"
  glew_client basic client_secret_basic glew-secret-basic >/dev/null
  sleep 2; r=$(token "$GT" "$sid" '{"force_refresh":true}')
  [ "$(status "$r")" = 200 ] || { note "secret fixed: $(echo "$r" | head -c 300)"; sleep 5; r=$(token "$GT" "$sid" '{"force_refresh":true}'); }
  check "glewlwyd/basic: secret fixed -> refresh works" 200 "$(status "$r")"
  if [ "$(body "$(api GET "/v1/tenants/$GT/sessions/$sid")" | j 'd.get("state")')" != active ]; then
    note "the session ended on the wrong secret: signing in again for the next checks"
    sid=$(glew_login "$GT" basic broker-basic)
  fi

  # glewlwyd down during a refresh
  kill "$gpid"; wait "$gpid" 2>/dev/null || true
  r=$(token "$GT" "$sid" '{"force_refresh":true}'); check "glewlwyd/basic: server down -> 503" 503 "$(status "$r")"
  glew_start; sleep 1
  r=$(token "$GT" "$sid" '{"force_refresh":true}')
  [ "$(status "$r")" = 200 ] || { note "server back: $(echo "$r" | head -c 300)"; sleep 3; r=$(token "$GT" "$sid" '{"force_refresh":true}'); }
  check "glewlwyd/basic: server back -> refresh works" 200 "$(status "$r")"

  # revocation
  at=$(body "$(token "$GT" "$sid")" | j 'd["access_token"]' 2>/dev/null || echo none)
  r=$(api DELETE "/v1/tenants/$GT/sessions/$sid"); note "DELETE session: $(body "$r" | j '{k:d[k] for k in ("state","idp_revocation")}')"
  # glewlwyd 2.7.5's legacy plugin answered every /revoke tried here 401 with no body (client in
  # HTTP Basic, client in the form, even admin credentials), revocation allowed for the target
  # client: the broker then keeps the revocation pending and retries it (revocation_unconfirmed).
  check "glewlwyd/basic: revoke -> idp_revocation confirmed" confirmed "$(body "$r" | j 'd.get("idp_revocation")')"
  check "glewlwyd/basic: the refresh token is disabled at the server" disabled "$(glew_rt | cut -d' ' -f1)"
  check "glewlwyd/basic: the access token is refused at /profile" 401 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $at" "$GP/profile")"
fi

# client_secret_post: glewlwyd's legacy plugin reads client credentials from HTTP Basic only
r=$(glew_client post client_secret_post glew-secret-post)
check "glewlwyd: register (client_secret_post)" yes "$(case $(status "$r") in 200|201) echo yes;; *) echo "$r";; esac)"
sid=$(glew_login "$GT" post broker-post)
note "client_secret_post login: $(head -c 400 "$W/last-callback")"
if [ "$sid" != none ]; then
  r=$(token "$GT" "$sid" '{"force_refresh":true}'); note "client_secret_post forced refresh: $(echo "$r" | head -c 300)"
fi

# the default descriptor (rotating) against glewlwyd's reusable tokens: an answer without a new refresh token
r=$(glew_client rot client_secret_basic glew-secret-basic rotating)
sid=$(glew_login "$GT" rot broker-basic)
if [ "$sid" != none ]; then
  n=0; for i in $(seq 3); do r=$(token "$GT" "$sid" '{"force_refresh":true}'); [ "$(status "$r")" = 200 ] && n=$((n+1)) || note "refresh $i: $r"; done
  check "glewlwyd/rot (descriptor says rotating, server reuses): 3 forced refreshes" 3 $n
  note "server: $(glew_rt)"
fi
echo "   glewlwyd's refresh tokens: $(glew_tokens)"
kill "$gpid" 2>/dev/null || true
