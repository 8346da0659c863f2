import Foundation
import Testing

/// DPoP (RFC 9449) end to end: the broker holds each session's key, proves with it at the IdP's
/// token endpoint (code exchange and every refresh, nonces included), and mints proofs for the
/// workers' requests to resource servers — the development IdP's `/resource` checks them.
@Suite("DPoP: sender-constrained sessions and worker proofs (RFC 9449)", .serialized)
struct DPoPTests {
    /// A World with a second client, `dpop`, registered with `"dpop": true` at a client of the IdP
    /// that must send proofs.
    static func world(replicas: Int = 1) async throws -> (World, idpClient: String) {
        let w = try await World(replicas: replicas)
        let idpClient = TestEnv.uniqueName("dpop-client")
        try await w.idp.registerClient(idpClient, secret: w.idpSecret, redirectURI: w.redirectURI, dpopRequired: true)
        let r = try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/dpop", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": idpClient, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"], "dpop": true]), 201)
        #expect(r["dpop"] as? Bool == true && r["dpop_alg"] as? String == "ES256")
        return (w, idpClient)
    }

    /// The worker's request to the IdP's protected resource with a token and, if any, a proof.
    static func resource(_ w: World, token: String, proof: String?, scheme: String = "DPoP", query: String = "") async throws -> HTTP.Reply {
        var h = ["Authorization": "\(scheme) \(token)"]
        if let proof { h["DPoP"] = proof }
        return try await HTTP.request("GET", w.idp.issuer + "/resource" + query, headers: h)
    }

    static func proofs(_ r: HTTP.Reply) -> [String] { r["dpop_proofs"] as? [String] ?? [] }

    @Test("login with dpop_jkt → refreshes with the same key (another replica too) → a broker-minted proof opens the resource; no proof, Bearer, another URL or a replay do not")
    func boundSessionAndWorkerProofs() async throws {
        let (w, idpClient) = try await Self.world()
        defer { w.stop() }
        let started = try expectStatus(try await w.startLogin(subject: "dora", client: "dpop"), 201)
        let q = URLComponents(string: started["authorization_url"] as! String)!.queryItems ?? []
        let jkt = try #require(q.first { $0.name == "dpop_jkt" }?.value)
        #expect(jkt.count == 43, "dpop_jkt is a base64url SHA-256 thumbprint")
        let s = try expectStatus(try await w.callback(try await w.authorize(started["authorization_url"] as! String)), 200)["session_id"] as! String
        #expect(try runPSQL("SELECT count(*) FROM sessions WHERE id = '\(s)' AND dpop_key IS NOT NULL AND get_byte(dpop_key, 0) = 1")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1", "the key is stored sealed")
        let first = try expectStatus(try await w.token(s), 200)
        #expect(first["token_type"] as? String == "DPoP")
        // Key continuity: the IdP refuses a refresh of a bound grant with any other key.
        for _ in 0..<2 { try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200) }
        w.brokers.append(try await BrokerServer(env: w.env, name: "broker-dpop"))
        try expectStatus(try await w.token(s, replica: 1, body: ["force_refresh": true]), 200)
        let st = try await w.idp.counters(client: idpClient)
        #expect(st["refreshes_ok"] as? Int == 3 && st["reuse_detected"] as? Int == 0 && st["dpop_refusals"] as? Int == 0)

