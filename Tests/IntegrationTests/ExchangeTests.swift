import Foundation
import Testing

/// Delegation through RFC 8693 token exchange: a worker asks for a narrower token made from its
/// session's, optionally naming itself as the actor; the development IdP issues it with `act`.
@Suite("Token exchange (RFC 8693) with actor tokens", .serialized)
struct ExchangeTests {
    /// The claims of a JWT access token (the development IdP's are JWTs).
    static func claims(_ jwt: String) throws -> [String: Any] {
        let part = try #require(jwt.split(separator: ".").dropFirst().first)
        var b64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        let data = try #require(Data(base64Encoded: b64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// A World whose IdP client trusts the broker's actor keys and may exchange for two audiences;
    /// a worker key whose principal id is known; a session of scope `openid offline_access`.
    static func world() async throws -> (World, worker: String, principal: String, session: String) {
        let w = try await World()
        let jwks = try expectStatus(try await HTTP.get(w.brokers[0].url + "/.well-known/jwks.json"), 200)
        let keys = try #require(jwks["keys"] as? [[String: Any]])
        #expect(keys.count == 1 && keys[0]["kty"] as? String == "EC" && keys[0]["d"] == nil && (keys[0]["kid"] as? String)?.count == 43)
        _ = try await HTTP.post(w.idp.issuer + "/admin/clients", json: [
            "client_id": w.idpClientID, "client_secret": w.idpSecret, "redirect_uris": [w.redirectURI], "actor_jwks": jwks.json,
            "exchange_audiences": ["https://api.example", "https://orders.example"]])
        let k = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/apikeys", key: w.operatorKey,
                                                     json: ["name": "exchanger", "roles": ["worker", "admin"], "tenants": [w.tenant]]), 201)
        let worker = k["key"] as! String
        TestEnv.secret(worker)
        let principal = try #require(k["id"] as? String)
        let session = try expectStatus(try await w.login(subject: "xena"), 200)["session_id"] as! String
        return (w, worker, principal, session)
    }

    static func exchange(_ w: World, _ s: String, key: String, _ x: [String: Any]) async throws -> HTTP.Reply {
        try await w.token(s, body: ["exchange": x], key: key)
    }

    @Test("act: the issued token names the worker principal as actor, with the narrower audience and scope; the same ask is served from the cache, a new one exchanges again, eight at once exchange once")
    func delegated() async throws {
        let (w, worker, principal, s) = try await Self.world()
        defer { w.stop() }
        let ask: [String: Any] = ["audience": "https://api.example", "scope": "openid", "act": true]
        let r = try expectStatus(try await Self.exchange(w, s, key: worker, ask), 200)
        #expect(r["issued_token_type"] as? String == "urn:ietf:params:oauth:token-type:access_token" && r["session_id"] as? String == s)
        let token = r["access_token"] as! String
        let c = try Self.claims(token)
        #expect(c["aud"] as? String == "https://api.example" && c["scope"] as? String == "openid" && c["sub"] as? String == "xena")
        let act = try #require(c["act"] as? [String: Any])
        #expect(act["sub"] as? String == principal && act["iss"] as? String == w.brokers[0].url, "act: \(act)")
        let session = try expectStatus(try await w.token(s, key: worker), 200)["access_token"] as! String
        #expect(session != token, "the session's own token was handed out as the exchanged one")

        let again = try expectStatus(try await Self.exchange(w, s, key: worker, ask), 200)
        #expect(again["access_token"] as? String == token)
        #expect(try await w.idp.counters(client: w.idpClientID)["exchanges"] as? Int == 1, "the second ask went to the IdP")
        let plain = try expectStatus(try await Self.exchange(w, s, key: worker, ["audience": "https://api.example", "scope": "openid"]), 200)
        #expect(try Self.claims(plain["access_token"] as! String)["act"] == nil, "no act without asking")
        let results = try await withThrowingTaskGroup(of: Int.self) { g in
            for _ in 0..<8 { g.addTask { try await Self.exchange(w, s, key: worker, ["audience": "https://orders.example", "act": true]).status } }
            return try await g.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0 == 200 })
        #expect(try await w.idp.counters(client: w.idpClientID)["exchanges"] as? Int == 3, "eight identical asks did not share one exchange")
        let audit = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?action=token.exchange", key: worker), 200)
        let outcomes = (audit["events"] as? [[String: Any]] ?? []).reduce(into: [String: Int]()) { $0[$1["outcome"] as? String ?? "", default: 0] += $1["count"] as? Int ?? 0 }
        // Eleven asks, three IdP calls: each call is one `exchanged`; the second ask was cached,
        // and of the eight at once the others shared the flight or came after it landed.
        #expect(outcomes["exchanged"] == 3 && (outcomes["cached"] ?? 0) >= 1
                && (outcomes["cached"] ?? 0) + (outcomes["shared"] ?? 0) == 8, "\(outcomes)")
    }

    @Test("a DPoP-bound session exchanges with a proof of its key: the exchanged token is bound too, and proofs asked beside it are for it and open the resource")
    func boundExchange() async throws {
        let (w, idpClient) = try await DPoPTests.world()
        defer { w.stop() }
        let s = try expectStatus(try await w.login(subject: "dex", client: "dpop"), 200)["session_id"] as! String
        let target = w.idp.issuer + "/resource"
        let r = try expectStatus(try await w.token(s, body: ["exchange": ["audience": "https://api.example", "scope": "openid"],
                                                            "dpop": ["htm": "GET", "htu": target]]), 200)
        #expect(r["token_type"] as? String == "DPoP")
        let token = r["access_token"] as! String
        let c = try Self.claims(token)
        #expect((c["cnf"] as? [String: Any])?["jkt"] is String && c["aud"] as? String == "https://api.example")
        let ok = try expectStatus(try await DPoPTests.resource(w, token: token, proof: DPoPTests.proofs(r)[0]), 200)
        #expect(ok["scope"] as? String == "openid")
        // Cached: the second ask makes no exchange and still gets fresh proofs for the same token.
        let again = try expectStatus(try await w.token(s, body: ["exchange": ["audience": "https://api.example", "scope": "openid"],
                                                                "dpop": ["htm": "GET", "htu": target]]), 200)
        #expect(again["access_token"] as? String == token && DPoPTests.proofs(again)[0] != DPoPTests.proofs(r)[0])
        try expectStatus(try await DPoPTests.resource(w, token: token, proof: DPoPTests.proofs(again)[0]), 200)
        #expect(try await w.idp.counters(client: idpClient)["exchanges"] as? Int == 1)
    }

    @Test("an IdP refusal is the caller's 400 with the IdP's code and changes nothing; bad asks are 400; another tenant's key cannot exchange")
    func refusals() async throws {
        let (w, worker, _, s) = try await Self.world()
        defer { w.stop() }
        let target = try await Self.exchange(w, s, key: worker, ["audience": "https://elsewhere.example"])
        #expect(target.status == 400 && target["error"] as? String == "invalid_target", "\(target.status)")
        let scope = try await Self.exchange(w, s, key: worker, ["audience": "https://api.example", "scope": "openid admin"])
        #expect(scope.status == 400 && scope["error"] as? String == "invalid_scope")
        // The IdP's own trouble is an outage (503), not the caller's fault.
        try await w.idp.fail(status: 400, body: #"{"error":"server_error"}"#, count: 1)
        #expect(try await Self.exchange(w, s, key: worker, ["audience": "https://api.example"]).status == 503)
        let doc = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(s)", key: worker), 200)
        #expect(doc["state"] as? String == "active" && doc["failure_count"] as? Int == 0)
        let trail = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/audit?action=token.exchange&session=\(s)", key: worker), 200)
        #expect(Set((trail["events"] as? [[String: Any]] ?? []).compactMap { $0["outcome"] as? String }) == ["invalid_target", "invalid_scope", "idp_unavailable"],
                "refusals are audited with their session: \(trail.text)")
        #expect(w.brokers[0].process.output.contains("\"code\":\"exchange_refused\""), "a refused exchange left no log line")
        try expectStatus(try await w.token(s, key: worker), 200)
        for bad: Any in [[String: Any](), ["resource": "not a uri"], ["resource": "https://api.example/#frag"], ["audience": ""],
                         ["audience": 7], "https://api.example"] {
            let r = try await w.token(s, body: ["exchange": bad], key: worker)
            #expect(r.status == 400 && r["access_token"] == nil, "\(bad) answered \(r.status)")
        }
        let both = try await w.token(s, body: ["exchange": ["audience": "https://api.example"], "dpop": ["htm": "GET", "htu": "https://api.example/x"]], key: worker)
        #expect(both.status == 409 && both["error"] as? String == "not_dpop_bound", "a bearer exchanged token got proofs")
        let batch = try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/tokens:batch", key: worker,
                                        json: ["items": [["session_id": s]], "exchange": ["audience": "https://api.example"]])
        #expect(batch.status == 400)
        let other = TestEnv.uniqueName("t")
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(other)", key: w.operatorKey, json: ["name": "Other"]), 201)
        let stranger = try await w.newKey(roles: ["worker"], tenants: [other])
        let denied = try await Self.exchange(w, s, key: stranger, ["audience": "https://api.example", "act": true])
        #expect(denied.status == 404 && denied["access_token"] == nil)
        // One exchange so far: the bearer one asked with dpop (its proofs then refused); none for the stranger.
        #expect(try await w.idp.counters(client: w.idpClientID)["exchanges"] as? Int == 1)
        // An answer without expires_in lives as long as its JWT's exp says: the next ask is served from the cache.
        try await w.idp.misbehave(w.idpClientID, "no_expires_in")
        let first = try expectStatus(try await Self.exchange(w, s, key: worker, ["audience": "https://orders.example"]), 200)
        #expect((first["expires_in"] as? Int ?? 0) > 290, "expires_in \(String(describing: first["expires_in"]))")
        try expectStatus(try await Self.exchange(w, s, key: worker, ["audience": "https://orders.example"]), 200)
        #expect(try await w.idp.counters(client: w.idpClientID)["exchanges"] as? Int == 2)
        // A revoked session's exchanged tokens are not served from the cache either.
        try expectStatus(try await Self.exchange(w, s, key: worker, ["audience": "https://api.example"]), 200)
        try expectStatus(try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(s)", key: worker), 200)
        #expect(try await Self.exchange(w, s, key: worker, ["audience": "https://api.example"]).status == 409)
    }
}
