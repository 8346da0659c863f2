import BrokerCore
import Foundation
import Testing

@Suite("ID-token claim checks (OIDC Core §3.1.3.7, §12.2)")
struct IDTokenRulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let login = IDTokenExpectation(issuer: "https://idp.example", clientID: "app", nonce: "n-1")

    func claims(_ change: (inout [String: Any]) -> Void = { _ in }) -> [String: Any] {
        var c: [String: Any] = ["iss": "https://idp.example", "aud": "app", "sub": "alice", "nonce": "n-1",
                                "iat": 1_800_000_000, "exp": 1_800_000_600, "sid": "s-1", "auth_time": 1_799_999_000]
        change(&c)
        return c
    }

    func refusal(_ c: [String: Any], _ e: IDTokenExpectation? = nil, at t: Date? = nil) -> String? {
        do {
            _ = try IDTokenRules.check(c, e ?? login, now: t ?? now)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test("a good token passes and yields sub, sid and auth_time")
    func accepts() throws {
        let v = try IDTokenRules.check(claims(), login, now: now)
        #expect(v.subject == "alice" && v.claims.sid == "s-1" && v.claims.authTime == Date(timeIntervalSince1970: 1_799_999_000))
    }

    @Test("each wrong claim is refused with its own reason")
    func refusals() {
        #expect(refusal(claims { $0["iss"] = "https://idp.example/" }) == "iss is not the issuer")
        #expect(refusal(claims { $0["aud"] = "other" }) == "aud does not contain the client_id")
        #expect(refusal(claims { $0["aud"] = nil }) == "aud missing")
        #expect(refusal(claims { $0["aud"] = ["app", "other"] }) == "azp missing with several audiences")
        #expect(refusal(claims { $0["aud"] = ["app", "other"]; $0["azp"] = "other" }) == "azp is not the client_id")
        #expect(refusal(claims { $0["aud"] = ["app", "other"]; $0["azp"] = "app" }) == nil)
        #expect(refusal(claims { $0["exp"] = nil }) == "exp missing")
        #expect(refusal(claims { $0["exp"] = "1800000600" }) == "exp missing")
        #expect(refusal(claims { $0["iat"] = nil }) == "iat missing")
        #expect(refusal(claims { $0["sub"] = nil }) == "sub missing")
        #expect(refusal(claims { $0["sub"] = "" }) == "sub missing")
        #expect(refusal(claims { $0["nonce"] = nil }) == "nonce missing")
        #expect(refusal(claims { $0["nonce"] = "n-2" }) == "nonce does not match the login")
    }

    @Test("exp and iat are judged at `now` with the skew, never the wall clock")
    func time() {
        #expect(refusal(claims(), at: Date(timeIntervalSince1970: 1_800_000_600 + 59)) == nil)
        #expect(refusal(claims(), at: Date(timeIntervalSince1970: 1_800_000_600 + 61)) == "exp is in the past")
        #expect(refusal(claims(), at: Date(timeIntervalSince1970: 1_800_000_000 - 59)) == nil)
        #expect(refusal(claims(), at: Date(timeIntervalSince1970: 1_800_000_000 - 61)) == "iat is in the future")
    }

    @Test("a refreshed token needs no nonce but the session's subject")
    func refreshed() {
        let refresh = IDTokenExpectation(issuer: "https://idp.example", clientID: "app", nonce: nil, subject: "alice")
        #expect(refusal(claims { $0["nonce"] = nil }, refresh) == nil)
        #expect(refusal(claims { $0["sub"] = "mallory" }, refresh) == "sub differs from the session's subject")
    }

    @Test("a compact JWS must have three parts, base64url JSON, an alg, and no crit")
    func compactParsing() {
        let h = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8)), p = Base64URL.encode(Array(#"{"sub":"a"}"#.utf8))
        #expect((try? CompactJWS.parse("\(h).\(p).AAAA")) != nil)
        #expect((try? CompactJWS.parse("\(h).\(p)")) == nil)
        #expect((try? CompactJWS.parse("\(h).\(p).AA.AA")) == nil)
        #expect((try? CompactJWS.parse("\(h).!!.AAAA")) == nil)
        #expect((try? CompactJWS.parse(Base64URL.encode(Array(#"{"typ":"JWT"}"#.utf8)) + ".\(p).AAAA")) == nil)
        #expect((try? CompactJWS.parse(Base64URL.encode(Array(#"{"alg":"ES256","crit":["x"]}"#.utf8)) + ".\(p).AAAA")) == nil)
        #expect((try? CompactJWS.parse("\(h).\(p).AAAA", maxBytes: 10)) == nil)
    }

    @Test("a multi-tenant issuer template: iss must be the template with the token's own tid, nothing else")
    func issuerTemplate() {
        var e = IDTokenExpectation(issuer: "https://login.example/common/v2.0", clientID: "app", nonce: "n-1")
        e.issuerTemplate = "https://login.example/{tenantid}/v2.0"
        let tenant = claims { $0["iss"] = "https://login.example/7c1b/v2.0"; $0["tid"] = "7c1b" }
        #expect(refusal(tenant, e) == nil)
        #expect(refusal(claims { $0["iss"] = "https://login.example/7c1b/v2.0"; $0["tid"] = "other" }, e) != nil, "another tenant's iss")
        #expect(refusal(claims { $0["iss"] = "https://login.example/7c1b/v2.0" }, e) != nil, "no tid")
        #expect(refusal(claims { $0["iss"] = "https://login.example/a/b/v2.0"; $0["tid"] = "a/b" }, e) != nil, "a tid that is a path")
        #expect(refusal(claims { $0["iss"] = "https://login.example/common/v2.0"; $0["tid"] = "7c1b" }, e) != nil, "the common issuer itself")
    }
}
