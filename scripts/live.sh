# Sourced by scripts that test against a live broker (schemathesis, the worker clients):
# starts the development IdP and the broker on free loopback ports, an API key of every role
# on all tenants, and one fresh tenant with a client ("app"; LIVE_IDP_CLIENT at the IdP).
# Needs DATABASE_URL (migrated) and TOKENBROKER_BIN_DIR; `live_stop` (set as the EXIT trap)
# stops what it started. Exports LIVE_BROKER, LIVE_IDP, LIVE_TENANT, LIVE_IDP_CLIENT, LIVE_KEY.
# Usage: source scripts/live.sh NAME   (NAME names the log files and the tenant's prefix)
live_name="${1:?live.sh NAME}"
live_bin="${TOKENBROKER_BIN_DIR:?}"
live_logs="${TOKENBROKER_TEST_LOGS:-.run}"
live_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
live_json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
live_idp_port=$(live_free_port); live_broker_port=$(live_free_port)
export LIVE_IDP=http://127.0.0.1:$live_idp_port LIVE_BROKER=http://127.0.0.1:$live_broker_port
live_pids=()
live_stop() { kill "${live_pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap live_stop EXIT
TOKENBROKER_SEALING_KEYS="k1:$(head -c 32 /dev/urandom | base64)" TOKENBROKER_LISTEN=127.0.0.1:$live_broker_port \
  TOKENBROKER_ACCESS_LOG=true "$live_bin/tokenbroker" serve 2> "$live_logs/$live_name-broker.log" & live_pids+=($!)
"$live_bin/dev-idp" --listen 127.0.0.1:$live_idp_port 2> "$live_logs/$live_name-dev-idp.log" & live_pids+=($!)
for _ in $(seq 100); do curl -sf $LIVE_BROKER/healthz >/dev/null && curl -sf $LIVE_IDP/jwks >/dev/null && break; sleep 0.1; done

live_op=$("$live_bin/tokenbroker" apikey create --role operator --name "$live_name-operator" --all-tenants)
LIVE_KEY=$(curl -sf -XPOST $LIVE_BROKER/v1/apikeys -H "Authorization: Bearer $live_op" \
  -d "{\"name\":\"$live_name\",\"roles\":[\"worker\",\"admin\",\"enrol\",\"operator\",\"proxy\"],\"tenants\":[\"*\"]}" | live_json '["key"]')
export LIVE_KEY
# A fresh tenant with a client "app" (at the IdP: LIVE_IDP_CLIENT): a test's own, so that the
# IdP failures another test caused (the client's circuit in the broker stays open for a
# Retry-After) reach no other.
live_tenant() {
  export LIVE_TENANT="$live_name-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  export LIVE_IDP_CLIENT="$LIVE_TENANT-app"
  curl -sf -XPUT $LIVE_BROKER/v1/tenants/$LIVE_TENANT -H "Authorization: Bearer $live_op" -d "{\"name\":\"$live_name\"}" >/dev/null
  curl -sf -XPOST $LIVE_IDP/admin/clients -d "{\"client_id\":\"$LIVE_IDP_CLIENT\",\"client_secret\":\"$live_name-secret\",
    \"redirect_uris\":[\"$LIVE_BROKER/v1/callback\"]}" >/dev/null
  curl -sf -XPUT $LIVE_BROKER/v1/tenants/$LIVE_TENANT/clients/app -H "Authorization: Bearer $live_op" -d "{\"issuer\":\"$LIVE_IDP\",
    \"client_id\":\"$LIVE_IDP_CLIENT\",\"auth_method\":\"client_secret_basic\",\"client_secret\":\"$live_name-secret\",
    \"redirect_uri\":\"$LIVE_BROKER/v1/callback\",\"scopes\":[\"openid\",\"offline_access\"]}" >/dev/null
}
live_tenant
# A new session of SUBJECT (a grant made at the IdP, imported): prints its id.
live_session() {
  local rt
  rt=$(curl -sf -XPOST $LIVE_IDP/admin/grants -d "{\"client_id\":\"$LIVE_IDP_CLIENT\",\"subjects\":[\"$1\"]}" | live_json "['refresh_tokens']['$1']")
  curl -sf -XPOST $LIVE_BROKER/v1/tenants/$LIVE_TENANT/sessions:import -H "Authorization: Bearer $LIVE_KEY" \
    -d "{\"client\":\"app\",\"subject\":\"$1\",\"refresh_token\":\"$rt\"}" | live_json '["session_id"]'
}
