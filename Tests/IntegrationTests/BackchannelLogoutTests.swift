import Foundation
import Testing

@Suite("Back-channel logout receiver (OpenID Connect Back-Channel Logout 1.0)", .serialized)
struct BackchannelLogoutTests {
    func logoutToken(_ w: World, _ claims: [String: Any]) async throws -> String {
        var body = claims
        body["client_id"] = w.idpClientID
        let token = try await HTTP.post(w.idp.issuer + "/admin/logout-token", json: body)["logout_token"] as! String
        TestEnv.secret(token)
        return token
    }

    func deliver(_ w: World, _ token: String, client: String? = nil) async throws -> HTTP.Reply {
        let form = "logout_token=" + token.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._")))!
        return try await HTTP.request("POST", w.brokers[0].url + "/v1/backchannel-logout/\(w.tenant)/\(client ?? w.client)",
                                      body: Data(form.utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"])
    }

    func state(_ w: World, _ session: String) throws -> String {
        try runPSQL("SELECT state FROM sessions WHERE id = '\(session)'").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a valid logout token by sub revokes that user's sessions of the client, at the IdP too")
    func bySubject() async throws {
        let w = try await World()
        defer { w.stop() }
        let a = try await w.importSession(subject: "alice"), a2 = try await w.importSession(subject: "alice")
        let b = try await w.importSession(subject: "bob")
        let r = try await deliver(w, try await logoutToken(w, ["sub": "alice"]))
        try expectStatus(r, 200)
        #expect(r.headers["cache-control"] == "no-store")
        #expect(try state(w, a) == "revoked" && state(w, a2) == "revoked" && state(w, b) == "active")
        try expectStatus(try await w.token(a), 409)
        try expectStatus(try await w.token(b), 200)
        #expect(try await w.idp.counters(client: w.idpClientID)["active_families"] as? Int == 1)
    }

    @Test("a valid logout token by sid revokes the session signed in with it")
    func bySid() async throws {
        let w = try await World()
        defer { w.stop() }
        let s = try expectStatus(try await w.login(subject: "carol"), 200)["session_id"] as! String
        let other = try expectStatus(try await w.login(subject: "dan"), 200)["session_id"] as! String
        try expectStatus(try await deliver(w, try await logoutToken(w, ["sid": "sid-carol"])), 200)
        #expect(try state(w, s) == "revoked" && state(w, other) == "active")
    }

    @Test("bad signature, replayed jti, a nonce, wrong aud, no event, stale iat: 400 and nothing changes",
          arguments: ["bad_signature", "nonce", "wrong_aud", "no_events", "old_iat", "replay", "no_sub_or_sid"])
    func rejected(_ mode: String) async throws {
        let w = try await World()
        defer { w.stop() }
        let s = try await w.importSession(subject: "erin")
        let token: String
        switch mode {
        case "replay":
            // Accepted once (frank's session revoked); frank signs in again; the same token again is refused.
            let first = try await w.importSession(subject: "frank")
            token = try await logoutToken(w, ["sub": "frank"])
            try expectStatus(try await deliver(w, token), 200)
            #expect(try state(w, first) == "revoked")
            _ = try await w.importSession(subject: "frank")
        case "no_sub_or_sid":
            token = try await logoutToken(w, [:])
        default:
            token = try await logoutToken(w, ["sub": "erin", "mode": mode])
        }
        let r = try expectStatus(try await deliver(w, token), 400)
        #expect(r["error"] as? String == "invalid_request")
        #expect(try state(w, s) == "active")
        if mode == "replay" {
            #expect(try runPSQL("SELECT count(*) FROM sessions WHERE tenant_id = '\(w.tenant)' AND subject = 'frank' AND state = 'active'")
                .trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        }
    }

    @Test("a logout that cannot revoke a session (its row held past the lock timeout, then the database down) answers 503 and spends nothing; the IdP's retry of the same token revokes them, and the log says what happened",
          .enabled(if: pgControl != nil))
    func incompleteLogoutIsRetried() async throws {
        let w = try await World(extraEnv: ["TOKENBROKER_LOCK_TIMEOUT_SECONDS": "1"])
        defer { w.stop() }
        let a = try await w.importSession(subject: "gina"), b = try await w.importSession(subject: "gina")
        let token = try await logoutToken(w, ["sub": "gina"])
        // Another transaction holds b's row for 3 s: its revocation waits the lock timeout, then gives up.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        holder.arguments = [try TestEnv.databaseURL(), "-qc",
                            "BEGIN; SELECT 1 FROM sessions WHERE id = '\(b)' FOR UPDATE; SELECT pg_sleep(3); COMMIT;"]
        holder.standardOutput = FileHandle.nullDevice
        try holder.run()
        try await Task.sleep(for: .milliseconds(500))
        let held = try await deliver(w, token)
        #expect(held.status == 503 && held["error"] as? String == "refresh_busy" && held.headers["retry-after"] != nil)
        #expect(try state(w, a) == "revoked" && state(w, b) == "active")
        holder.waitUntilExit()
        // The database down: the same token is answered an error again, and still not spent.
        let control = try #require(pgControl)
        #expect(try shell(control, "stop") == 0)
        let down = try await deliver(w, token)
        #expect(try shell(control, "start") == 0)
        #expect(down.status == 503)
        // The IdP sends it again once the database is back: accepted, b revoked; then it is spent.
        var again = down
        let deadline = Date().addingTimeInterval(10)
        repeat {
            try await Task.sleep(for: .milliseconds(250))
            again = try await deliver(w, token)
        } while again.status == 503 && Date() < deadline
        try expectStatus(again, 200)
        #expect(try state(w, b) == "revoked")
        try expectStatus(try await deliver(w, token), 400)
        #expect(w.brokers[0].process.output.contains("backchannel_logout_incomplete"))
        let metrics = try await HTTP.get(w.brokers[0].url + "/metrics")
        #expect(String(decoding: metrics.data, as: UTF8.self).contains("tokenbroker_backchannel_logouts_total{outcome=\"incomplete\"} 1"))
    }

    @Test("malformed bodies and unknown clients are refused")
    func malformed() async throws {
        let w = try await World()
        defer { w.stop() }
        let url = w.brokers[0].url + "/v1/backchannel-logout/\(w.tenant)/\(w.client)"
        for body in ["", "logout_token=", "token=x", "logout_token=a&logout_token=b", "logout_token=%zz"] {
            try expectStatus(try await HTTP.request("POST", url, body: Data(body.utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"]), 400)
        }
        try expectStatus(try await deliver(w, try await logoutToken(w, ["sub": "x"]), client: "nope"), 404)
        try expectStatus(try await deliver(w, "not.a.jwt"), 400)
    }
}