        // A proof per request the worker names, bound to the token handed out with it.
        let target = w.idp.issuer + "/resource"
        let t = try expectStatus(try await w.token(s, replica: 1, body: ["dpop": [["htm": "GET", "htu": target + "?page=2#top"],
                                                                               ["htm": "POST", "htu": target]]]), 200)
        let token = t["access_token"] as! String
        let minted = Self.proofs(t)
        #expect(minted.count == 2 && t["token_type"] as? String == "DPoP")
        let ok = try expectStatus(try await Self.resource(w, token: token, proof: minted[0], query: "?page=2"), 200)
        #expect(ok["bound"] as? Bool == true && ok["sub"] as? String == "dora")
        #expect(try await Self.resource(w, token: token, proof: minted[0]).status == 401, "a replayed proof was accepted")
        #expect(try await Self.resource(w, token: token, proof: nil).status == 401, "a bound token without a proof was accepted")
        #expect(try await Self.resource(w, token: token, proof: nil, scheme: "Bearer").status == 401, "a bound token as Bearer was accepted")
        #expect(try await Self.resource(w, token: token, proof: minted[1]).status == 401, "a proof for POST opened a GET")
        let other = Self.proofs(try expectStatus(try await w.token(s, body: ["dpop": ["htm": "GET", "htu": w.idp.issuer + "/elsewhere"]]), 200))
        #expect(try await Self.resource(w, token: token, proof: other[0]).status == 401, "a proof for another URL was accepted")
        let fresh = Self.proofs(try expectStatus(try await w.token(s, body: ["dpop": ["htm": "GET", "htu": target]]), 200))
        try expectStatus(try await Self.resource(w, token: token, proof: fresh[0]), 200)
        // Every proof minted is audited: two on each replica (reading the trail flushes the replica's buffer).
        _ = try expectStatus(try await HTTP.get(w.brokers[1].url + "/v1/tenants/\(w.tenant)/audit?action=token.dpop_proof", key: w.workerKey), 200)
        let audit = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?action=token.dpop_proof", key: w.workerKey), 200)
        let events = audit["events"] as? [[String: Any]] ?? []
        #expect(events.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 4 && events.allSatisfy { $0["session_id"] as? String == s }, "\(audit.text)")
    }

    @Test("with PAR the push carries a proof of the login's key (RFC 9449 §10.1): an IdP that demands it there binds the code, and the login completes")
    func proofOnPushedRequest() async throws {
        let (w, _) = try await Self.world()
        defer { w.stop() }
        try await w.idp.settings(par: "required")
        let started = try expectStatus(try await w.startLogin(subject: "pia", client: "dpop"), 201)
        let q = URLComponents(string: started["authorization_url"] as! String)!.queryItems ?? []
        #expect(Set(q.map(\.name)) == ["client_id", "request_uri"])
        let s = try expectStatus(try await w.callback(try await w.authorize(started["authorization_url"] as! String)), 200)["session_id"] as! String
        #expect(try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200)["token_type"] as? String == "DPoP")
    }

    @Test("a token-endpoint nonce costs one retry and no second presentation; a resource nonce is passed back and its proof works")
    func nonces() async throws {
        let (w, idpClient) = try await Self.world()
        defer { w.stop() }
        try await w.idp.settings(dpopNonce: true)
        let s = try expectStatus(try await w.login(subject: "nico", client: "dpop"), 200)["session_id"] as! String
        try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200)     // the nonce is known now: no challenge
        try await w.idp.settings(dpopNonce: true)                                       // a new nonce
        try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200)
        let st = try await w.idp.counters(client: idpClient)
        #expect(st["dpop_nonce_challenges"] as? Int == 2, "challenges: \(String(describing: st["dpop_nonce_challenges"]))")
        #expect(st["refresh_presentations"] as? Int == 2 && st["refreshes_ok"] as? Int == 2 && st["reuse_detected"] as? Int == 0,
                "each refresh token was accepted once: \(String(describing: st["refresh_presentations"]))")

        try await w.idp.settings(resourceNonce: true)
        let target = w.idp.issuer + "/resource"
        let t = try expectStatus(try await w.token(s, body: ["dpop": ["htm": "GET", "htu": target]]), 200)
        let token = t["access_token"] as! String
        let challenged = try await Self.resource(w, token: token, proof: Self.proofs(t)[0])
        #expect(challenged.status == 401 && challenged.headers["www-authenticate"]?.contains("use_dpop_nonce") == true)
        let nonce = try #require(challenged.headers["dpop-nonce"])
        let again = try expectStatus(try await w.token(s, body: ["dpop": ["htm": "GET", "htu": target, "nonce": nonce]]), 200)
        try expectStatus(try await Self.resource(w, token: token, proof: Self.proofs(again)[0]), 200)
    }

    @Test("proofs only where they mean something: a bearer session gets none (409), bad targets and batches are 400, another tenant's key gets 404 and no proof")
    func refusals() async throws {
        let (w, _) = try await Self.world()
        defer { w.stop() }
        let bearer = try expectStatus(try await w.login(subject: "bea"), 200)["session_id"] as! String
        let r = try await w.token(bearer, body: ["dpop": ["htm": "GET", "htu": "https://api.example/x"]])
        #expect(r.status == 409 && r["error"] as? String == "not_dpop_bound" && r["access_token"] == nil)
        let s = try expectStatus(try await w.login(subject: "dan", client: "dpop"), 200)["session_id"] as! String
        let bad: [[String: Any]] = [
            ["dpop": ["htm": "GET", "htu": "ftp://api.example/x"]], ["dpop": ["htm": "G E T", "htu": "https://api.example/x"]],
            ["dpop": ["htm": "GET"]], ["dpop": []], ["dpop": "GET https://api.example/x"],
            ["dpop": ["htm": "GET", "htu": "https://api.example/x", "nonce": "has\"quote"]],
            ["dpop": Array(repeating: ["htm": "GET", "htu": "https://api.example/x"], count: 17)],
        ]
        for body in bad {
            let r = try await w.token(s, body: body)
            #expect(r.status == 400 && r["access_token"] == nil, "\(body) answered \(r.status)")
        }
        let batch = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/tokens:batch", key: w.workerKey,
                                        json: ["items": [["session_id": s]], "dpop": ["htm": "GET", "htu": "https://api.example/x"]])
        #expect(batch.status == 400)
        let otherTenant = TestEnv.uniqueName("t")
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(otherTenant)", key: w.operatorKey, json: ["name": "Other"]), 201)
        let stranger = try await w.newKey(roles: ["worker"], tenants: [otherTenant])
        let denied = try await w.token(s, body: ["dpop": ["htm": "GET", "htu": "https://api.example/x"]], key: stranger)
        #expect(denied.status == 404 && denied["dpop_proofs"] == nil, "\(denied.status)")
        let audit = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?action=token.dpop_proof", key: w.workerKey), 200)
        #expect((audit["events"] as? [[String: Any]])?.isEmpty == true, "a refused request was audited as minting a proof")
    }

    @Test("a client registered without dpop at an IdP that wants proofs: the callback says so plainly, nothing is stored")
    func unboundClientAtDPoPIdP() async throws {
        let (w, idpClient) = try await Self.world()
        defer { w.stop() }
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/plain", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": idpClient, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"]]), 201)
        let r = try await w.login(subject: "plain-user", client: "plain")
        #expect(r.status == 400 && r["error"] as? String == "invalid_dpop_proof")
        #expect((r["message"] as? String)?.contains("registered without DPoP") == true, "\(r.text)")
        #expect(try w.count("sessions") == 0)
    }
}
