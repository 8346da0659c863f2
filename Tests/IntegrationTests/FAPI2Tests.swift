import Foundation
import Testing

/// `profile: fapi2`: the FAPI 2.0 Security Profile's client checklist (FAPI2Profile), refused at
/// registration where it cannot hold, and end to end against the development IdP's strict mode.
@Suite("FAPI 2.0 client profile", .serialized)
struct FAPI2Tests {
    static func register(_ w: World, _ id: String, _ body: [String: Any], verify: Bool = true) async throws -> HTTP.Reply {
        var b: [String: Any] = ["issuer": w.idp.issuer, "client_id": TestEnv.uniqueName("fapi"), "redirect_uri": w.redirectURI,
                                "scopes": ["openid", "offline_access"], "profile": "fapi2"]
        for (k, v) in body { b[k] = v }
        return try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(id)" + (verify ? "" : "?verify=false"),
                                  key: w.operatorKey, json: b)
    }

    static func refused(_ r: HTTP.Reply, _ words: String) -> Bool {
        r.status == 400 && r["error"] as? String == "unservable_client" && (r["message"] as? String)?.contains(words) == true
    }

    @Test("refused at registration: client_secret_basic, no DPoP, RS256 assertions, no PAR, an RS256-only issuer, no verify — each with its reason, nothing stored")
    func registrationChecks() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.settings(par: "on")
        let secret = try await Self.register(w, "f1", ["auth_method": "client_secret_basic", "client_secret": "s", "dpop": true])
        #expect(Self.refused(secret, "private_key_jwt"), "\(secret.text)")
        #expect(Self.refused(try await Self.register(w, "f2", ["auth_method": "private_key_jwt"]), "sender-constrained"))
        #expect(Self.refused(try await Self.register(w, "f3", ["auth_method": "private_key_jwt", "assertion_alg": "RS256", "dpop": true]),
                             "ES256 and PS256 client assertions"))
        let unverified = try await Self.register(w, "f4", ["auth_method": "private_key_jwt", "dpop": true], verify: false)
        #expect(unverified.status == 400 && (unverified["message"] as? String)?.contains("metadata is read") == true)
        try await w.idp.settings(idTokenAlgorithms: ["RS256"])
        #expect(Self.refused(try await Self.register(w, "f5", ["auth_method": "private_key_jwt", "dpop": true]), "only PS256 and ES256 ID tokens"))
        try await w.idp.settings(par: "off", idTokenAlgorithms: ["ES256", "RS256"])
        #expect(Self.refused(try await Self.register(w, "f6", ["auth_method": "private_key_jwt", "dpop": true]), "pushed authorization requests"))
        #expect(try runPSQL("SELECT count(*) FROM clients WHERE tenant_id = '\(w.tenant)' AND profile = 'fapi2'")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test("end to end against the strict development IdP: pushed request with only client_id and request_uri, private_key_jwt with aud = issuer, DPoP-bound tokens, refresh, a proof that opens the resource; an RS256 ID token is refused")
    func strictEndToEnd() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.settings(fapi2: true)
        let idpClient = TestEnv.uniqueName("fapi")
        let put = try expectStatus(try await Self.register(w, "fapi", ["client_id": idpClient, "auth_method": "private_key_jwt",
                                                                          "assertion_alg": "PS256", "dpop": true]), 201)
        #expect(put["profile"] as? String == "fapi2" && put["dpop"] as? Bool == true)
        let jwks = try #require(put["jwks"] as? [String: Any])
        try await w.idp.registerClient(idpClient, secret: nil, redirectURI: w.redirectURI, jwks: jwks, dpopRequired: true)
        let start = try await w.startLogin(subject: "fay", client: "fapi")
        #expect(start.status == 201, "\(start.text)")
        let started = try expectStatus(start, 201)
        let q = URLComponents(string: started["authorization_url"] as! String)!.queryItems ?? []
        #expect(Set(q.map(\.name)) == ["client_id", "request_uri"], "\(q.map(\.name))")
        let s = try expectStatus(try await w.callback(try await w.authorize(started["authorization_url"] as! String)), 200)["session_id"] as! String
        #expect(try expectStatus(try await w.token(s), 200)["token_type"] as? String == "DPoP")
        try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200)
        let st = try await w.idp.counters(client: idpClient)
        #expect(st["client_assertions"] as? Int == 3, "PAR, code exchange and refresh each authenticated with an assertion for the issuer")
        let t = try expectStatus(try await w.token(s, body: ["dpop": ["htm": "GET", "htu": w.idp.issuer + "/resource"]]), 200)
        try expectStatus(try await DPoPTests.resource(w, token: t["access_token"] as! String, proof: DPoPTests.proofs(t)[0]), 200)

        // The profile holds at run time too: an ID token signed RS256 is refused at the callback.
        let rsClient = TestEnv.uniqueName("fapi-rs")
        let rs = try expectStatus(try await Self.register(w, "fapi-rs", ["client_id": rsClient, "auth_method": "private_key_jwt", "dpop": true]), 201)
        try await w.idp.registerClient(rsClient, secret: nil, redirectURI: w.redirectURI, idTokenAlg: "RS256", jwks: rs["jwks"], dpopRequired: true)
        let refused = try await w.login(subject: "rita", client: "fapi-rs")
        #expect(refused.status == 400 && refused["error"] as? String == "invalid_id_token", "\(refused.status)")
        #expect(try w.count("sessions") == 1)
    }
}
