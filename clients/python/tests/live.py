"""The live broker and development IdP that scripts/clients.sh started (scripts/live.sh)."""
import json
import os
import urllib.request
import uuid

BROKER, IDP = os.environ["LIVE_BROKER"], os.environ["LIVE_IDP"]
TENANT, KEY, IDP_CLIENT = os.environ["LIVE_TENANT"], os.environ["LIVE_KEY"], os.environ["LIVE_IDP_CLIENT"]


def call(method: str, url: str, body=None, key=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {key}"} if key else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read()
        return json.loads(text) if text else None


def new_session(prefix: str = "py") -> tuple:
    """A fresh subject with a grant at the IdP, imported into the broker: (subject, session id)."""
    subject = f"{prefix}-{uuid.uuid4().hex[:8]}"
    rt = call("POST", f"{IDP}/admin/grants", {"client_id": IDP_CLIENT, "subjects": [subject]})["refresh_tokens"][subject]
    s = call("POST", f"{BROKER}/v1/tenants/{TENANT}/sessions:import",
             {"client": "app", "subject": subject, "refresh_token": rt}, KEY)
    return subject, s["session_id"]


def refreshes() -> int:
    """The IdP's count of refresh_token grants it accepted for the tenant's client."""
    return call("GET", f"{IDP}/stats?client_id={IDP_CLIENT}")["refreshes_ok"]


def fail_token_endpoint(status: int, count: int, retry_after=None):
    body = {"status": status, "count": count}
    if retry_after is not None:
        body["retry_after"] = retry_after
    call("POST", f"{IDP}/admin/failures", body)


def revoke_at_idp(subject: str):
    call("POST", f"{IDP}/admin/revoke-subject", {"sub": subject})


def revoke_in_broker(session_id: str):
    call("DELETE", f"{BROKER}/v1/tenants/{TENANT}/sessions/{session_id}", key=KEY)
