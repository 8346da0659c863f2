import BrokerCore
import Foundation
import Testing

@Suite("Webhook events: which state change is which event, and the body that is signed")
struct WebhookEventTests {
    @Test("a session's state changes map to exactly the documented events")
    func transitions() {
        let all: [SessionState] = [.active, .needsReauth, .revoked]
        var seen: [String: WebhookEventType] = [:]
        for a in all { for b in all { if let e = WebhookEventType.of(from: a, to: b) { seen["\(a.rawValue)→\(b.rawValue)"] = e } } }
        #expect(seen == ["active→needs_reauth": .needsReauth, "active→revoked": .revoked, "needs_reauth→revoked": .revoked,
                         "needs_reauth→active": .recovered])
    }

    @Test("the payload is {type, timestamp, data}, keys sorted, the same text every time")
    func payload() throws {
        let e = WebhookEvent(type: .revoked, orderingKey: "ses_1", data: ["session_id": "ses_1", "tenant": "acme"])
        let at = Date(timeIntervalSince1970: 1_800_000_000.5)
        #expect(e.payload(at: at) == e.payload(at: at))
        #expect(e.payload(at: at) == #"{"data":{"session_id":"ses_1","tenant":"acme"},"timestamp":"2027-01-15T08:00:00.500Z","type":"session.revoked"}"#)
    }

    @Test("secrets are whsec_ and 24 bytes or more")
    func secrets() {
        var rng = SystemRandomNumberGenerator()
        let s = StandardWebhooks.newSecret(using: &rng)
        #expect(s.hasPrefix("whsec_") && StandardWebhooks.key(s)?.count == 32)
        #expect(StandardWebhooks.key("whsec_" + Data(repeating: 1, count: 16).base64EncodedString()) == nil)
        #expect(StandardWebhooks.key("nope") == nil)
    }
}
