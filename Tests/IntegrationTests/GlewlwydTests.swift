import BrokerCore
import Foundation
import Testing

/// The broker against glewlwyd 2.7.5 (Debian's package), started by scripts/glewlwyd.sh in
/// `make test`: its OpenID Connect plugin with DPoP nonces and pushed authorization requests
/// required, and over HTTPS with mutual TLS (RFC 8705). The user's part of each login goes
/// through glewlwyd's login API as its login page does.
@Suite("glewlwyd 2.7.5", .serialized, .enabled(if: Glewlwyd.dir != nil, "make test starts glewlwyd (scripts/glewlwyd.sh)"))
struct GlewlwydTests {
    /// An installation with a DPoP client `glew` registered at the plain server and the broker.
    struct DPoPSetup {
        let w: World
        let g: Glewlwyd
        let id: String
        let secret = "glew-secret-" + UUID().uuidString

        init(replicas: Int = 1, dpopRequired: Bool = false) async throws {
            g = try Glewlwyd("plain")
            w = try await World(replicas: replicas)
            id = TestEnv.uniqueName("glew")
            TestEnv.secret(secret)
            // `dpop_required`: the plugin's "DPoP bound access tokens" client property.
            try await g.registerClient(id, secret: secret, redirectURI: w.redirectURI, extra: dpopRequired ? ["dpop_required": "true"] : [:])
            try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/glew", key: w.operatorKey, json: [
                "issuer": g.issuer, "client_id": id, "auth_method": "client_secret_basic", "client_secret": secret,
                "redirect_uri": w.redirectURI, "scopes": ["openid"], "dpop": true]), 201)
        }

        func start(replica: Int) async throws -> HTTP.Reply {
            try await HTTP.post(w.brokers[replica].url + "/v1/tenants/\(w.tenant)/logins", key: w.workerKey,
                                json: ["client": "glew", "login_hint": "alice"])
        }

        /// A whole login started and completed at `replica`; the session id.
        func login(replica: Int) async throws -> String {
            let started = try expectStatus(try await start(replica: replica), 201)
            let back = try await g.authorize(started["authorization_url"] as! String, client: id)
            let done = try await w.callback(back.replacingOccurrences(of: w.brokers[0].url, with: w.brokers[replica].url))
            try expectStatus(done, 200)
            return try #require(done["session_id"] as? String)
        }

        func refresh(_ s: String, replica: Int) async throws -> HTTP.Reply {
            try await w.token(s, replica: replica, body: ["min_ttl": 60, "force_refresh": true])
        }

        /// The client's current nonce at glewlwyd, read from its database (for counting its changes).
        func glewlwydNonce() throws -> String {
            try TestCA.run("/usr/bin/python3", ["-c", """
                import sqlite3,sys
                r=sqlite3.connect(sys.argv[1]).execute('select gpodcn_nonce from gpo_dpop_client_nonce where gpodcn_client_id=?',(sys.argv[2],)).fetchone()
                print(r[0] if r else '')
                """, g.dir.appendingPathComponent("plain.db").path, id]).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test("DPoP nonces + PAR required: a client's very first login, before glewlwyd ever sent it a nonce, pushes with dpop_jkt alone and logs in")
    func firstLogin() async throws {
        let s = try await DPoPSetup()
        defer { s.w.stop() }
        #expect(try s.glewlwydNonce().isEmpty, "glewlwyd already has a nonce for a new client")
        let refused = s.g.refusedNonces()
        let session = try await s.login(replica: 0)
        // The push with a proof (no nonce known) and the code exchange's first proof: each
        // refused once for its nonce; the push went again with dpop_jkt alone, the exchange
        // with the nonce the token endpoint sent.
        #expect(s.g.refusedNonces() - refused == 2, "refused proofs: \(s.g.refusedNonces() - refused)")
        let t = try expectStatus(try await s.refresh(session, replica: 0), 200)
        #expect(t["token_type"] as? String == "DPoP")
        let jkt = (MutualTLSTests.claims(t["access_token"] as? String ?? "")["cnf"] as? [String: Any])?["jkt"] as? String
        #expect(jkt != nil, "glewlwyd's access token is not bound to the session's key")
        #expect(s.g.refusedNonces() - refused == 2, "the refresh's proof was refused: the nonce learned at the code exchange was not used")
    }

    @Test("DPoP nonces + PAR required, a client glewlwyd holds to DPoP: the first push is refused as glewlwyd said it, both pushes named")
    func firstLoginDPoPRequired() async throws {
        let s = try await DPoPSetup(dpopRequired: true)
        defer { s.w.stop() }
        let r = try await s.start(replica: 0)
        let m = r["message"] as? String ?? ""
        #expect(r.status == 422 && r["error"] as? String == "idp_misconfigured", "\(r.status) \(m)")
        #expect(m.contains("invalid_dpop_proof: \"Invalid DPoP\" (HTTP 403) at the pushed authorization request endpoint, with a DPoP proof without a nonce (none known for this client)")
                    && m.contains("pushed again with dpop_jkt and no proof") && m.contains("without a DPoP proof") && !m.contains("dpop_alg"), "\(m)")
        #expect(try s.w.count("logins") == 0, "a refused login was stored")
    }

    @Test("DPoP nonces + PAR required, two replicas: logins on a just-started replica and on each after refreshes, 12 refreshes while glewlwyd changes its nonce, a userinfo proof, revocation")
    func twoReplicas() async throws {
        let s = try await DPoPSetup()
        defer { s.w.stop() }
        let first = try await s.login(replica: 0)
        var nonces: Set<String> = [try s.glewlwydNonce()]
        try expectStatus(try await s.refresh(first, replica: 0), 200)
        nonces.insert(try s.glewlwydNonce())
        let refused = s.g.refusedNonces()

        // A replica that has just started, while the other one has refreshed: its push carries
        // the nonce replica 0 learned (from the database), and is not refused.
        s.w.brokers.append(try await BrokerServer(env: s.w.env, name: "broker-new"))
        var sessions = [first, try await s.login(replica: 1)]
        nonces.insert(try s.glewlwydNonce())
        #expect(s.g.refusedNonces() == refused, "the new replica's login was refused a proof")

        // 12 refreshes over both replicas; glewlwyd makes a new nonce every few accepted proofs
        // (scripts/glewlwyd.sh: GLEWLWYD_NONCE_COUNTER) and sends it on that answer only.
        for i in 0..<12 {
            let r = try expectStatus(try await s.refresh(sessions[i % 2 == 0 ? 0 : 1], replica: i % 2), 200)
            #expect(r["token_type"] as? String == "DPoP")
            nonces.insert(try s.glewlwydNonce())
            try await Task.sleep(for: .milliseconds(150))   // the other replica hears the new nonce (change feed)
        }
        // Logins on each replica after the refreshes.
        for replica in 0..<2 {
            sessions.append(try await s.login(replica: replica))
            nonces.insert(try s.glewlwydNonce())
        }
        let changes = nonces.count - 1
        let refusedByBroker = s.g.refusedNonces() - refused
        #expect(changes >= 3, "glewlwyd changed its nonce \(changes) times")
        #expect(refusedByBroker <= changes, "glewlwyd refused \(refusedByBroker) proofs for \(changes) nonce changes")

        // A userinfo proof: the worker gets a proof bound to the handed-out token; glewlwyd's
        // userinfo wants the client's nonce, which it sends with its 401 (RFC 9449 §9), and the
        // worker asks for a proof with it.
        let userinfo = s.g.issuer + "/userinfo"
        var t = try expectStatus(try await s.w.token(sessions[1], replica: 1, body: ["min_ttl": 60, "dpop": ["htm": "GET", "htu": userinfo]]), 200)
        var answer = try await s.g.call("GET", userinfo, headers: ["Authorization": "DPoP \(t["access_token"] as! String)",
                                                                   "DPoP": (t["dpop_proofs"] as? [String])?.first ?? ""])
        #expect(answer.status == 401 && answer.headers["www-authenticate"]?.contains("use_dpop_nonce") == true,
                "userinfo without the nonce: \(answer.status)")
        if answer.status == 401, let nonce = answer.headers["dpop-nonce"] {
            t = try expectStatus(try await s.w.token(sessions[1], replica: 0, body: ["min_ttl": 60, "dpop": ["htm": "GET", "htu": userinfo, "nonce": nonce]]), 200)
            answer = try await s.g.call("GET", userinfo, headers: ["Authorization": "DPoP \(t["access_token"] as! String)",
                                                               "DPoP": (t["dpop_proofs"] as? [String])?.first ?? ""])
        }
        #expect(answer.status == 200 && answer["sub"] != nil, "userinfo: \(answer.status) \(answer.headers["www-authenticate"] ?? "")")

        // Revocation (RFC 7009): glewlwyd confirms, and its introspection says the refresh token is over.
        let before = s.g.refusedNonces()
        for (i, session) in sessions.enumerated() {
            let revoked = try expectStatus(try await HTTP.request("DELETE", s.w.brokers[i % 2].url + "/v1/tenants/\(s.w.tenant)/sessions/\(session)",
                                                                  key: s.w.workerKey), 200)
            #expect(revoked["idp_revocation"] as? String == "confirmed", "session \(i): \(revoked["idp_revocation"] ?? "-")")
        }
        #expect(s.g.refusedNonces() == before, "revocation sends no proof")
        let tokens = try TestCA.run("/usr/bin/python3", ["-c", """
            import sqlite3,sys
            print(sqlite3.connect(sys.argv[1]).execute('select count(*), sum(gpor_enabled) from gpo_refresh_token where gpor_client_id=?',(sys.argv[2],)).fetchone())
            """, s.g.dir.appendingPathComponent("plain.db").path, s.id])
        #expect(tokens.hasSuffix(", 0)\n") || tokens.hasSuffix(", None)\n"), "glewlwyd's refresh tokens (count, enabled): \(tokens)")
    }
}
