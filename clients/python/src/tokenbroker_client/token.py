"""A token as the broker handed it out, and how long this worker may keep it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Token:
    access_token: str
    token_type: str
    expires_at: str      # RFC 3339, to the millisecond (the broker's clock)
    expires_in: int      # whole seconds left when the broker answered
    scope: str
    session_id: str
    subject: str

    @classmethod
    def from_json(cls, o: dict) -> "Token":
        return cls(access_token=o["access_token"], token_type=o.get("token_type", "Bearer"),
                   expires_at=o["expires_at"], expires_in=int(o["expires_in"]), scope=o.get("scope", ""),
                   session_id=o["session_id"], subject=o["subject"])

    def __repr__(self) -> str:  # never print the token itself
        return f"Token(session_id={self.session_id!r}, subject={self.subject!r}, expires_at={self.expires_at!r})"


@dataclass(frozen=True)
class AppToken:
    """A client's own token (client credentials, docs/app-tokens.md): no session, no subject."""
    access_token: str
    token_type: str
    expires_at: str
    expires_in: int
    scope: str
    client: str
    version: int          # changes with every new grant of the stored token
    dpop_proofs: tuple = ()

    @classmethod
    def from_json(cls, o: dict) -> "AppToken":
        return cls(access_token=o["access_token"], token_type=o.get("token_type", "Bearer"),
                   expires_at=o["expires_at"], expires_in=int(o["expires_in"]), scope=o.get("scope", ""),
                   client=o["client"], version=int(o["version"]), dpop_proofs=tuple(o.get("dpop_proofs", ())))

    def __repr__(self) -> str:  # never print the token itself
        return f"AppToken(client={self.client!r}, version={self.version!r}, expires_at={self.expires_at!r})"


@dataclass(frozen=True)
class Cached:
    """A token kept in memory: usable while `valid_until` (the worker's monotonic clock:
    received + expires_in − margin, the margin at most half the lifetime) is far enough away."""
    token: Token
    obtained: float
    valid_until: float

    @classmethod
    def keep(cls, token: Token, now: float, margin: float) -> "Cached":
        return cls(token, now, now + token.expires_in - min(margin, token.expires_in / 2))

    def serves(self, now: float, min_ttl: float) -> bool:
        return self.valid_until - now >= max(min_ttl, 0)
