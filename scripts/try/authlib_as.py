#!/usr/bin/env python3
"""A plain OAuth 2.0 authorization server built on Authlib (no OpenID Connect), for trying the
broker against a server nobody on the project wrote. Test tooling only: secrets in the clear,
users auto-approved, state in one JSON file (so a killed and restarted server keeps its grants).

  authorization code + PKCE S256 (required), refresh tokens rotating (Authlib's RefreshTokenGrant
  with INCLUDE_NEW_REFRESH_TOKEN, the old one revoked; a rotated token presented again revokes the
  whole family and is counted as reuse) or reusable (--refresh reusable: no new refresh token),
  RFC 7009 revocation, RFC 8414 metadata at the path-insertion location of an issuer with a path,
  client_secret_basic and client_secret_post, GET <issuer>/api/me -> {"id": 42, "login": "alice"}.

Usage: authlib_as.py --port P --state FILE [--path /tenant1] [--refresh rotating|reusable]
                     [--expires-in 60] --client ID:SECRET:METHOD:REDIRECT_URI ...
Test-only admin (no auth, loopback only): GET /admin/stats, GET /admin/events,
POST /admin/revoke-user/<login> (revokes every grant of a user, as an admin console would),
POST /admin/die-after-next-refresh (the next successful refresh is stored, then the process exits unanswered).
"""
import argparse, json, os, secrets, sys, threading, time

os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")  # plain http on loopback
from flask import Flask, request, jsonify
from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector, current_token
from authlib.oauth2.rfc6749 import grants, ClientMixin
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--state", required=True)
ap.add_argument("--path", default="/tenant1")
ap.add_argument("--refresh", choices=["rotating", "reusable"], default="rotating")
ap.add_argument("--expires-in", type=int, default=60)
ap.add_argument("--client", action="append", default=[])
ap.add_argument("--short-client", default="", help="a client whose access tokens live 20 s")
args = ap.parse_args()
P = args.path.rstrip("/")
ISSUER = f"http://127.0.0.1:{args.port}{P}"
USERS = {"alice": 42, "bob": 43}
LOCK = threading.RLock()

# ---- state (one JSON file, rewritten after every change) ----
S = {"codes": {}, "families": {}, "refresh": {}, "access": {}, "events": [], "stats": {}}
if os.path.exists(args.state):
    with open(args.state) as f:
        S = json.load(f)


def save():
    tmp = args.state + ".tmp"
    with open(tmp, "w") as f:
        json.dump(S, f)
    os.replace(tmp, args.state)


def event(kind, **kw):
    S["stats"][kind] = S["stats"].get(kind, 0) + 1
    S["events"].append(dict(kw, kind=kind, at=round(time.time(), 3)))
    save()


class Client(ClientMixin):
    def __init__(self, cid, secret, method, redirect):
        self.cid, self.secret, self.method, self.redirect = cid, secret, method, redirect

    def get_client_id(self): return self.cid
    def get_default_redirect_uri(self): return self.redirect
    def get_allowed_scope(self, scope): return scope or ""
    def check_redirect_uri(self, uri): return uri == self.redirect
    def check_response_type(self, rt): return rt == "code"
    def check_grant_type(self, gt): return gt in ("authorization_code", "refresh_token")

    def check_client_secret(self, secret):
        ok = secrets.compare_digest(secret, self.secret)
        if not ok:
            event("client_secret_refused", client=self.cid)
        return ok

    def check_endpoint_auth_method(self, method, endpoint):
        ok = method == self.method
        if not ok:
            event("auth_method_refused", client=self.cid, method=method, endpoint=endpoint)
        return ok


CLIENTS = {}
for spec in args.client:
    cid, secret, method, redirect = spec.split(":", 3)
    CLIENTS[cid] = Client(cid, secret, method, redirect)


class Code:
    def __init__(self, code, d): self.code, self.d = code, d
    def get_redirect_uri(self): return self.d["redirect_uri"]
    def get_scope(self): return self.d["scope"]
    @property
    def code_challenge(self): return self.d.get("code_challenge")
    @property
    def code_challenge_method(self): return self.d.get("code_challenge_method")


