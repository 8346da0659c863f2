"""TokenBroker: a worker's access tokens, from memory while they last, else from the broker —
one request per session at a time inside this process, Retry-After honoured, typed errors."""
from __future__ import annotations

import email.utils
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Iterable, List, Optional, Tuple, Union

from .errors import TokenBrokerError, Unavailable, error_for, NeedsReauth, Revoked
from .token import AppToken, Cached, Token

Item = Union[str, Tuple[str, str]]   # a session id, or (subject, client)


class TokenBroker:
    """One tenant's tokens through one API key (role worker). Thread-safe; share one per process.

    - A token is served from memory while it lives `min_ttl` more seconds before
      `expires_in − margin` (the margin at most half its lifetime); else it is asked for.
    - Callers asking for the same session (or subject) at once share one request.
    - A 503 is retried after its Retry-After (or a short backoff) while `max_wait` seconds last,
      then raised as `Unavailable`; a retry after `refresh_busy` drops `force_refresh`: the
      refresh that was running is the new token asked for.
    - A 409 is `NeedsReauth` or `Revoked` and forgets what was kept for that session.
    """

    def __init__(self, base_url: str, api_key: str, tenant: str, *, margin: float = 30.0, max_wait: float = 30.0,
                 timeout: float = 10.0, max_entries: int = 100_000, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self._base = base_url.rstrip("/") + "/v1/tenants/" + urllib.parse.quote(tenant, safe="")
        self._auth = "Bearer " + api_key
        self._margin, self._max_wait, self._timeout, self._max_entries = margin, max_wait, timeout, max_entries
        self._clock, self._sleep = clock, sleep
        self._guard = threading.Lock()
        self._flights: dict = {}
        self._cache: dict = {}
        self._failed: dict = {}
        self.requests_sent = 0

    # -- one token -------------------------------------------------------------------------

    def get_access_token(self, session: Optional[str] = None, *, subject: Optional[str] = None,
                         client: Optional[str] = None, min_ttl: Optional[float] = None,
                         scope: Optional[str] = None, force_refresh: bool = False) -> Token:
        """The token of `session`, or of `subject`'s newest active session at `client`."""
        if (session is None) == (subject is None) or (subject is not None and not client):
            raise ValueError("name a session, or a subject and its client")
        key = ("s", session, scope) if session else ("u", subject, client, scope)
        body = {"session_id": session} if session else {"subject": subject, "client": client}
        return self._kept_or_fetched(key, min_ttl, force_refresh, lambda: Token.from_json(
            self._ask(lambda force: self._token_request(session, body, min_ttl, scope, force), force_refresh)))

    # -- a client's own token ----------------------------------------------------------------

    def get_app_token(self, client: str, *, scope: Optional[str] = None, audience: Optional[str] = None,
                      resource: Optional[str] = None, min_ttl: Optional[float] = None) -> AppToken:
        """`client`'s own token (client credentials, docs/app-tokens.md) for the scope, audience
        and resource: from memory while it lasts, else from the broker, which shares one grant
        with every caller and replica and renews it ahead of expiry while it is asked for."""
        key = ("a", client, scope, audience, resource)
        payload = {k: v for k, v in (("scope", scope), ("audience", audience), ("resource", resource)) if v is not None}
        if min_ttl is not None:
            payload["min_ttl"] = int(min_ttl)
        path = "/clients/" + urllib.parse.quote(client, safe="") + "/token"
        return self._kept_or_fetched(key, min_ttl, False, lambda: AppToken.from_json(
            self._ask(lambda _force: self._post(path, payload), False)))

    def _kept_or_fetched(self, key, min_ttl, force_refresh: bool, fetch: Callable[[], Union[Token, AppToken]]):
        """The token kept for `key` while it serves `min_ttl`, else one `fetch` — one at a time
        per key: callers that waited get the token (or the failure) of the fetch they waited for."""
        start = self._clock()
        if not force_refresh:
            kept = self._cache.get(key)
            if kept and kept.serves(start, min_ttl or 0):
                return kept.token
        with self._flight(key):
            now = self._clock()
            kept, failed = self._cache.get(key), self._failed.get(key)
            if failed and failed[0] >= start:
                raise failed[1]                       # the request this caller waited for failed
            if kept and (kept.obtained >= start or not force_refresh) and kept.serves(now, min_ttl or 0):
                return kept.token                     # fetched meanwhile, or still good
            try:
                token = fetch()
            except TokenBrokerError as e:
                self._remember_failure(key, e)
                raise
            self._keep(key, token)
            return token

    # -- many tokens -----------------------------------------------------------------------

    def get_access_tokens(self, items: Iterable[Item], *, min_ttl: Optional[float] = None,
                          scope: Optional[str] = None) -> List[Union[Token, TokenBrokerError]]:
        """One result per item, in order: a Token or the item's TokenBrokerError (never raised).
        Items kept in memory are not sent; the rest go in batches of at most 1,000."""
        items = list(items)
        results: List[Union[Token, TokenBrokerError, None]] = [None] * len(items)
        ask: List[int] = []
        now = self._clock()
        for i, item in enumerate(items):
            kept = self._cache.get(self._key(item, scope))
            if kept and kept.serves(now, min_ttl or 0):
                results[i] = kept.token
            else:
                ask.append(i)
        for chunk in (ask[n:n + 1000] for n in range(0, len(ask), 1000)):
            payload = {"items": [self._item_json(items[i]) for i in chunk]}
            if min_ttl is not None:
                payload["min_ttl"] = int(min_ttl)
            if scope is not None:
                payload["scope"] = scope
            answer = self._ask(lambda _force: self._post("/tokens:batch", payload), False)
            for r in answer["results"]:
                i = chunk[r["index"]]
                key = self._key(items[i], scope)
                if r["status"] == 200:
                    results[i] = Token.from_json(r)
                    self._keep(key, results[i])
                else:
                    results[i] = error_for(r["status"], r)
                    self._remember_failure(key, results[i])
        return results  # type: ignore[return-value]

    def forget(self, session: str) -> None:
        """Drops what is kept for `session` (e.g. a resource server refused its token: the next
        call asks the broker, which refreshes when needed — or pass force_refresh)."""
        with self._guard:
            for key in [k for k, v in self._cache.items() if getattr(v.token, "session_id", None) == session]:
                del self._cache[key]

    # -- the wire --------------------------------------------------------------------------

    def _ask(self, send: Callable[[bool], Tuple[int, dict, Optional[float]]], force: bool) -> dict:
        """Sends until a non-503 answer or `max_wait` is spent; returns the 200 body or raises."""
        deadline = self._clock() + self._max_wait
        backoff = 0.2
        while True:
            status, body, retry_after = send(force)
            if status == 200:
                return body
            error = error_for(status, body, retry_after)
            wait = retry_after if retry_after is not None else backoff
            if not isinstance(error, Unavailable) or self._clock() + wait > deadline:
                raise error
            self._sleep(wait)
            backoff = min(backoff * 2, 2.0)
            if error.code == "refresh_busy":
                force = False

    def _token_request(self, session, body, min_ttl, scope, force) -> Tuple[int, dict, Optional[float]]:
        payload = dict(body) if not session else {}
        if min_ttl is not None:
            payload["min_ttl"] = int(min_ttl)
        if scope is not None:
            payload["scope"] = scope
        if force:
            payload["force_refresh"] = True
        path = "/sessions/" + urllib.parse.quote(session, safe="") + "/token" if session else "/token"
        return self._post(path, payload)

    def _post(self, path: str, payload: dict) -> Tuple[int, dict, Optional[float]]:
        req = urllib.request.Request(self._base + path, data=json.dumps(payload).encode(), method="POST",
                                     headers={"Authorization": self._auth, "Content-Type": "application/json"})
        with self._guard:
            self.requests_sent += 1
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as r:
                return r.status, json.load(r), None
        except urllib.error.HTTPError as e:
            try:
                body = json.load(e)
            except ValueError:
                body = {"error": f"http_{e.code}"}
            return e.code, body if isinstance(body, dict) else {}, _retry_after(e.headers.get("Retry-After"))
        except (urllib.error.URLError, OSError) as e:   # unreachable or cut: like a 503 with no time
            return 503, {"error": "broker_unreachable", "message": str(getattr(e, "reason", e))}, None

    # -- memory ----------------------------------------------------------------------------

    def _flight(self, key) -> threading.Lock:
        with self._guard:
            return self._flights.setdefault(key, threading.Lock())

    def _keep(self, key, token: Token) -> None:
        kept = Cached.keep(token, self._clock(), self._margin)
        with self._guard:
            if len(self._cache) >= self._max_entries:
                self._sweep(kept.obtained)
            self._cache[key] = kept
            if key[0] != "a":
                self._cache[("s", token.session_id, key[-1])] = kept
            self._failed.pop(key, None)

    def _sweep(self, now: float) -> None:
        """Over `max_entries`: drops what expired, then the oldest half if that was not enough."""
        for k in [k for k, v in self._cache.items() if v.valid_until <= now]:
            del self._cache[k]
        if len(self._cache) >= self._max_entries:
            for k, _ in sorted(self._cache.items(), key=lambda kv: kv[1].obtained)[: len(self._cache) // 2]:
                del self._cache[k]
        self._failed.clear()

    def _remember_failure(self, key, error: TokenBrokerError) -> None:
        with self._guard:
            self._failed[key] = (self._clock(), error)
            if isinstance(error, (NeedsReauth, Revoked)):
                self._cache.pop(key, None)
                if key[0] == "s":
                    for k in [k for k, v in self._cache.items() if getattr(v.token, "session_id", None) == key[1]]:
                        del self._cache[k]

    @staticmethod
    def _key(item: Item, scope):
        return ("s", item, scope) if isinstance(item, str) else ("u", item[0], item[1], scope)

    @staticmethod
    def _item_json(item: Item) -> dict:
        return {"session_id": item} if isinstance(item, str) else {"subject": item[0], "client": item[1]}


def _retry_after(value: Optional[str]) -> Optional[float]:
    """RFC 9110 §10.2.3: delay-seconds or an HTTP-date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
