"""Typed errors: what a worker does next depends only on the type."""
from __future__ import annotations

from typing import Optional


class TokenBrokerError(Exception):
    """An answer other than a token. `status` is the HTTP status (that of the item in a batch),
    `code` the broker's machine-readable `error`, `request_id` the id to quote to an operator."""

    def __init__(self, status: int, code: str, message: str = "", request_id: Optional[str] = None):
        super().__init__(f"{status} {code}: {message}" if message else f"{status} {code}")
        self.status, self.code, self.message, self.request_id = status, code, message, request_id


class NeedsReauth(TokenBrokerError):
    """409 needs_reauth: the IdP refused the grant. Ask the user to sign in again (a new login);
    retrying cannot help."""


class Revoked(TokenBrokerError):
    """409 revoked: an admin, a sign-out or the IdP ended the session. Do not retry."""


class Unavailable(TokenBrokerError):
    """503 (idp_unavailable, refresh_busy, store_unavailable, …): try again after `retry_after`
    seconds (None when the broker named no time). Raised once the client's own wait is spent."""

    def __init__(self, status: int, code: str, message: str = "", request_id: Optional[str] = None,
                 retry_after: Optional[float] = None):
        super().__init__(status, code, message, request_id)
        self.retry_after = retry_after


class NotFound(TokenBrokerError):
    """404: no such session, no active session of that subject, or a tenant the key cannot reach."""


class Unauthorized(TokenBrokerError):
    """401: the API key is missing, unknown, expired or revoked."""


class Forbidden(TokenBrokerError):
    """403: the key lacks the worker role, or the session lacks a scope asked for
    (`code` insufficient_scope)."""


class BadRequest(TokenBrokerError):
    """400, 413 or 422 (e.g. min_ttl_too_long): the request itself must change."""


def error_for(status: int, body: dict, retry_after: Optional[float] = None) -> TokenBrokerError:
    """The typed error of one answer (or one batch item)."""
    code = str(body.get("error") or f"http_{status}")
    message = str(body.get("message") or "")
    rid = body.get("request_id")
    if status == 409:
        return (Revoked if code == "revoked" else NeedsReauth)(status, code, message, rid)
    if status == 503:
        return Unavailable(status, code, message, rid, retry_after)
    kind = {401: Unauthorized, 403: Forbidden, 404: NotFound}.get(status)
    if kind is None and status in (400, 413, 422):
        kind = BadRequest
    return (kind or TokenBrokerError)(status, code, message, rid)
