import Foundation
import Testing

@Suite("Single-flight across replicas", .serialized)
struct SingleFlightTests {
    @Test("two brokers, 100 concurrent requests for one expiring session: exactly one refresh at the IdP")
    func oneRefreshAcrossReplicas() async throws {
        let w = try await World(replicas: 2)
        defer { w.stop() }
        let session = try await w.importSession(subject: "alice", expiresIn: 5)
        let before = try await w.idp.stats(client: w.idpClientID)

        let replies = try await withThrowingTaskGroup(of: HTTP.Reply.self) { g in
            for i in 0..<100 { g.addTask { try await w.token(session, replica: i % 2) } }
            return try await g.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.allSatisfy { $0.status == 200 }, "\(replies.filter { $0.status != 200 }.map(\.text).prefix(3))")
        let tokens = Set(replies.compactMap { $0["access_token"] as? String })
        #expect(tokens.count == 1, "every caller gets the same fresh token")
        #expect(replies.allSatisfy { ($0["expires_in"] as? Int ?? 0) > 3000 })

        let after = try await w.idp.stats(client: w.idpClientID)
        #expect(after.refreshCalls - before.refreshCalls == 1)
        #expect(after.refreshesOK - before.refreshesOK == 1)
        #expect(after.reuseDetected == 0)
    }

    @Test("an imported grant without an access token is refreshed at once")
    func importWithoutAccessTokenRefreshes() async throws {
        let w = try await World()
        defer { w.stop() }
        let t = try await w.idp.login(client: w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI, subject: "dora")
        let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey,
                                    json: ["client": w.client, "subject": "dora", "refresh_token": t.refresh])
        try expectStatus(r, 201)
        #expect(r["state"] as? String == "active")
        #expect(r["access_expires_at"] is String)
        #expect(r["access_token"] == nil && r["refresh_token"] == nil, "metadata only")
        #expect(r["grant_expires_at"] is String)
        #expect(try await w.idp.stats(client: w.idpClientID).refreshesOK == 1)
    }

    @Test("an import's expires_at later than the access token's own exp: the exp wins, and the token is refreshed ahead of it")
    func importClampedToExp() async throws {
        let w = try await World(accessTTL: 30)
        defer { w.stop() }
        let t = try await w.idp.login(client: w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI, subject: "gus")
        let exp = try #require(RefreshEngineTests.expiry(of: t.access))
        let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey, json: [
            "client": w.client, "subject": "gus", "refresh_token": t.refresh, "access_token": t.access,
            "expires_at": ISO8601DateFormatter().string(from: Date().addingTimeInterval(3600))])
        try expectStatus(r, 201)
        func instant(_ s: Any?) -> Double? {   // RFC 3339, with or without fractional seconds
            (s as? String).flatMap { RefreshProcessFaultTests.instant($0) ?? ISO8601DateFormatter().date(from: $0)?.timeIntervalSince1970 }
        }
        let shown = try #require(instant(r["access_expires_at"]))
        #expect(shown <= Double(exp) + 0.001, "access_expires_at \(shown) past the token's exp \(exp)")
        let next = try #require(instant(r["next_refresh_at"]))
        #expect(next < Double(exp), "refresh scheduled at \(next), after the token's exp \(exp)")
        let handed = try await w.token(r["session_id"] as! String, body: ["min_ttl": 1])
        try expectStatus(handed, 200)
        #expect(handed["access_token"] as? String == t.access, "the imported token still lives")
        let until = try #require(instant(handed["expires_at"]))
        #expect(until <= Double(exp) + 0.001, "expires_at \(until) past the token's exp \(exp)")
    }

    @Test("lookup by subject and client hands out that subject's token")
    func lookupBySubject() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "erin")
        let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/token", key: w.workerKey,
                                    json: ["subject": "erin", "client": w.client, "min_ttl": 60])
        try expectStatus(r, 200)
        #expect(r["session_id"] as? String == session && r["subject"] as? String == "erin")
        #expect(r.headers["cache-control"] == "no-store" && r.headers["pragma"] == "no-cache", "RFC 6749 §5.1")
        let bySession = try await w.token(session)
        #expect(bySession.headers["cache-control"] == "no-store" && bySession.headers["pragma"] == "no-cache")
    }
}