class RefreshCred:
    def __init__(self, rt, d): self.rt, self.d = rt, d
    def fam(self): return S["families"][self.d["family"]]
    def check_client(self, client): return self.fam()["client"] == client.get_client_id()
    def get_scope(self): return self.fam()["scope"]


class AccessTok:
    def __init__(self, at, d): self.at, self.d = at, d
    def fam(self): return S["families"][self.d["family"]]
    def check_client(self, client): return self.fam()["client"] == client.get_client_id()
    def get_scope(self): return self.fam()["scope"]
    def get_expires_in(self): return args.expires_in
    def is_expired(self): return time.time() >= self.d["expires_at"]
    def is_revoked(self): return self.d["revoked"] or self.fam()["revoked"]
    def get_user(self): return self.fam()["user"]


def revoke_family(fid, why):
    fam = S["families"][fid]
    if not fam["revoked"]:
        fam["revoked"] = True
        fam["revoked_why"] = why
        for rt, d in S["refresh"].items():
            if d["family"] == fid and d["state"] == "active":
                d["state"] = "revoked"


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def save_authorization_code(self, code, req):
        with LOCK:
            S["codes"][code] = {"client": req.client.get_client_id(), "redirect_uri": req.payload.redirect_uri,
                                "scope": req.payload.scope or "", "user": req.user,
                                "code_challenge": req.payload.data.get("code_challenge"),
                                "code_challenge_method": req.payload.data.get("code_challenge_method"),
                                "used": False, "family": None}
            event("code_issued", client=req.client.get_client_id(), user=req.user,
                  pkce=req.payload.data.get("code_challenge_method"))

    def query_authorization_code(self, code, client):
        with LOCK:
            d = S["codes"].get(code)
            if not d or d["client"] != client.get_client_id():
                return None
            if d["used"]:
                # RFC 6749 §4.1.2: a code used twice is refused, and the tokens it gave SHOULD be revoked.
                if d["family"]:
                    revoke_family(d["family"], "code replayed")
                event("code_replayed", client=d["client"], family=d["family"])
                return None
            return Code(code, d)

    def delete_authorization_code(self, ac):
        with LOCK:
            ac.d["used"] = True
            save()

    def authenticate_user(self, ac):
        return ac.d["user"]


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]
    INCLUDE_NEW_REFRESH_TOKEN = args.refresh == "rotating"

    def authenticate_refresh_token(self, rt):
        with LOCK:
            d = S["refresh"].get(rt)
            if not d:
                event("refresh_unknown")
                return None
            d["presented"] = d.get("presented", 0) + 1
            if d["state"] == "rotated":
                # A rotated refresh token presented again: reuse. Revoke the whole family.
                revoke_family(d["family"], "refresh token reused")
                event("refresh_reuse", family=d["family"], presented=d["presented"])
                return None
            if d["state"] != "active" or S["families"][d["family"]]["revoked"]:
                event("refresh_revoked_presented", family=d["family"])
                return None
            return RefreshCred(rt, d)

    def authenticate_user(self, cred):
        return cred.fam()["user"]

    def revoke_old_credential(self, cred):
        with LOCK:
            if args.refresh == "rotating":
                cred.d["state"] = "rotated"
            new = getattr(self.request, "new_access_token", None)
            for at, d in S["access"].items():
                if d["family"] == cred.d["family"] and at != new:
                    d["revoked"] = True  # the access tokens before this refresh's
            event("refresh_ok", family=cred.d["family"], client=cred.fam()["client"], rotated=args.refresh == "rotating",
                  auth=self.request.auth_method if hasattr(self.request, "auth_method") else None)


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token, hint):
        with LOCK:
            if token in S["refresh"]:
                return RefreshCred(token, S["refresh"][token])
            if token in S["access"]:
                return AccessTok(token, S["access"][token])
            event("revocation_unknown_token", hint=hint)
            return None

    def revoke_token(self, tok, req):
        with LOCK:
            if isinstance(tok, RefreshCred):
                revoke_family(tok.d["family"], "revoked (RFC 7009)")
                event("revoked_refresh", family=tok.d["family"], hint=req.form.get("token_type_hint"))
            else:
                tok.d["revoked"] = True
                event("revoked_access", family=tok.d["family"], hint=req.form.get("token_type_hint"))


