import Foundation
import Testing

/// The IdP sees refreshes in proportion to the sessions used: real processes, 6-second
/// access tokens, a client whose sessions are idle after 10 s without a hand-out.
@Suite("Refresh in proportion to use", .serialized)
struct IdlePolicyTests {
    @Test("a session nobody asks for goes idle (no refresh ahead of expiry), a used one stays proactive; asking wakes the idle one")
    func idleSessionsRest() async throws {
        let w = try await World(accessTTL: 6, extraEnv: ["TOKENBROKER_REFRESH_LOAD_SECONDS": "1", "TOKENBROKER_REFRESH_HORIZON_SECONDS": "10"])
        defer { w.stop() }
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(w.client)", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"], "redirect_after_allowed": [w.appURL],
            "refresh_policy": ["idle_after_seconds": 10, "min_ttl": 1, "grant_lifetime_seconds": 3600, "grant_lifetime_rolling": true]]), 200)
        let busy = try await w.importSession(subject: "busy", expiresIn: 6)
        let quiet = try await w.importSession(subject: "quiet", expiresIn: 6)
        func session(_ id: String) async throws -> HTTP.Reply {
            try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(id)", key: w.workerKey), 200)
        }
        let until = Date().addingTimeInterval(18)
        while Date() < until {
            try expectStatus(try await w.token(busy, body: ["min_ttl": 1]), 200)
            try await Task.sleep(for: .milliseconds(500))
        }
        let b = try await session(busy), q = try await session(quiet)
        #expect(b["refresh_mode"] as? String == "proactive", "\(b.text)")
        #expect(q["refresh_mode"] as? String == "idle", "\(q.text)")
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func date(_ r: HTTP.Reply, _ k: String) -> Date? { (r[k] as? String).flatMap { f.date(from: $0) ?? ISO8601DateFormatter().date(from: $0) } }
        let quietExpiry = try #require(date(q, "access_expires_at"))
        #expect(quietExpiry < Date(), "the idle session's token was left to expire")
        #expect(try #require(date(q, "next_refresh_at")) > quietExpiry, "its next refresh is the keep-alive, after expiry")
        #expect(try #require(date(b, "access_expires_at")) > Date(), "the used session is kept fresh ahead of expiry")
        // Rolling grant lifetime: the busy session's grant end moved with its refreshes.
        #expect(try #require(date(b, "grant_expires_at")) > Date().addingTimeInterval(3590))

        // Asked for, the idle session is refreshed on demand and proactive again.
        let woke = try expectStatus(try await w.token(quiet, body: ["min_ttl": 1]), 200)
        #expect((woke["expires_in"] as? Int ?? 0) > 1)
        #expect(try await session(quiet)["refresh_mode"] as? String == "proactive")
    }
}
