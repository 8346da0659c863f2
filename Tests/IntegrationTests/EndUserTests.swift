import Foundation
import Testing

/// The application's own id of its user (`end_user`) from the login to the sign-out, over HTTP
/// against PostgreSQL and the development IdP, in two tenants that use the same ids.
@Suite("End users: logins, tokens, listing and sign-out by the application's own user id", .serialized)
struct EndUserTests {
    /// A second tenant of the World's installation, with the same client "app" at the same IdP client.
    func secondTenant(_ w: World) async throws -> String {
        let t = TestEnv.uniqueName("t")
        let b = w.brokers[0].url
        try await expectStatus(HTTP.put(b + "/v1/tenants/\(t)", key: w.operatorKey, json: ["name": "Second tenant"]), 201)
        try await expectStatus(HTTP.put(b + "/v1/tenants/\(t)/clients/\(w.client)", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"], "redirect_after_allowed": [w.appURL]]), 201)
        return t
    }

    func tokenByEndUser(_ w: World, _ tenant: String, _ endUser: String, key: String, replica: Int = 0) async throws -> HTTP.Reply {
        let r = try await HTTP.post(w.brokers[replica].url + "/v1/tenants/\(tenant)/token", key: key,
                                    json: ["end_user": endUser, "client": w.client, "min_ttl": 60])
        if let at = r["access_token"] as? String { TestEnv.secret(at) }
        return r
    }

    func state(_ w: World, _ tenant: String, _ session: String, key: String) async throws -> String? {
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(tenant)/sessions/\(session)", key: key), 200)["state"] as? String
    }

    func listed(_ w: World, _ tenant: String, _ query: String, key: String) async throws -> [String] {
        let r = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(tenant)/sessions?\(query)", key: key), 200)
        return (r["sessions"] as? [[String: Any]] ?? []).compactMap { $0["session_id"] as? String }
    }

    @Test("a login with end_user → the session shows it → tokens by {end_user, client}, single and batch → listing and sign-out by end user select exactly that user's sessions, in each of two tenants with the same id")
    func endToEnd() async throws {
        let w = try await World()
        defer { w.stop() }
        let t1 = w.tenant, t2 = try await secondTenant(w)
        let key = try await w.newKey(roles: ["worker", "admin", "enrol"], tenants: [t1, t2])
        func login(_ subject: String, _ endUser: String?, _ tenant: String) async throws -> String {
            let r = try expectStatus(try await w.login(subject: subject, endUser: endUser, tenant: tenant, key: key), 200)
            #expect(r["subject"] as? String == subject, "the subject is the provider's")
            if let endUser { #expect(r["end_user"] as? String == endUser) } else { #expect(r["end_user"] is NSNull) }
            return r["session_id"] as! String
        }
        let a1 = try await login("gh-1001", "user-42", t1)
        let b1 = try await login("gh-2002", "user-7", t1)
        let c1 = try await login("gh-3003", nil, t1)
        let a2 = try await login("gh-9009", "user-42", t2)

        let doc = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(t1)/sessions/\(a1)", key: key), 200)
        #expect(doc["end_user"] as? String == "user-42" && doc["subject"] as? String == "gh-1001")
        let none = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(t1)/sessions/\(c1)", key: key), 200)
        #expect(none["end_user"] is NSNull)

        // Tokens by end user: each tenant's own user 42; twice (the second from memory).
        for _ in 0..<2 {
            let t = try expectStatus(try await tokenByEndUser(w, t1, "user-42", key: key), 200)
            #expect(t["session_id"] as? String == a1 && t["end_user"] as? String == "user-42" && t["subject"] as? String == "gh-1001")
        }
        let there = try expectStatus(try await tokenByEndUser(w, t2, "user-42", key: key), 200)
        #expect(there["session_id"] as? String == a2 && there["subject"] as? String == "gh-9009")
        try expectStatus(try await tokenByEndUser(w, t1, "gh-1001", key: key), 404)   // a subject is not an end user
        let bySession = try expectStatus(try await w.token(c1, key: key), 200)
        #expect(bySession["end_user"] is NSNull)

        let batch = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(t1)/tokens:batch", key: key, json: [
            "min_ttl": 60,
            "items": [["end_user": "user-42", "client": w.client], ["end_user": "user-7", "client": w.client], ["end_user": "user-nobody", "client": w.client],
                      ["end_user": " user-7", "client": w.client], ["end_user": "user-7"], ["end_user": "user-7", "subject": "gh-2002", "client": w.client],
                      ["session_id": c1]],
        ]), 200)
        let results = batch["results"] as! [[String: Any]]
        for r in results { if let at = r["access_token"] as? String { TestEnv.secret(at) } }
        #expect(results.map { $0["status"] as? Int } == [200, 200, 404, 400, 400, 400, 200])
        #expect(results.map { $0["session_id"] as? String } == [a1, b1, nil, nil, nil, nil, c1])
        #expect(results[1]["end_user"] as? String == "user-7" && results[6]["end_user"] is NSNull)

        // An imported grant for user 7, newer: the next token by end user is its.
        let grant = try await w.idp.login(client: w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI, subject: "gh-2002")
        let imported = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(t1)/sessions:import", key: key, json: [
            "client": w.client, "subject": "gh-2002", "end_user": "user-7", "refresh_token": grant.refresh, "access_token": grant.access,
            "expires_at": ISO8601DateFormatter().string(from: Date().addingTimeInterval(3000))]), 201)
        #expect(imported["end_user"] as? String == "user-7")
        let b1new = imported["session_id"] as! String
        #expect(try expectStatus(try await tokenByEndUser(w, t1, "user-7", key: key), 200)["session_id"] as? String == b1new)

        // Listing by end user: exactly that user's sessions, in each tenant.
        #expect(try await listed(w, t1, "end_user=user-42", key: key) == [a1])
        #expect(try await listed(w, t2, "end_user=user-42", key: key) == [a2])
        #expect(try await listed(w, t1, "end_user=user-7", key: key) == [b1new, b1])
        #expect(try await listed(w, t1, "end_user=user-7&client=\(w.client)", key: key) == [b1new, b1])

        // Sign-out by end user with the CLI: user 42 of the first tenant only.
        let out = try runCommand("tokenbroker", ["signout", "--tenant", t1, "--end-user", "user-42", "--wait"],
                                 env: ["TOKENBROKER_URL": w.brokers[0].url, "TOKENBROKER_API_KEY": key])
        #expect(out.status == 0, "\(out.err)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(out.out.utf8)) as? [String: Any])
        #expect(summary["total"] as? Int == 1 && summary["revoked"] as? Int == 1 && summary["failed"] as? Int == 0)
        #expect(try await state(w, t1, a1, key: key) == "revoked")
        for s in [b1, c1, b1new] { #expect(try await state(w, t1, s, key: key) == "active") }
        #expect(try await state(w, t2, a2, key: key) == "active")
        let gone = try expectStatus(try await tokenByEndUser(w, t1, "user-42", key: key), 409)
        #expect(gone["error"] as? String == "revoked")
        try expectStatus(try await tokenByEndUser(w, t2, "user-42", key: key), 200)

        // Through the API: the second tenant's user 42, as a dry run, then for real.
        let post = { (json: [String: Any]) in try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(t2)/signouts", key: key, json: json) }
        let dry = try expectStatus(try await post(["end_user": "user-42", "dry_run": true]), 202)
        #expect(dry["total"] as? Int == 1 && (dry["filter"] as? [String: Any])?["end_user"] as? String == "user-42")
        try expectStatus(try await post(["end_user": "\u{202E}user-42"]), 400)
    }

    @Test("two replicas: a new session of the end user, and then its revocation, reach the other replica's memory")
    func acrossReplicas() async throws {
        let w = try await World(replicas: 2)
        defer { w.stop() }
        func signIn(_ subject: String) async throws -> String {
            try expectStatus(try await w.login(subject: subject, endUser: "user-5"), 200)["session_id"] as! String
        }
        /// The session replica 1 hands out for user 5, once it is `expected` (the notice takes up to a second).
        func handedOutOnReplica1(becomes expected: String) async throws -> String? {
            let deadline = Date().addingTimeInterval(5)
            var last: String?
            repeat {
                last = try expectStatus(try await tokenByEndUser(w, w.tenant, "user-5", key: w.workerKey, replica: 1), 200)["session_id"] as? String
                if last == expected { break }
                try await Task.sleep(for: .milliseconds(50))
            } while Date() < deadline
            return last
        }
        let first = try await signIn("gh-501")
        #expect(try await handedOutOnReplica1(becomes: first) == first)
        #expect(try await handedOutOnReplica1(becomes: first) == first)   // now from replica 1's memory
        let second = try await signIn("gh-502")   // through replica 0
        #expect(try await handedOutOnReplica1(becomes: second) == second)
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(second)", key: w.workerKey), 200)
        #expect(try await handedOutOnReplica1(becomes: first) == first, "replica 1 still hands out the revoked session's user a dead session")
    }

    @Test("bad end_user values are 400 invalid_request and store nothing: logins, imports, token lookups, listing, sign-out")
    func badValuesRefused() async throws {
        let w = try await World()
        defer { w.stop() }
        let bad: [Any] = ["", " user-1", "user-1 ", "user\n1", "user\u{0}1", "user\u{7F}", "user\u{200B}1", "user\u{202E}1", "user\u{2028}1",
                          String(repeating: "x", count: 256), String(repeating: "é", count: 128), 42, ["user-1"]]
        // A string holding NUL is refused by the JSON parser itself (invalid_json), as anywhere in a body.
        func code(_ v: Any) -> String { (v as? String)?.contains("\u{0}") == true ? "invalid_json" : "invalid_request" }
        for v in bad {
            let r = try expectStatus(try await w.startLogin(subject: "alice", endUser: v), 400)
            #expect(r["error"] as? String == code(v), "\(r["message"] ?? "")")
        }
        #expect(try w.count("logins") == 0)
        let grant = try await w.idp.login(client: w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI, subject: "alice")
        for v in bad {
            let r = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions:import", key: w.workerKey, json: [
                "client": w.client, "subject": "alice", "end_user": v, "refresh_token": grant.refresh])
            try expectStatus(r, 400)
            #expect(r["error"] as? String == code(v))
        }
        #expect(try w.count("sessions") == 0)
        for v in ["", " user-1", "user\u{202E}1"] {
            try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/token", key: w.workerKey,
                                                 json: ["end_user": v, "client": w.client]), 400)
            try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/signouts", key: w.workerKey, json: ["end_user": v]), 400)
        }
        try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/token", key: w.workerKey,
                                             json: ["end_user": "user-1", "subject": "alice", "client": w.client]), 400)
        try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions?end_user=%20user-1", key: w.workerKey), 400)
        #expect(Int(try runPSQL("SELECT count(*) FROM signout_jobs WHERE tenant_id = '\(w.tenant)'").trimmingCharacters(in: .whitespacesAndNewlines)) == 0)
        // The longest allowed: 255 bytes (here 85 three-byte characters).
        let longest = String(repeating: "字", count: 85)
        try expectStatus(try await w.startLogin(subject: "alice", endUser: longest), 201)
    }
}