def save_token(token, req):
    token["region"] = "eu-west-1"  # an extra member of the answer (for the broker's token_response.keep)
    if req.client.get_client_id() == args.short_client:
        token["expires_in"] = 20
    with LOCK:
        if req.payload.grant_type == "authorization_code":
            fid = secrets.token_hex(8)
            S["families"][fid] = {"client": req.client.get_client_id(), "user": req.user,
                                  "scope": token.get("scope", ""), "revoked": False}
            req.authorization_code.d["family"] = fid
            event("code_exchanged", family=fid, client=req.client.get_client_id())
        else:
            fid = req.refresh_token.d["family"]
        req.new_access_token = token["access_token"]
        S["access"][token["access_token"]] = {"family": fid, "expires_at": time.time() + token["expires_in"],
                                              "revoked": False}
        if "refresh_token" in token:
            S["refresh"][token["refresh_token"]] = {"family": fid, "state": "active", "presented": 0}
        save()


app = Flask(__name__)
app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"authorization_code": args.expires_in, "refresh_token": args.expires_in}
server = AuthorizationServer(app, query_client=lambda cid: CLIENTS.get(cid), save_token=save_token)
server.register_grant(AuthorizationCodeGrant, [CodeChallenge(required=True)])
server.register_grant(RefreshTokenGrant)
server.register_endpoint(Revocation)


class Validator(BearerTokenValidator):
    def authenticate_token(self, token_string):
        d = S["access"].get(token_string)
        return AccessTok(token_string, d) if d else None


require_oauth = ResourceProtector()
require_oauth.register_token_validator(Validator())


@app.get("/.well-known/oauth-authorization-server" + P)
def metadata():
    return jsonify({
        "issuer": ISSUER,
        "authorization_endpoint": ISSUER + "/authorize",
        "token_endpoint": ISSUER + "/token",
        "revocation_endpoint": ISSUER + "/revoke",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
    })


@app.get(P + "/authorize")
def authorize():
    user = request.args.get("login_hint") or "alice"
    if user not in USERS:
        user = "alice"
    with LOCK:
        return server.create_authorization_response(grant_user=user)


DIE = {"after_next_refresh": False}


@app.post(P + "/token")
def token():
    with LOCK:
        resp = server.create_token_response()
        if DIE["after_next_refresh"] and request.form.get("grant_type") == "refresh_token" and resp.status_code == 200:
            # The refresh is done and stored (the old refresh token rotated), and the answer is never
            # sent: the process dies, as a server crashing at the worst moment would.
            event("died_before_answering")
            os._exit(1)
        return resp


@app.post("/admin/die-after-next-refresh")
def die_after_next_refresh():
    DIE["after_next_refresh"] = True
    return jsonify({"armed": True})


@app.post(P + "/revoke")
def revoke():
    with LOCK:
        return server.create_endpoint_response(RevocationEndpoint.ENDPOINT_NAME)


@app.get(P + "/api/me")
@require_oauth()
def me():
    user = current_token.get_user()
    return jsonify({"id": USERS[user], "login": user})


@app.get("/admin/stats")
def stats():
    with LOCK:
        presented = [d.get("presented", 0) for d in S["refresh"].values()]
        return jsonify(dict(S["stats"], refresh_tokens=len(S["refresh"]),
                            refresh_tokens_presented_more_than_once=sum(1 for p in presented if p > 1),
                            families=len(S["families"]),
                            families_revoked={k: v.get("revoked_why") for k, v in S["families"].items() if v["revoked"]},
                            mode=args.refresh))


@app.get("/admin/events")
def events():
    return jsonify(S["events"])


@app.post("/admin/revoke-user/<login>")
def revoke_user(login):
    with LOCK:
        n = 0
        for fid, fam in S["families"].items():
            if fam["user"] == login and not fam["revoked"]:
                revoke_family(fid, "admin revoked the user's grants")
                n += 1
        event("admin_revoke_user", user=login, families=n)
        return jsonify({"revoked_families": n})


if __name__ == "__main__":
    import logging
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app.run(host="127.0.0.1", port=args.port, threaded=True)
