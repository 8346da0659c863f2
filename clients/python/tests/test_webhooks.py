"""The documented webhook check, on the Standard Webhooks specification's test vector."""
import unittest

from tokenbroker_client import InvalidWebhook, verify_webhook

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
HEADERS = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
           "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
BODY = b'{"test": 2432232314}'


class WebhookCheckTests(unittest.TestCase):
    def test_the_vector_verifies(self):
        verify_webhook(SECRET, HEADERS, BODY, now=1614265330)
        verify_webhook(SECRET, dict(HEADERS, **{"webhook-signature": "v1,other " + HEADERS["webhook-signature"]}), BODY, now=1614265330)

    def test_tampering_is_detected(self):
        for headers, body, now in [(HEADERS, BODY + b" ", 1614265330), (dict(HEADERS, **{"webhook-id": "msg_x"}), BODY, 1614265330),
                                   (HEADERS, BODY, 1614265330 + 301), ({}, BODY, 1614265330)]:
            with self.assertRaises(InvalidWebhook):
                verify_webhook(SECRET, headers, body, now=now)


if __name__ == "__main__":
    unittest.main()
