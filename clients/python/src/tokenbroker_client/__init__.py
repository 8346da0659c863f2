"""tokenbroker-client: a worker's access tokens from tokenbroker (see the project's README)."""
from .client import TokenBroker
from .errors import (BadRequest, Forbidden, NeedsReauth, NotFound, Revoked, TokenBrokerError, Unauthorized,
                     Unavailable)
from .token import AppToken, Token
from .webhooks import InvalidWebhook, verify_webhook

__all__ = ["TokenBroker", "Token", "AppToken", "TokenBrokerError", "NeedsReauth", "Revoked", "Unavailable", "NotFound",
           "Unauthorized", "Forbidden", "BadRequest", "verify_webhook", "InvalidWebhook"]
