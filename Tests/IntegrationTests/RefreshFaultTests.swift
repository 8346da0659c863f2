import BrokerCore
import Foundation
import Testing

/// Refreshes that survive faults, with real processes: the broker over HTTP, the
/// development IdP told to misbehave, PostgreSQL. The IdP's own counters say how many times a
/// refresh token was presented.
@Suite("Refresh faults", .serialized)
struct RefreshFaultTests {
    func session(_ w: World, _ id: String) async throws -> [String: Any] {
        try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(id)", key: w.workerKey).json
    }

    func putClient(_ w: World, secret: String? = nil, extra: [String: Any] = [:]) async throws {
        var body: [String: Any] = ["issuer": w.idp.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic",
                                   "client_secret": secret ?? w.idpSecret, "redirect_uri": w.redirectURI,
                                   "scopes": ["openid", "offline_access"], "redirect_after_allowed": [w.appURL]]
        for (k, v) in extra { body[k] = v }
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(w.client)", key: w.operatorKey, json: body), 200)
    }

    @Test("the IdP rotates and answers 12 s late: presented once, the caller gets 503 with Retry-After at its deadline, the session ends active with the new tokens")
    func lateAnswer() async throws {
        let w = try await World(extraEnv: ["TOKENBROKER_LOCK_TIMEOUT_SECONDS": "3"])
        defer { w.stop() }
        let id = try await w.importSession(subject: "late", expiresIn: 30)
        let old = try await w.token(id, body: ["min_ttl": 10])["access_token"] as? String
        try await w.idp.refreshFault("late", delayMS: 12_000)
        let started = Date()
        let waited = try await w.token(id, body: ["min_ttl": 60])
        #expect(waited.status == 503 && waited.headers["retry-after"] != nil)
        #expect(Date().timeIntervalSince(started) < 8)
        // While the attempt is out, nobody presents the token again.
        try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 503)
        let deadline = Date().addingTimeInterval(25)
        while Date() < deadline, try await session(w, id)["refresh_attempt_started_at"] as? String != nil {
            try await Task.sleep(for: .milliseconds(250))
        }
        let doc = try await session(w, id)
        #expect(doc["state"] as? String == "active" && doc["refresh_attempt_started_at"] as? String == nil)
        let fresh = try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 200)
        #expect(fresh["access_token"] as? String != old)
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.presented == 1 && p.reuse == 0)
    }

    @Test("a batch while the IdP holds refreshes for 20 s: fresh items come by the deadline with the life they promise, the others are refresh_busy with retry_after")
    func batchWithHeldRefreshes() async throws {
        let w = try await World(extraEnv: ["TOKENBROKER_LOCK_TIMEOUT_SECONDS": "3"])
        defer { w.stop() }
        var fresh: [String] = [], expiring: [String] = []
        for i in 0..<3 { fresh.append(try await w.importSession(subject: "fresh\(i)", expiresIn: 3000)) }
        for i in 0..<3 { expiring.append(try await w.importSession(subject: "expiring\(i)", expiresIn: 30)) }
        try await w.idp.stall(seconds: 20)
        let started = Date()
        let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/tokens:batch", key: w.workerKey,
                                    json: ["min_ttl": 60, "items": (fresh + expiring).map { ["session_id": $0] }])
        let waited = Date().timeIntervalSince(started)
        try expectStatus(r, 200)
        let items = try #require(r["results"] as? [[String: Any]])
        #expect(waited < 4.5, "the batch waited \(waited) s")
        for item in items.prefix(3) {
            #expect(item["status"] as? Int == 200)
            if let at = item["access_token"] as? String { TestEnv.secret(at) }
            HandOutLife.check(item, minTTL: 60)
        }
        for item in items.suffix(3) {
            #expect(item["status"] as? Int == 503 && item["error"] as? String == "refresh_busy" && item["retry_after"] as? Int == 1)
        }
        // The held refreshes finish after the stall, each presented once.
        try await Task.sleep(for: .seconds(18))
        for id in expiring { try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 200) }
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.presented == 3 && p.reuse == 0)
    }

    @Test("the IdP rotates and drops the connection: never presented again; introspection says inactive, so refresh_outcome_lost")
    func droppedAfterActing() async throws {
        let w = try await World()
        defer { w.stop() }
        let id = try await w.importSession(subject: "drop", expiresIn: 30)
        try await w.idp.refreshFault("drop")
        let r = try await w.token(id, body: ["min_ttl": 60])
        #expect(r.status == 409 && r["error"] as? String == "needs_reauth")
        let doc = try await session(w, id)
        #expect(doc["state"] as? String == "needs_reauth" && doc["reason"] as? String == "refresh_outcome_lost")
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.presented == 1 && p.reuse == 0 && p.introspections >= 1)
        #expect(w.brokers[0].process.output.contains("refresh_outcome_lost"))
    }

    @Test("refreshes ride a warm connection; when the IdP rotates and drops it, libcurl's silent re-send is refused: presented once")
    func droppedOnWarmConnection() async throws {
        let w = try await World()
        defer { w.stop() }
        let id = try await w.importSession(subject: "warm", expiresIn: 30)
        try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 200)
        let opened = { () async throws -> Int in try await w.idp.counters(client: w.idpClientID)["connections_opened"] as? Int ?? -1 }
        let before = try await opened()
        for _ in 0..<3 { try expectStatus(try await w.token(id, body: ["force_refresh": true]), 200) }
        // Three refreshes on the connection already open (the test's own stats calls may add one).
        #expect(try await opened() - before <= 1)
        // libcurl re-sends a request whose reused connection closes without an answer; for a
        // rotated refresh token that second copy would be reuse, and the family revoked.
        try await w.idp.refreshFault("drop")
        let r = try await w.token(id, body: ["force_refresh": true])
        #expect(r.status == 409 && r["error"] as? String == "needs_reauth")
        #expect(try await session(w, id)["reason"] as? String == "refresh_outcome_lost")
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.presented == 5 && p.reuse == 0 && p.introspections >= 1)
    }

    @Test("the connection drops before the IdP acts: introspection says active, the refresh is retried and succeeds")
    func droppedBeforeActing() async throws {
        let w = try await World()
        defer { w.stop() }
        let id = try await w.importSession(subject: "early", expiresIn: 30)
        try await w.idp.refreshFault("drop_unprocessed")
        try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 200)
        #expect(try await session(w, id)["state"] as? String == "active")
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.reuse == 0 && p.introspections >= 1)
    }

    @Test("without introspection: fail_closed never re-presents a lost refresh; retry re-presents one the IdP did not act on")
    func ambiguousPolicies() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.settings(introspection: false)
        let closed = try await w.importSession(subject: "closed", expiresIn: 30)
        try await w.idp.refreshFault("drop")
        try expectStatus(try await w.token(closed, body: ["min_ttl": 60]), 409)
        #expect(try await session(w, closed)["reason"] as? String == "refresh_outcome_lost")
        #expect(try await w.idp.presentations(client: w.idpClientID).presented == 1)

        try await putClient(w, extra: ["on_ambiguous_refresh": "retry"])
        let retried = try await w.importSession(subject: "retried", expiresIn: 30)
        try await w.idp.refreshFault("drop_unprocessed")
        try expectStatus(try await w.token(retried, body: ["min_ttl": 60]), 200)
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.presented == 3 && p.reuse == 0 && p.introspections == 0)
    }

    @Test("a refresh refused with 400 and an empty body (glewlwyd's answer to a wrong client secret): the session kept, backing off, reported; the next attempt succeeds")
    func bareRefusal() async throws {
        let w = try await World()
        defer { w.stop() }
        let id = try await w.importSession(subject: "bare", expiresIn: 30)
        try await w.idp.fail(status: 400, body: "", count: 1)
        let refused = try await w.token(id, body: ["min_ttl": 60])
        #expect(refused.status == 503 && refused["error"] as? String == "idp_unavailable" && refused.headers["retry-after"] != nil)
        // Within the backoff nobody calls the IdP again.
        for _ in 0..<3 { try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 503) }
        #expect(try await w.idp.stats(client: w.idpClientID).refreshCalls == 1)
        let doc = try await session(w, id)
        #expect(doc["state"] as? String == "active" && (doc["last_error"] as? String ?? "").contains("HTTP 400"), "\(doc)")
        #expect(w.brokers[0].process.output.contains("refresh_refused_retried"))
        // After the backoff the refresh token, never spent, works.
        let deadline = Date().addingTimeInterval(10)
        var r = refused
        while r.status != 200, Date() < deadline {
            try await Task.sleep(for: .milliseconds(300))
            r = try await w.token(id, body: ["min_ttl": 60])
        }
        try expectStatus(r, 200)
    }

    @Test("a 5xx with an HTML body is an outage: 503 with Retry-After, the session stays active and recovers")
    func htmlOutage() async throws {
        let w = try await World()
        defer { w.stop() }
        let id = try await w.importSession(subject: "html", expiresIn: 30)
        try await w.idp.fail(status: 502, body: "<html>bad gateway</html>", contentType: "text/html", count: 1)
        let r = try await w.token(id, body: ["min_ttl": 60])
        #expect(r.status == 503 && r["error"] as? String == "idp_unavailable" && r.headers["retry-after"] != nil)
        #expect(try await session(w, id)["state"] as? String == "active")
        try await Task.sleep(for: .milliseconds(2_200))   // the session's backoff and the client's circuit
        try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 200)
    }

    @Test("a wrong client secret: its own error code, an error log line, a per-client metric; fixing the secret recovers")
    func wrongClientSecret() async throws {
        let w = try await World()
        defer { w.stop() }
        let id = try await w.importSession(subject: "secret", expiresIn: 30)
        try await putClient(w, secret: "not-the-secret")
        let r = try await w.token(id, body: ["min_ttl": 60])
        #expect(r.status == 502 && r["error"] as? String == "idp_client_rejected")
        #expect(try await session(w, id)["state"] as? String == "active")
        #expect(w.brokers[0].process.output.contains("\"code\":\"idp_client_rejected\""))
        let metrics = try await HTTP.get(w.brokers[0].url + "/metrics").text
        #expect(metrics.contains("tokenbroker_refresh_client_rejected_total{client=\"\(w.tenant)/\(w.client)\"} 1"))
        try await putClient(w)
        try await Task.sleep(for: .milliseconds(2_200))
        try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 200)
    }

    @Test("an IdP that wants DPoP proofs (invalid_dpop_proof): the session stays active, the caller and the log say why, the refresh token still works")
    func dpopRequired() async throws {
        let w = try await World()
        defer { w.stop() }
        let id = try await w.importSession(subject: "dpop", expiresIn: 3000)
        try await w.idp.fail(status: 400, body: #"{"error":"invalid_dpop_proof","error_description":"DPoP proof required"}"#,
                             contentType: "application/json", count: 1)
        let r = try await w.token(id, body: ["force_refresh": true])
        #expect(r.status == 502 && r["error"] as? String == "idp_client_rejected")
        #expect(try await session(w, id)["state"] as? String == "active", "a DPoP refusal consumed nothing: no needs_reauth")
        #expect(w.brokers[0].process.output.contains("\"code\":\"idp_requires_dpop\""))
        try await Task.sleep(for: .milliseconds(2_200))   // the client's circuit: one probe after the backoff
        try expectStatus(try await w.token(id, body: ["force_refresh": true]), 200)
        #expect(try await w.idp.stats(client: w.idpClientID).reuseDetected == 0)
    }

    @Test("min_ttl = lifetime is refused with no IdP call; without min_ttl a worker always gets a token")
    func minTTLRules() async throws {
        let w = try await World(accessTTL: 60)
        defer { w.stop() }
        let id = try await w.importSession(subject: "ttl", expiresIn: 20)
        let r = try expectStatus(try await w.token(id, body: [:]), 200)   // the client's default 60 would never fit a 60 s token
        #expect((r["expires_in"] as? Int ?? 0) >= 58)
        let calls = try await w.idp.stats(client: w.idpClientID).refreshCalls
        let refused = try await w.token(id, body: ["min_ttl": 60])
        #expect(refused.status == 422 && refused["max_ttl"] as? Int == 59)
        #expect(try await w.idp.stats(client: w.idpClientID).refreshCalls == calls)
        try expectStatus(try await w.token(id, body: [:]), 200)
        #expect(try await w.idp.stats(client: w.idpClientID).refreshCalls == calls)
    }

    @Test("IdP 503 with Retry-After 5 for 12 s, 20 callers on 20 expiring sessions: about one IdP call per client per interval")
    func circuitUnderRetryAfter() async throws {
        let w = try await World()
        defer { w.stop() }
        var ids: [String] = []
        for i in 0..<20 { ids.append(try await w.importSession(subject: "c\(i)", expiresIn: 30)) }
        try await w.idp.fail(status: 503, retryAfter: 5, count: 10_000)
        try expectStatus(try await w.token(ids[0], body: ["min_ttl": 60]), 503)   // the one call before the circuit knows
        let end = Date().addingTimeInterval(12)
        let all = ids
        try await withThrowingTaskGroup(of: Void.self) { g in
            for c in 0..<20 {
                g.addTask {
                    while Date() < end {
                        let r = try await w.token(all[(c + Int.random(in: 0..<20)) % 20], body: ["min_ttl": 60])
                        #expect(r.status == 503)
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
            }
            try await g.waitForAll()
        }
        let calls = try await w.idp.stats(client: w.idpClientID).refreshCalls
        #expect(calls >= 2 && calls <= 1 + 12 / 5 + 1, "IdP calls: \(calls)")
        try await w.idp.fail(status: 503, retryAfter: nil, count: 0)
    }

    @Test("forged logout tokens every 200 ms and a key rotation: refreshed ID tokens still verify, no session lost, JWKS fetches bounded")
    func keyRotationUnderForgedLogoutTokens() async throws {
        let w = try await World()
        defer { w.stop() }
        var ids: [String] = []
        for i in 0..<8 { ids.append(try await w.importSession(subject: "k\(i)", expiresIn: 3000)) }
        try expectStatus(try await w.token(ids[0], body: ["force_refresh": true]), 200)   // keys cached
        func forged(_ n: Int) -> String {
            let h = Base64URL.encode(Array("{\"alg\":\"ES256\",\"kid\":\"forged-\(n)\",\"typ\":\"logout+jwt\"}".utf8))
            let c = Base64URL.encode(Array("{\"iss\":\"\(w.idp.issuer)\",\"aud\":\"\(w.idpClientID)\",\"sub\":\"k0\"}".utf8))
            return h + "." + c + "." + Base64URL.encode((0..<64).map { _ in UInt8.random(in: 0...255) })
        }
        let url = w.brokers[0].url + "/v1/backchannel-logout/\(w.tenant)/\(w.client)"
        for n in 0..<5 {
            let r = try await HTTP.request("POST", url, body: Data("logout_token=\(forged(n))".utf8),
                                           headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(r.status == 400)
            try await Task.sleep(for: .milliseconds(200))
        }
        try await w.idp.rotateKeys()
        // A login right after the rotation: its ID token names the new kid; forged logout
        // tokens have spent only their own re-fetch budget.
        try expectStatus(try await w.login(subject: "k-new"), 200)
        try await w.idp.rotateKeys()
        for id in ids {
            try expectStatus(try await w.token(id, body: ["force_refresh": true]), 200)
            _ = try await HTTP.request("POST", url, body: Data("logout_token=\(forged(99))".utf8),
                                       headers: ["Content-Type": "application/x-www-form-urlencoded"])
        }
        for id in ids { #expect(try await session(w, id)["state"] as? String == "active") }
        let fetches = try await w.idp.counters(client: w.idpClientID)["jwks_fetches"] as? Int ?? 99
        #expect(fetches <= 5, "JWKS fetches: \(fetches)")   // first use, a forged kid, the login's, the refreshes' (≤ 1/s)
    }

    @Test("three replicas, 300 sessions with 10 s tokens, the IdP stalled 20 s mid-run: no reuse, no session lost")
    func stallAcrossReplicas() async throws {
        let w = try await World(replicas: 3, accessTTL: 10)
        defer { w.stop() }
        let subjects = (0..<300).map { "s\($0)" }
        let grants = try await w.idp.grants(client: w.idpClientID, subjects: subjects)
        for s in subjects {
            try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey,
                                                 json: ["client": w.client, "subject": s, "refresh_token": grants[s]!]), 201)
        }
        try await Task.sleep(for: .seconds(6))
        try await w.idp.stall(seconds: 20)
        try await Task.sleep(for: .seconds(32))
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.reuse == 0)
        let lost = try runPSQL("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND state <> 'active'")
        #expect(lost.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        let stuck = try runPSQL("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND attempt_id IS NOT NULL")
        #expect(stuck.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }
}
