import Foundation
import Testing

@Suite("Revocation, listing and audit", .serialized)
struct RevocationTests {
    func revoke(_ w: World, _ session: String, replica: Int = 0, key: String? = nil, query: String = "") async throws -> HTTP.Reply {
        try await HTTP.request("DELETE", w.brokers[replica].url + "/v1/tenants/\(w.tenant)/sessions/\(session)\(query)", key: key ?? w.workerKey)
    }

    /// Polls `check` every 50 ms until it holds or `seconds` pass; returns whether it held.
    func eventually(within seconds: Double, _ check: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if try await check() { return true }
            try await Task.sleep(for: .milliseconds(50))
        } while Date() < deadline
        return false
    }

    @Test("retention: revocation and needs_reauth stamp ended_at; `tokenbroker purge` deletes exactly the ended sessions past TOKENBROKER_RETENTION_SESSION_DAYS")
    func retention() async throws {
        let w = try await World()
        defer { w.stop() }
        let old = try await w.importSession(subject: "r-old"), recent = try await w.importSession(subject: "r-recent")
        let dead = try await w.importSession(subject: "r-dead"), live = try await w.importSession(subject: "r-live")
        for s in [old, recent] { try expectStatus(try await revoke(w, s), 200) }
        try await w.idp.revokeSubject("r-dead")
        #expect(try expectStatus(try await w.token(dead, body: ["force_refresh": true]), 409)["error"] as? String == "needs_reauth")
        func ended(_ s: String) throws -> String {
            try runPSQL("SELECT coalesce((SELECT state || ' ' || (ended_at IS NOT NULL) FROM sessions WHERE tenant_id = '\(w.tenant)' AND id = '\(s)'), 'gone')")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try [old, recent, dead, live].map(ended) == ["revoked true", "revoked true", "needs_reauth true", "active false"])
        _ = try runPSQL("UPDATE sessions SET ended_at = now() - interval '31 days' WHERE tenant_id = '\(w.tenant)' AND id IN ('\(old)', '\(dead)')")
        _ = try runPSQL("UPDATE sessions SET ended_at = now() - interval '29 days' WHERE tenant_id = '\(w.tenant)' AND id = '\(recent)'")
        let env = ["DATABASE_URL": try TestEnv.databaseURL(), "TOKENBROKER_RETENTION_SESSION_DAYS": "30", "TOKENBROKER_RETENTION_AUDIT_DAYS": "0"]
        let purge = try runCommand("tokenbroker", ["purge"], env: env)
        #expect(purge.status == 0, "\(purge.err)")
        let summary = try JSONSerialization.jsonObject(with: Data(purge.out.utf8)) as? [String: [String: Any]]
        #expect((summary?["deleted"]?["ended_sessions"] as? Int ?? 0) >= 2 && summary?["kept_days"]?["audit_events"] is NSNull, "\(purge.out)")
        #expect(try [old, recent, dead, live].map(ended) == ["gone", "revoked true", "gone", "active false"])
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(old)", key: w.workerKey), 404)
    }

    @Test("end_session: the RP-initiated logout URL for the browser (id_token_hint, client_id, state, post_logout_redirect_uri), redirect_required; the broker calls nothing itself; a redirect not allowed is 400 and changes nothing")
    func endSessionURL() async throws {
        let w = try await World()
        defer { w.stop() }
        let s = try expectStatus(try await w.login(subject: "leaving"), 200)["session_id"] as! String
        let bad = try await revoke(w, s, query: "?end_session=true&post_logout_redirect_uri=https://evil.example/")
        #expect(bad.status == 400)
        try expectStatus(try await w.token(s), 200)   // still active
        let r = try expectStatus(try await revoke(w, s, query: "?end_session=true&post_logout_redirect_uri=" + (w.appURL.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")), 200)
        #expect(r["state"] as? String == "revoked" && r["idp_logout"] as? String == "redirect_required")
        let url = try #require(URLComponents(string: r["end_session_url"] as? String ?? ""))
        let q = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        TestEnv.secret(q["id_token_hint"] ?? "")
        #expect(url.path == "/end_session" && q["client_id"] == w.idpClientID && q["post_logout_redirect_uri"] == w.appURL)
        #expect(q["state"] == r["end_session_state"] as? String && (q["state"]?.count ?? 0) >= 22)
        #expect(q["id_token_hint"]?.split(separator: ".").count == 3, "the session's ID token as hint")
        let before = try await w.idp.counters(client: w.idpClientID)["end_sessions"] as? Int
        #expect(before == 0, "the broker called end_session itself")
        // The browser follows it and the IdP logs the user out (the development IdP redirects only
        // to a post-logout URI registered with it, which appURL is not: it answers 200).
        let back = try await HTTP.get(url.url!.absoluteString)
        #expect(back.status == 200)
        #expect(try await w.idp.counters(client: w.idpClientID)["end_sessions"] as? Int == 1)
        let audit = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?action=session.end_session", key: w.workerKey), 200)
        #expect((audit["events"] as? [[String: Any]])?.first?["outcome"] as? String == "redirect_required", "\(audit.text)")
    }

    @Test("revoke one: dead at the IdP, 409 on every replica within a second, idempotent")
    func revokeOne() async throws {
        let w = try await World(replicas: 2)
        defer { w.stop() }
        let t = try await w.idp.login(client: w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI, subject: "alice")
        let exp = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3000))
        let session = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey, json: [
            "client": w.client, "subject": "alice", "refresh_token": t.refresh, "access_token": t.access, "expires_at": exp]), 201)["session_id"] as! String
        for replica in 0..<2 { try expectStatus(try await w.token(session, replica: replica), 200) }   // cached on both

        let r = try expectStatus(try await revoke(w, session), 200)
        #expect(r["state"] as? String == "revoked" && r["idp_revocation"] as? String == "confirmed")
        for replica in 0..<2 {
            let dead = try await eventually(within: 1) { try await w.token(session, replica: replica).status == 409 }
            #expect(dead, "replica \(replica) still hands out the token")
        }
        #expect(try await w.token(session, replica: 1)["error"] as? String == "revoked")
        // The IdP revoked the family: the refresh token is refused there, whoever presents it.
        #expect(try await w.idp.refreshDirectly(client: w.idpClientID, secret: w.idpSecret, refreshToken: t.refresh) == 400)
        let c = try await w.idp.counters(client: w.idpClientID)
        #expect(c["revocations"] as? Int == 2 && c["active_families"] as? Int == 0)
        // Idempotent: the same answer, no second call to the IdP.
        let again = try expectStatus(try await revoke(w, session, replica: 1), 200)
        #expect(again["state"] as? String == "revoked" && again["idp_revocation"] as? String == "confirmed")
        #expect(try await w.idp.counters(client: w.idpClientID)["revocations"] as? Int == 2)
        #expect(try runPSQL("SELECT count(*) FROM sessions WHERE id = '\(session)' AND (access_token IS NOT NULL OR refresh_token IS NOT NULL OR id_token IS NOT NULL)")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        try expectStatus(try await revoke(w, "ses_nope"), 404)
    }

    @Test("IdP unreachable: the session is blocked at once, and the outbox revokes it at the IdP later")
    func outbox() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try expectStatus(try await w.login(subject: "bob"), 200)["session_id"] as! String
        try await w.idp.fail(status: 503, retryAfter: nil, count: 2, endpoint: "revoke")
        let r = try expectStatus(try await revoke(w, session), 200)
        #expect(r["state"] as? String == "revoked" && r["idp_revocation"] as? String == "pending")
        try expectStatus(try await w.token(session), 409)
        #expect(try await w.idp.counters(client: w.idpClientID)["active_families"] as? Int == 1)
        let delivered = try await eventually(within: 20) {
            try await w.idp.counters(client: w.idpClientID)["active_families"] as? Int == 0
        }
        #expect(delivered)
        let confirmed = try await eventually(within: 5) { try await revoke(w, session)["idp_revocation"] as? String == "confirmed" }
        #expect(confirmed)
    }

    @Test("an issuer without a revocation_endpoint: the grant is erased here, idp_revocation unsupported (repeats too), nothing left in the outbox, the audit and the log say why")
    func revocationUnsupported() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.settings(revocation: false)
        let session = try expectStatus(try await w.login(subject: "nora"), 200)["session_id"] as! String
        let r = try expectStatus(try await revoke(w, session), 200)
        #expect(r["state"] as? String == "revoked" && r["idp_revocation"] as? String == "unsupported", "\(r["idp_revocation"] ?? "-")")
        try expectStatus(try await w.token(session), 409)
        let outbox = try runPSQL("SELECT count(*) FROM revocation_outbox WHERE tenant_id = '\(w.tenant)'").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(outbox == "0", "nothing waits for an endpoint that does not exist")
        let again = try expectStatus(try await revoke(w, session), 200)
        #expect(again["idp_revocation"] as? String == "unsupported")
        let audit = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?action=session.revoke&session=\(session)",
                                                        key: w.workerKey), 200)
        #expect((audit["events"] as? [[String: Any]])?.contains { $0["outcome"] as? String == "idp_unsupported" } == true, "\(audit.text)")
        #expect(w.brokers[0].process.output.contains("\"code\":\"revocation_unsupported\""))
    }

    @Test("a revocation racing a refresh wins at once: the tokens the refresh brings back are revoked too, never handed out")
    func racingRefresh() async throws {
        let w = try await World(replicas: 2)
        defer { w.stop() }
        let session = try expectStatus(try await w.login(subject: "carol"), 200)["session_id"] as! String
        try await w.idp.refreshFault("late", delayMS: 1_500)   // rotated at once, answered 1.5 s later
        async let refreshed = w.token(session, replica: 0, body: ["force_refresh": true])
        try await Task.sleep(for: .milliseconds(400))          // the refresh is out (its attempt recorded, no lock held)
        let started = Date()
        let r = try expectStatus(try await revoke(w, session, replica: 1), 200)
        #expect(Date().timeIntervalSince(started) < 1)          // it does not wait for the IdP's answer
        #expect(r["idp_revocation"] as? String == "confirmed")
        #expect(try await refreshed.status == 409)
        // The refresh's answer found the session revoked: its new refresh token went to the outbox.
        let all = try await eventually(within: 10) { try await w.idp.counters(client: w.idpClientID)["revocations"] as? Int == 3 }
        #expect(all)
        let c = try await w.idp.counters(client: w.idpClientID)
        #expect((c["token_calls"] as? [String: Int])?["refresh_token"] == 1 && c["active_families"] as? Int == 0)
        for replica in 0..<2 { try expectStatus(try await w.token(session, replica: replica), 409) }
    }

    @Test("listing: filters and keyset pagination, metadata only")
    func listing() async throws {
        let w = try await World()
        defer { w.stop() }
        var ids: [String] = []
        for i in 0..<5 { ids.append(try await w.importSession(subject: i == 4 ? "dave" : "erin")) }
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""),
                                                           key: w.workerKey), 200)
            let sessions = page["sessions"] as! [[String: Any]]
            #expect(sessions.count <= 2)
            #expect(sessions.allSatisfy { $0["access_token"] == nil && $0["refresh_token"] == nil && $0["id_token"] == nil })
            seen += sessions.map { $0["session_id"] as! String }
            cursor = page["next_cursor"] as? String
        } while cursor != nil
        #expect(seen == ids.reversed())   // newest first, each once
        let dave = try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions?subject=dave", key: w.workerKey)
        #expect((dave["sessions"] as? [[String: Any]])?.map { $0["session_id"] as! String } == [ids[4]])
        try expectStatus(try await revoke(w, ids[0]), 200)
        let revoked = try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions?state=revoked&client=\(w.client)", key: w.workerKey)
        #expect((revoked["sessions"] as? [[String: Any]])?.map { $0["session_id"] as! String } == [ids[0]])
        let future = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3600))
        let idle = try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions?idle_since=\(future)", key: w.workerKey)
        #expect((idle["sessions"] as? [[String: Any]])?.count == 5)
        for bad in ["state=gone", "limit=0", "limit=1001", "cursor=%%%", "created_before=yesterday", "subjekt=dave", "subject=a&subject=b"] {
            let r = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions?\(bad)", key: w.workerKey), 400)
            #expect(r["error"] as? String == "invalid_request", "\(bad)")
        }
    }

    @Test("audit: revocations and token hand-outs are recorded and listed")
    func audit() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "frank")
        try expectStatus(try await w.token(session), 200)
        try expectStatus(try await revoke(w, session), 200)
        let r = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?session=\(session)", key: w.workerKey), 200)
        let actions = Set((r["events"] as? [[String: Any]] ?? []).map { "\($0["action"]!):\($0["outcome"]!)" })
        #expect(actions.isSuperset(of: ["session.import:ok", "token.issue:cached", "session.revoke:ok", "session.revoke_at_idp:refresh_token"]))
        let only = try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?action=session.revoke&limit=1", key: w.workerKey)
        #expect((only["events"] as? [[String: Any]])?.map { $0["action"] as! String } == ["session.revoke"])
    }

    @Test("an admin key of tenant A cannot list, revoke or read the audit of tenant B")
    func crossTenant() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try await w.importSession(subject: "gina")
        let other = TestEnv.uniqueName("t")
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(other)", key: w.operatorKey, json: ["name": "B"]), 201)
        let keyB = try await w.newKey(roles: ["admin"], tenants: [other])
        let b = w.brokers[0].url + "/v1/tenants/\(w.tenant)"
        try expectStatus(try await HTTP.get(b + "/sessions", key: keyB), 404)
        try expectStatus(try await revoke(w, session, key: keyB), 404)
        try expectStatus(try await HTTP.get(b + "/audit", key: keyB), 404)
        // And B's own listing does not show A's sessions.
        let own = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(other)/sessions", key: keyB), 200)
        #expect((own["sessions"] as? [[String: Any]])?.isEmpty == true)
        try expectStatus(try await w.token(session), 200)   // untouched
    }
}
