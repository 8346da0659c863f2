"""tokenbroker-client: a worker's access tokens from tokenbroker (see the project's README)."""
from .client import TokenBroker
from .errors import (BadRequest, Forbidden, NeedsReauth, NotFound, Revoked, TokenBrokerError, Unauthorized,
                     Unavailable)
from .token import Token

__all__ = ["TokenBroker", "Token", "TokenBrokerError", "NeedsReauth", "Revoked", "Unavailable", "NotFound",
           "Unauthorized", "Forbidden", "BadRequest"]
