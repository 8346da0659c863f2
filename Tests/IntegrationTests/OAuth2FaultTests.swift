import Foundation
import Testing

/// The refresh promise for plain OAuth 2.0 providers, with real processes: the development
/// IdP's personalities told to misbehave after acting, the broker over HTTP, PostgreSQL. A
/// rotating refresh token (`oauth2-form`: RFC 8414 metadata, form-encoded answers) is never
/// presented twice, whatever answer was lost; a reusable one (Dropbox's) is simply presented
/// again. The personality's counters say how often each was presented.
@Suite("OAuth 2.0 refresh faults", .serialized)
struct OAuth2FaultTests {
    /// A tenant client at `personality`: `oauth2-form` through its RFC 8414 metadata; others as
    /// their catalogue entry pointed at the personality (CatalogueTests.patch).
    func register(_ w: World, _ personality: String) async throws -> String {
        let all = try await w.idp.personalities()
        let p = try #require(all[personality])
        let clientID = TestEnv.uniqueName(personality), secret = "s-" + UUID().uuidString
        try await w.idp.registerPersonalityClient(clientID, secret: secret, redirectURI: w.redirectURI)
        var body: [String: Any] = ["client_id": clientID, "client_secret": secret, "auth_method": "client_secret_basic",
                                   "redirect_uri": w.redirectURI, "scopes": ["read"]]
        if personality == "oauth2-form" {
            body["protocol"] = "oauth2"
            body["issuer"] = w.idp.issuer + "/p/oauth2-form"
        } else {
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: CatalogueTests.catalogue.appendingPathComponent(personality + ".json"))) as? [String: Any])
            body["provider"] = personality
            body["descriptor"] = CatalogueTests.patch(entry: entry, personality: p)
        }
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(personality)", key: w.operatorKey, json: body), 201)
        return clientID
    }

    /// Sessions imported from grants made at the personality, their access tokens `expiresIn` from now.
    func sessions(_ w: World, _ personality: String, clientID: String, subjects: [String], expiresIn: TimeInterval = 30) async throws -> [String] {
        let grants = try await w.idp.grants(client: clientID, subjects: subjects, personality: personality)
        let exp = ISO8601DateFormatter().string(from: Date().addingTimeInterval(expiresIn))
        var ids: [String] = []
        for s in subjects {
            let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey, json: [
                "client": personality, "subject": s, "refresh_token": grants[s]!, "access_token": "at-" + UUID().uuidString, "expires_at": exp])
            ids.append(try expectStatus(r, 201)["session_id"] as! String)
        }
        return ids
    }

    func stats(_ w: World, _ clientID: String) async throws -> [String: Any] {
        try await w.idp.call("GET", w.idp.issuer + "/stats?client_id=\(clientID)").json
    }

    func state(_ w: World, _ id: String) async throws -> [String: Any] {
        try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(id)", key: w.workerKey).json
    }

    @Test("a rotating OAuth 2.0 refresh token whose answer is lost after the provider acted: never presented again, the session ends refresh_outcome_lost")
    func rotatingLost() async throws {
        let w = try await World()
        defer { w.stop() }
        let clientID = try await register(w, "oauth2-form")
        let id = try await sessions(w, "oauth2-form", clientID: clientID, subjects: ["lost"])[0]
        try await w.idp.refreshFault("drop")
        let r = try await w.token(id, body: ["min_ttl": 60])
        #expect(r.status == 409 && r["error"] as? String == "needs_reauth")
        let doc = try await state(w, id)
        #expect(doc["state"] as? String == "needs_reauth" && doc["reason"] as? String == "refresh_outcome_lost", "\(doc)")
        let s = try await stats(w, clientID)
        #expect(s["refresh_presentations"] as? Int == 1 && s["reuse_detected"] as? Int == 0, "\(s)")
    }

    @Test("a reusable refresh token whose answer is lost after the provider acted: presented again at once, the session stays active")
    func reusableLost() async throws {
        let w = try await World()
        defer { w.stop() }
        let clientID = try await register(w, "dropbox")
        let id = try await sessions(w, "dropbox", clientID: clientID, subjects: ["lost"])[0]
        try await w.idp.refreshFault("drop")
        let r = try await w.token(id, body: ["min_ttl": 60])
        // The lost attempt is retried by the refresh machine; the caller gets the new token, or
        // is told to come back while the retry runs.
        #expect(r.status == 200 || r.status == 503, "\(r.status)")
        let deadline = Date().addingTimeInterval(15)
        var fresh = r
        while fresh.status != 200, Date() < deadline {
            try await Task.sleep(for: .milliseconds(250))
            fresh = try await w.token(id, body: ["min_ttl": 60])
        }
        try expectStatus(fresh, 200)
        let doc = try await state(w, id)
        #expect(doc["state"] as? String == "active" && doc["refresh_attempt_started_at"] is NSNull, "\(doc)")
        let s = try await stats(w, clientID)
        #expect(s["refresh_presentations"] as? Int == 2 && (s["refresh_repeats"] as? Int ?? 0) >= 1 && s["reuse_detected"] as? Int == 0, "\(s)")
        #expect(w.brokers[0].process.output.contains("refresh token is reusable"))
    }

    @Test("late answers (8 s) on a rotating and on a reusable provider: presented once, the caller told to come back, the session active with the new token",
          arguments: ["oauth2-form", "dropbox"])
    func lateAnswer(_ personality: String) async throws {
        let w = try await World(extraEnv: ["TOKENBROKER_LOCK_TIMEOUT_SECONDS": "3"])
        defer { w.stop() }
        let clientID = try await register(w, personality)
        let id = try await sessions(w, personality, clientID: clientID, subjects: ["late"])[0]
        try await w.idp.refreshFault("late", delayMS: 8_000)
        let started = Date()
        let waited = try await w.token(id, body: ["min_ttl": 60])
        #expect(waited.status == 503 && waited.headers["retry-after"] != nil && Date().timeIntervalSince(started) < 6)
        let deadline = Date().addingTimeInterval(20)
        var fresh = waited
        while fresh.status != 200, Date() < deadline {
            try await Task.sleep(for: .milliseconds(500))
            fresh = try await w.token(id, body: ["min_ttl": 60])
        }
        try expectStatus(fresh, 200)
        let s = try await stats(w, clientID)
        #expect(s["refresh_presentations"] as? Int == 1 && s["reuse_detected"] as? Int == 0, "\(s)")
        #expect(try await state(w, id)["state"] as? String == "active")
    }

    @Test("three replicas refresh 150 sessions of a form-encoded rotating provider, each twice: no refresh token presented twice")
    func storm() async throws {
        let w = try await World(replicas: 3)
        defer { w.stop() }
        let clientID = try await register(w, "oauth2-form")
        let ids = try await sessions(w, "oauth2-form", clientID: clientID, subjects: (0..<150).map { "s\($0)" }, expiresIn: 1)
        // Every replica asks for every session at once, twice over: each refresh is made once. A
        // caller that waited its lock timeout out is told to come back (503, refresh_busy); on a
        // loaded machine some are.
        for round in 0..<2 {
            try await withThrowingTaskGroup(of: HTTP.Reply.self) { group in
                for (i, id) in ids.enumerated() {
                    for replica in 0..<3 {
                        group.addTask { try await w.token(id, replica: replica, body: ["min_ttl": 60, "force_refresh": round == 1 && replica == i % 3]) }
                    }
                }
                for try await r in group {
                    #expect(r.status == 200 || (r.status == 503 && r.headers["retry-after"] != nil), "\(r.status) \(r["error"] ?? "")")
                }
            }
        }
        // Afterwards every session hands out a token.
        for id in ids {
            var r = try await w.token(id, body: ["min_ttl": 60])
            for _ in 0..<20 where r.status != 200 {
                try await Task.sleep(for: .milliseconds(250))
                r = try await w.token(id, body: ["min_ttl": 60])
            }
            try expectStatus(r, 200)
        }
        let s = try await stats(w, clientID)
        #expect(s["reuse_detected"] as? Int == 0 && s["refresh_repeats"] as? Int ?? 0 == 0, "\(s)")
        #expect((s["refreshes_ok"] as? Int ?? 0) >= 150, "\(s)")
        let lost = try runPSQL("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state <> 'active'")
        #expect(lost.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }
}
