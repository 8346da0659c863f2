import BrokerCore
import Foundation
import Testing

@Suite("Logout-token claim checks (Back-Channel Logout 1.0 §2.4, §2.6)")
struct LogoutTokenRulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func refusal(_ change: (inout [String: Any]) -> Void) -> String? {
        var c: [String: Any] = ["iss": "https://idp.example", "aud": "app", "iat": 1_800_000_000, "jti": "j-1", "sub": "alice",
                                "events": [LogoutTokenRules.event: [String: Any]()]]
        change(&c)
        do {
            _ = try LogoutTokenRules.check(c, issuer: "https://idp.example", clientID: "app", now: now)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test("a good token passes; each wrong claim has its reason")
    func rules() {
        #expect(refusal { _ in } == nil)
        #expect(refusal { $0["sub"] = nil; $0["sid"] = "s-1" } == nil)
        #expect(refusal { $0["iss"] = "https://other.example" } == "iss is not the client's issuer")
        #expect(refusal { $0["aud"] = ["other"] } == "aud does not contain the client_id")
        #expect(refusal { $0["iat"] = nil } == "iat missing")
        #expect(refusal { $0["iat"] = 1_800_000_000 + 120 } == "iat is in the future")
        #expect(refusal { $0["iat"] = 1_800_000_000 - 601 } == "iat is too old")
        #expect(refusal { $0["jti"] = nil } == "jti missing")
        #expect(refusal { $0["events"] = ["other": [String: Any]()] } == "events has no back-channel logout event")
        #expect(refusal { $0["nonce"] = "n" } == "a logout token must not carry a nonce")
        #expect(refusal { $0["sub"] = nil } == "neither sub nor sid")
    }
}
