"""How long a token is kept, with the clock as an argument (no broker needed)."""
import unittest

from tokenbroker_client.client import _retry_after
from tokenbroker_client.token import AppToken, Cached, Token


def token(expires_in: int) -> Token:
    return Token("at", "Bearer", "2026-12-01T00:00:00.000Z", expires_in, "openid", "ses_1", "alice")


class MemoryTests(unittest.TestCase):
    def test_kept_until_expires_in_minus_margin(self):
        c = Cached.keep(token(300), now=1000.0, margin=30)
        self.assertTrue(c.serves(1000.0 + 269, min_ttl=0))
        self.assertFalse(c.serves(1000.0 + 271, min_ttl=0))
        self.assertFalse(c.serves(1000.0, min_ttl=271))

    def test_margin_is_at_most_half_the_lifetime(self):
        c = Cached.keep(token(20), now=0.0, margin=30)
        self.assertEqual(c.valid_until, 10.0)

    def test_an_app_token_is_read_and_kept_like_a_session_token(self):
        t = AppToken.from_json({"access_token": "at", "token_type": "DPoP", "expires_at": "2026-12-01T00:00:00.000Z",
                                "expires_in": 300, "scope": "read", "client": "app", "version": 3, "dpop_proofs": ["p1"]})
        self.assertEqual((t.client, t.version, t.dpop_proofs), ("app", 3, ("p1",)))
        self.assertNotIn("at'", repr(t))
        self.assertEqual(Cached.keep(t, now=0.0, margin=30).valid_until, 270.0)

    def test_retry_after_seconds_or_date(self):
        self.assertEqual(_retry_after("3"), 3.0)
        self.assertIsNone(_retry_after(None))
        self.assertIsNone(_retry_after("soon"))
        self.assertEqual(_retry_after("Thu, 01 Jan 1970 00:00:00 GMT"), 0.0)


if __name__ == "__main__":
    unittest.main()
