#!/usr/bin/env bash
# glewlwyd 2.7.5 (Debian's package) for the integration tests of `make test`: two servers, each
# with its own sqlite database under .run/glewlwyd, configured through glewlwyd's admin API
# (admin/password, Debian's default) with a user alice (password alice-password) and an OpenID
# Connect plugin instance `oidc` (ES256 ID tokens, introspection and revocation allowed):
#   plain  HTTP; DPoP allowed with nonces mandatory (one nonce per client, a new one every
#          $NONCE_COUNTER accepted proofs) and pushed authorization requests required.
#   tls    HTTPS (server certificate of pki/server-ca.pem) asking for client certificates of
#          pki/client-ca.pem and the self-signed pki/self-{1,2,3}.pem; RFC 8705: tls_client_auth, self_signed_tls_client_auth, the
#          certificate from TLS, the mtls_endpoint_aliases (/mtls/token, …).
# The tests register their clients themselves (their redirect URI is the broker's).
#   scripts/glewlwyd.sh start   -> prints the plain server's base URL (http://127.0.0.1:PORT)
#   scripts/glewlwyd.sh url     -> the same, of a running one
#   scripts/glewlwyd.sh dir     -> the state folder: pki/, plain.log, tls.log, tls.url
#   scripts/glewlwyd.sh stop
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.run/glewlwyd"
NONCE_COUNTER=${GLEWLWYD_NONCE_COUNTER:-3}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# admin NAME METHOD PATH [JSON]: one call of the admin API, signed in with a cookie; fails on non-200.
admin() {
  local jar="$dir/$1.admin.jar" base; base=$(cat "$dir/$1.url")
  local code; code=$(curl -s -k -m 10 -b "$jar" -c "$jar" -X "$2" "$base/api$3" -H 'Content-Type: application/json' ${4:+-d "$4"} \
    -o "$dir/$1.admin.out" -w '%{http_code}')
  [ "$code" = 200 ] || { echo "glewlwyd.sh: $1: $2 $3 -> $code $(head -c 400 "$dir/$1.admin.out")" >&2; return 1; }
}

