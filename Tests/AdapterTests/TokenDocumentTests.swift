@testable import BrokerApp
@testable import Broker
import BrokerCore
import Foundation
import Testing

/// The token document of a cached hand-out is rendered once per `expires_in` into the cache
/// entry's memo, and is byte for byte what rendering it afresh gives.
@Suite("Token document memo")
struct TokenDocumentTests {
    func token(_ access: String, expiresIn: Int, memo: TokenDocumentMemo?) -> IssuedToken {
        var t = IssuedToken(accessToken: access, tokenType: .bearer, expiresAt: Date(timeIntervalSince1970: 1_800_000_000.25),
                            expiresIn: expiresIn, scope: ["openid", "offline_access"], sessionID: "ses_1", subject: "al\"ice")
        t.memo = memo
        return t
    }

    func body(_ t: IssuedToken) -> String { String(decoding: Render.tokenResult(.success(t), requestID: "r").body, as: UTF8.self) }

    @Test("the kept bytes are the fresh rendering; the same expires_in reuses them, the next second renders anew")
    func renderedOncePerSecond() throws {
        let memo = TokenDocumentMemo()
        let first = body(token("at-1", expiresIn: 60, memo: memo))
        #expect(first == body(token("at-1", expiresIn: 60, memo: nil)))
        let parsed = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any]
        #expect(parsed?["subject"] as? String == "al\"ice" && parsed?["expires_in"] as? Int == 60)
        // Served from the memo: a token that differs only where the memo is trusted is not re-read.
        #expect(body(token("at-other", expiresIn: 60, memo: memo)) == first)
        let next = body(token("at-1", expiresIn: 59, memo: memo))
        #expect(next == body(token("at-1", expiresIn: 59, memo: nil)) && next != first)
    }

    @Test("in a batch the kept members follow index and status as one object")
    func batchMembers() throws {
        let memo = TokenDocumentMemo()
        _ = body(token("at-1", expiresIn: 60, memo: memo))
        var w = JSONWriter()
        w.beginObject()
        w.int("index", 0)
        w.int("status", 200)
        Render.token(token("at-1", expiresIn: 60, memo: memo), into: &w)
        w.endObject()
        let item = try JSONSerialization.jsonObject(with: Data(w.bytes)) as? [String: Any]
        #expect(item?["index"] as? Int == 0 && item?["access_token"] as? String == "at-1" && item?["session_id"] as? String == "ses_1")
    }
}
