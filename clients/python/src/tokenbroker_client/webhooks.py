"""Verifying tokenbroker's webhooks (Standard Webhooks): the documented check."""
from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Mapping, Optional


class InvalidWebhook(Exception):
    """The signature, the timestamp or the secret does not hold: drop the request."""


def verify_webhook(secret: str, headers: Mapping[str, str], body: bytes, *, tolerance: float = 300,
                   now: Optional[float] = None) -> None:
    """Raises InvalidWebhook unless one `v1,` signature of `webhook-signature` is the HMAC-SHA256,
    keyed by the secret's bytes (`whsec_<base64>`), of `<webhook-id>.<webhook-timestamp>.<body>`,
    and the timestamp is within `tolerance` seconds. Pass the raw body, not a re-encoded one.
    Deduplicate on `webhook-id`: a delivery may come more than once."""
    h = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp, signatures = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
    if not (msg_id and stamp and signatures and stamp.isdigit()):
        raise InvalidWebhook("missing webhook-id, webhook-timestamp or webhook-signature")
    if abs((time.time() if now is None else now) - int(stamp)) > tolerance:
        raise InvalidWebhook("timestamp outside the tolerance")
    if not secret.startswith("whsec_"):
        raise InvalidWebhook("not a whsec_ secret")
    key = base64.b64decode(secret[len("whsec_"):])
    expected = "v1," + base64.b64encode(
        hmac.new(key, msg_id.encode() + b"." + stamp.encode() + b"." + body, hashlib.sha256).digest()).decode()
    if not any(hmac.compare_digest(expected, s) for s in signatures.split(" ")):
        raise InvalidWebhook("no signature matches")