pem_json() { python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$1"; }

pki() {
  local p="$dir/pki"; mkdir -p "$p"
  o() { openssl "$@" 2>/dev/null; }
  for ca in server-ca client-ca; do
    o req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3 -keyout "$p/$ca.key" -out "$p/$ca.pem" -subj "/CN=$ca"
  done
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$p/server.ext"
  o req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$p/server.key" -out "$p/server.csr" -subj "/CN=127.0.0.1"
  o x509 -req -in "$p/server.csr" -CA "$p/server-ca.pem" -CAkey "$p/server-ca.key" -CAcreateserial -days 3 -extfile "$p/server.ext" -out "$p/server.pem"
  # Self-signed client certificates (self_signed_tls_client_auth): glewlwyd's TLS layer (ulfius)
  # verifies a client certificate against secure_connection_ca_file and passes on none that
  # fails ("Error gnutls_certificate_verify_peers2" in its log), so they are in that file too.
  for s in self-1 self-2 self-3; do
    o req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3 -keyout "$p/$s.key" -out "$p/$s.pem" -subj "/CN=$s" \
      -addext extendedKeyUsage=clientAuth
  done
  cat "$p/client-ca.pem" "$p/self-1.pem" "$p/self-2.pem" "$p/self-3.pem" > "$p/client-trust.pem"
  # The ID token signing key (ES256).
  o genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$p/signing.key"
  o pkey -in "$p/signing.key" -pubout -out "$p/signing.pub"
}

# instance NAME SCHEME: a config file and a fresh database; starts it and waits for it.
instance() {
  local name=$1 scheme=$2 port; port=$(free_port)
  local db="$dir/$name.db"
  rm -f "$db"
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(open('/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3').read()); c.commit()" "$db"
  # Debian's client backend keeps only the client properties its data-format lists: add the
  # subject DN of tls_client_auth (RFC 8705 §2.1.2) and the plugin's "DPoP required" property.
  python3 -c "
import json,sqlite3,sys; c=sqlite3.connect(sys.argv[1])
p=json.loads(c.execute(\"select gcmi_parameters from g_client_module_instance where gcmi_name='database'\").fetchone()[0])
for k in ('tls_client_auth_subject_dn','dpop_required'): p['data-format'][k]={'multiple':False,'read':True,'write':True}
c.execute(\"update g_client_module_instance set gcmi_parameters=? where gcmi_name='database'\",(json.dumps(p),)); c.commit()" "$db"
  echo "$scheme://127.0.0.1:$port" > "$dir/$name.url"
  sed -e "s/^port=.*/port=$port/" -e "s|^external_url=.*|external_url=\"$scheme://127.0.0.1:$port\"|" \
      -e 's/^log_mode=.*/log_mode="console"/' -e 's/^log_level=.*/log_level="DEBUG"/' \
      -e "s|@include \"/etc/glewlwyd/glewlwyd-db.conf\"|database = { type = \"sqlite3\"; path = \"$db\"; };|" \
      -e "s|^secure_connection_key_file=.*|secure_connection_key_file=\"$dir/pki/server.key\"|" \
      -e "s|^secure_connection_pem_file=.*|secure_connection_pem_file=\"$dir/pki/server.pem\"|" \
      -e "s|^secure_connection_ca_file=.*|secure_connection_ca_file=\"$dir/pki/client-trust.pem\"|" \
      -e "s|^use_secure_connection=.*|use_secure_connection=$([ "$scheme" = https ] && echo true || echo false)|" \
      /etc/glewlwyd/glewlwyd.conf > "$dir/$name.conf"
  echo 'bind_address="127.0.0.1"' >> "$dir/$name.conf"   # loopback only
  : > "$dir/$name.log"
  setsid glewlwyd --config-file="$dir/$name.conf" >> "$dir/$name.log" 2>&1 < /dev/null &
  echo $! > "$dir/$name.pid"
  for _ in $(seq 100); do curl -s -k -m 2 -o /dev/null "$scheme://127.0.0.1:$port/api/auth/scheme/" && break; sleep 0.1; done
  curl -s -k -m 5 -o /dev/null "$scheme://127.0.0.1:$port/api/auth/scheme/" || { tail -n 20 "$dir/$name.log" >&2; exit 1; }
  local signed; signed=$(curl -s -k -m 10 -c "$dir/$name.admin.jar" -XPOST "$scheme://127.0.0.1:$port/api/auth/" -H 'Content-Type: application/json' \
    -d '{"username":"admin","password":"password"}' -o /dev/null -w '%{http_code}')
  [ "$signed" = 200 ] || { echo "glewlwyd.sh: $name: the admin sign-in answered $signed" >&2; exit 1; }
  admin "$name" POST /user '{"username":"alice","name":"Alice","password":"alice-password","enabled":true,"scope":["g_profile","openid"]}'
}

# oidc NAME EXTRA_PARAMETERS_JSON: the OpenID Connect plugin instance `oidc` of NAME.
oidc() {
  local base; base=$(cat "$dir/$1.url")
  admin "$1" POST /mod/plugin '{"module":"oidc","name":"oidc","display_name":"oidc","parameters":{
    "iss":"'"$base"'/api/oidc","jwt-type":"ecdsa","jwt-key-size":"256",
    "key":'"$(pem_json "$dir/pki/signing.key")"',"cert":'"$(pem_json "$dir/pki/signing.pub")"',
    "access-token-duration":3600,"refresh-token-duration":1209600,"code-duration":600,"refresh-token-rolling":true,
    "refresh-token-one-use":"always","allow-non-oidc":false,"auth-type-code-enabled":true,"auth-type-token-enabled":false,
    "auth-type-id-token-enabled":false,"auth-type-password-enabled":false,"auth-type-client-enabled":false,
    "auth-type-device-enabled":false,"auth-type-refresh-enabled":true,"scope":[],"claims":[],"service-documentation":"",
    "op-policy-uri":"","op-tos-uri":"","jwks-show":true,"pkce-allowed":true,"pkce-method-plain-allowed":false,
    "introspection-revocation-allowed":true,"introspection-revocation-allow-target-client":true,
    "introspection-revocation-auth-scope":[],"request-parameter-allow":false,"request-uri-allow-https-non-secure":false,
    "subject-type":"public","encrypt-out-token-allow":false,"session-management-allowed":false,
    "register-client-allowed":false'"$2"'}}'
}

case "${1:-}" in
start)
  command -v glewlwyd >/dev/null || { echo "glewlwyd.sh: glewlwyd not found (scripts/deps.sh test installs it)" >&2; exit 1; }
  "$0" stop
  rm -rf "$dir"; mkdir -p "$dir"
  pki
  instance plain http
  oidc plain ',"oauth-dpop-allowed":true,"oauth-dpop-iat-duration":60,"oauth-dpop-iat-gap-duration":10,
    "oauth-dpop-nonce-mandatory":true,"oauth-dpop-nonce-counter":'"$NONCE_COUNTER"',
    "oauth-dpop-dpop_bound_access_tokens-property":"dpop_required",
    "oauth-par-allowed":true,"oauth-par-required":true,"oauth-par-request_uri-prefix":"urn:ietf:params:oauth:request_uri:",
    "oauth-par-duration":90'
  instance tls https
  oidc tls ',"client-cert-source":"TLS","client-cert-use-endpoint-aliases":true,"client-cert-self-signed-allowed":true,
    "client-cert-header-name":"X-SSL-Cert"'
  cat "$dir/plain.url"
  ;;
url) cat "$dir/plain.url" ;;
dir) echo "$dir" ;;
stop)
  for n in plain tls; do
    if [ -f "$dir/$n.pid" ]; then kill "$(cat "$dir/$n.pid")" 2>/dev/null || true; rm -f "$dir/$n.pid"; fi
  done
  ;;
*) echo "usage: scripts/glewlwyd.sh start|url|dir|stop" >&2; exit 2 ;;
esac
