"""The worker client against a live broker and the development IdP (scripts/clients.sh)."""
import threading
import time
import unittest

from tokenbroker_client import AppToken, NeedsReauth, NotFound, Revoked, Token, TokenBroker, Unauthorized, Unavailable

import live


def broker(**kw) -> TokenBroker:
    return TokenBroker(live.BROKER, live.KEY, live.TENANT, **kw)


class WorkerTests(unittest.TestCase):
    def test_fetches_by_session_and_subject_then_serves_from_memory(self):
        subject, sid = live.new_session()
        b = broker()
        t = b.get_access_token(sid, min_ttl=60)
        self.assertIsInstance(t, Token)
        self.assertEqual((t.session_id, t.subject, t.token_type), (sid, subject, "Bearer"))
        self.assertGreater(t.expires_in, 60)
        self.assertIs(b.get_access_token(sid, min_ttl=60), t)
        by_subject = b.get_access_token(subject=subject, client="app")
        self.assertEqual(by_subject.access_token, t.access_token)
        self.assertEqual(b.requests_sent, 2)
        self.assertNotIn(t.access_token, repr(t))

    def test_an_app_token_is_asked_once_then_served_from_memory(self):
        b = broker()
        t = b.get_app_token("app", scope="write read", min_ttl=30)
        self.assertIsInstance(t, AppToken)
        self.assertEqual((t.client, t.token_type, t.scope), ("app", "Bearer", "read write"))
        self.assertGreater(t.expires_in, 30)
        self.assertIs(b.get_app_token("app", scope="write read", min_ttl=30), t)
        self.assertEqual(b.requests_sent, 1)
        # Another worker (or replica) gets the token the broker stored, for the same ask in any order.
        self.assertEqual(broker().get_app_token("app", scope="read write").access_token, t.access_token)
        self.assertNotIn(t.access_token, repr(t))
        with self.assertRaises(NotFound):
            b.get_app_token("nobody")

    def test_a_min_ttl_beyond_what_is_kept_asks_the_broker(self):
        _, sid = live.new_session()
        b = broker(margin=30)
        t = b.get_access_token(sid)
        b.get_access_token(sid, min_ttl=t.expires_in - 10)   # beyond expires_in − margin
        self.assertEqual(b.requests_sent, 2)

    def test_concurrent_callers_share_one_request_and_one_refresh(self):
        _, sid = live.new_session()
        b = broker()
        before = live.refreshes()
        got, start = [], threading.Barrier(8)

        def worker():
            start.wait()
            got.append(b.get_access_token(sid, force_refresh=True))

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(len({t.access_token for t in got}), 1)
        self.assertEqual(b.requests_sent, 1)
        self.assertEqual(live.refreshes() - before, 1)

    def test_retry_after_is_honoured(self):
        _, sid = live.new_session()
        b = broker(max_wait=10)
        b.get_access_token(sid)
        live.fail_token_endpoint(503, 1, retry_after=1)
        t0 = time.monotonic()
        t = b.get_access_token(sid, force_refresh=True)
        self.assertGreaterEqual(time.monotonic() - t0, 1.0)
        self.assertGreaterEqual(b.requests_sent, 3)     # the first fetch, the 503, the retry
        self.assertEqual(t.session_id, sid)

    def test_zz_unavailable_once_the_wait_is_spent(self):
        # Last (unittest runs in name order): the 503's Retry-After keeps the client's circuit
        # in the broker open that long, which would hold up the next test's refresh.
        _, sid = live.new_session()
        b = broker(max_wait=0)
        b.get_access_token(sid)
        live.fail_token_endpoint(503, 1, retry_after=2)
        with self.assertRaises(Unavailable) as e:
            b.get_access_token(sid, force_refresh=True)
        self.assertEqual((e.exception.code, e.exception.retry_after), ("idp_unavailable", 2.0))
        self.assertTrue(e.exception.request_id)

    def test_a_refused_grant_is_needs_reauth_and_forgets_the_token(self):
        subject, sid = live.new_session()
        b = broker()
        b.get_access_token(sid)
        live.revoke_at_idp(subject)
        with self.assertRaises(NeedsReauth) as e:
            b.get_access_token(sid, force_refresh=True)
        self.assertEqual((e.exception.status, e.exception.code), (409, "needs_reauth"))
        sent = b.requests_sent
        with self.assertRaises(NeedsReauth):
            b.get_access_token(sid)                      # nothing kept: asks, and is told again
        self.assertEqual(b.requests_sent, sent + 1)

    def test_a_revoked_session_is_revoked(self):
        _, sid = live.new_session()
        b = broker()
        live.revoke_in_broker(sid)
        with self.assertRaises(Revoked):
            b.get_access_token(sid)

    def test_batch_one_result_per_item_and_kept_ones_not_sent(self):
        s1, sid1 = live.new_session()
        _, sid2 = live.new_session()
        b = broker()
        kept = b.get_access_token(sid1)
        results = b.get_access_tokens([sid1, sid2, "ses_unknown", (s1, "app")])
        self.assertIs(results[0], kept)
        self.assertEqual(results[1].session_id, sid2)
        self.assertIsInstance(results[2], NotFound)
        self.assertEqual(results[3].session_id, sid1)
        self.assertEqual(b.requests_sent, 2)

    def test_a_wrong_key_is_unauthorized(self):
        _, sid = live.new_session()
        with self.assertRaises(Unauthorized):
            TokenBroker(live.BROKER, "tbk_wrong", live.TENANT).get_access_token(sid)


if __name__ == "__main__":
    unittest.main()
