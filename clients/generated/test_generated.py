"""A worker's scenario through the client openapi-python-client generates from docs/openapi.yaml:
the contract alone must be enough to fetch a token, tell a 409 needs_reauth, and honour a 503's
Retry-After (names come from the file's operationIds and schemas)."""
import time
import unittest

from tokenbroker_generated import AuthenticatedClient
from tokenbroker_generated.api.tokens import get_app_token, get_session_token, get_token_batch
from tokenbroker_generated.models import Error, GetAppTokenBody, GetTokenBatchBody, Token, TokenRequest

import live


def client() -> AuthenticatedClient:
    return AuthenticatedClient(base_url=live.BROKER, token=live.KEY, raise_on_unexpected_status=True)


def fetch(c, sid, **kw):
    return get_session_token.sync_detailed(live.TENANT, sid, client=c, body=TokenRequest(**kw))


class GeneratedClientTests(unittest.TestCase):
    def test_a_token(self):
        subject, sid = live.new_session("gen")
        with client() as c:
            r = fetch(c, sid, min_ttl=60)
        self.assertEqual(r.status_code, 200)
        self.assertIsInstance(r.parsed, Token)
        self.assertEqual((r.parsed.session_id, r.parsed.subject), (sid, subject))
        self.assertEqual(r.headers["cache-control"], "no-store")

    def test_needs_reauth_is_a_typed_409(self):
        subject, sid = live.new_session("gen")
        live.revoke_at_idp(subject)
        with client() as c:
            r = fetch(c, sid, force_refresh=True)
        self.assertEqual(r.status_code, 409)
        self.assertIsInstance(r.parsed, Error)
        self.assertEqual((r.parsed.error, r.parsed.state), ("needs_reauth", "needs_reauth"))

    def test_retry_after_is_declared_and_honoured(self):
        _, sid = live.new_session("gen")
        live.fail_token_endpoint(503, 1, retry_after=1)
        with client() as c:
            r = fetch(c, sid, force_refresh=True)
            self.assertEqual(r.status_code, 503)
            self.assertIsInstance(r.parsed, Error)
            self.assertEqual(r.parsed.error, "idp_unavailable")
            wait = float(r.headers["retry-after"])
            self.assertEqual(wait, 1.0)
            time.sleep(wait)
            again = fetch(c, sid, force_refresh=True)
        self.assertEqual(again.status_code, 200)

    def test_a_batch(self):
        _, sid = live.new_session("gen")
        with client() as c:
            r = get_token_batch.sync_detailed(live.TENANT, client=c, body=GetTokenBatchBody.from_dict(
                {"items": [{"session_id": sid}, {"session_id": "ses_unknown"}]}))
        self.assertEqual(r.status_code, 200)
        first, second = r.parsed.results
        self.assertEqual((first.status, first.session_id), (200, sid))
        self.assertEqual((second.status, second.error), (404, "not_found"))

    def test_an_app_token(self):
        with client() as c:
            r = get_app_token.sync_detailed(live.TENANT, "app", client=c, body=GetAppTokenBody(scope="write read", min_ttl=30))
            again = get_app_token.sync_detailed(live.TENANT, "app", client=c, body=GetAppTokenBody(scope="read write"))
            unknown = get_app_token.sync_detailed(live.TENANT, "nobody", client=c, body=GetAppTokenBody())
        self.assertEqual(r.status_code, 200)
        self.assertEqual((r.parsed.client, r.parsed.token_type, r.parsed.scope), ("app", "Bearer", "read write"))
        self.assertEqual(again.parsed.access_token, r.parsed.access_token)
        self.assertEqual((unknown.status_code, unknown.parsed.error), (404, "not_found"))


if __name__ == "__main__":
    unittest.main()
