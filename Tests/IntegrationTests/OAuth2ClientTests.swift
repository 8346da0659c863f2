import Foundation
import Testing

/// Plain OAuth 2.0 registrations against the development IdP over HTTP, with the endpoints
/// given by a provider descriptor (no metadata read): no `openid`, no nonce, no ID token, the
/// user's id from the userinfo endpoint; catalogue entries from the operator's own folder; bad
/// descriptors refused with the member named and nothing stored.
@Suite(.serialized)
struct OAuth2ClientTests {
    /// The dev IdP described as a plain OAuth 2.0 provider.
    static func descriptor(_ idp: String) -> [String: Any] {
        ["endpoints": ["authorization": idp + "/authorize", "token": idp + "/token", "userinfo": idp + "/userinfo", "revocation": idp + "/revoke"]]
    }

    func register(_ w: World, _ id: String, _ body: [String: Any]) async throws -> HTTP.Reply {
        var b: [String: Any] = ["client_id": w.idpClientID, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
                                "redirect_uri": w.redirectURI, "scopes": ["offline_access"]]
        for (k, v) in body { b[k] = v }
        return try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(id)", key: w.operatorKey, json: b)
    }

    @Test("an OAuth 2.0 login: no openid, no nonce, the user from userinfo, tokens refreshed and revoked at the described endpoints")
    func login() async throws {
        let w = try await World()
        defer { w.stop() }
        let reg = try expectStatus(try await register(w, "plain", ["protocol": "oauth2", "descriptor": Self.descriptor(w.idp.issuer)]), 201)
        #expect(reg["protocol"] as? String == "oauth2" && reg["issuer"] as? String == w.idp.issuer, "the issuer is the token endpoint's origin")
        #expect((reg["descriptor"] as? [String: Any])?["protocol"] as? String == "oauth2")
        let started = try expectStatus(try await w.startLogin(subject: "olivia", client: "plain"), 201)
        let url = try #require(URLComponents(string: started["authorization_url"] as! String))
        let q = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(q["scope"] == "offline_access" && q["nonce"] == nil && q["code_challenge_method"] == "S256")
        let done = try expectStatus(try await w.callback(try await w.authorize(url.string!)), 200)
        let session = try #require(done["session_id"] as? String)
        #expect(done["subject"] as? String == "olivia", "the user's id came from userinfo")
        let t1 = try expectStatus(try await w.token(session), 200)
        #expect(t1["token_type"] as? String == "Bearer" && t1["metadata"] == nil)
        let t2 = try expectStatus(try await w.token(session, body: ["min_ttl": 60, "force_refresh": true]), 200)
        #expect(t2["access_token"] as? String != t1["access_token"] as? String)
        let stats = try await w.idp.stats(client: w.idpClientID)
        #expect(stats.refreshesOK == 1 && stats.reuseDetected == 0)
        let revoked = try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(session)", key: w.workerKey)
        #expect(revoked.status == 200 && revoked["idp_revocation"] as? String == "confirmed", "\(revoked.json)")
    }

    @Test("a provider from the operator's own catalogue folder, overridden by the registration; unknown providers and bad descriptors are refused, nothing stored")
    func catalogueAndRefusals() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("providers-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let idp = try await DevIdPServer()
        var entry = Self.descriptor(idp.issuer)
        entry["protocol"] = "oauth2"
        entry["title"] = "The development IdP, plainly"
        entry["grant"] = ["refresh_token": "reusable"]
        try JSONSerialization.data(withJSONObject: entry).write(to: folder.appendingPathComponent("devplain.json"))
        let w = try await World(extraEnv: ["TOKENBROKER_PROVIDERS_DIR": folder.path], idp: idp)
        defer { w.stop() }
        let reg = try expectStatus(try await register(w, "cat", ["provider": "devplain", "descriptor": ["grant": ["access_token_expires": false]]]), 201)
        let d = try #require(reg["descriptor"] as? [String: Any])
        #expect(reg["provider"] as? String == "devplain" && (d["grant"] as? [String: Any])?["refresh_token"] as? String == "reusable"
                && (d["grant"] as? [String: Any])?["access_token_expires"] as? Bool == false, "the entry, with the registration's patch over it")
        // Refusals: each names what is wrong, and stores nothing.
        let cases: [([String: Any], String, String)] = [
            (["provider": "nosuch"], "unknown_provider", "devplain"),
            (["protocol": "oauth2", "descriptor": ["token_response": ["access_token": "access_token"]]], "invalid_descriptor", "token_response.access_token"),
            (["protocol": "oauth2", "descriptor": ["grant": ["refresh_tokens": "reusable"]]], "invalid_descriptor", "grant.refresh_tokens"),
            (["protocol": "oauth2", "descriptor": ["endpoints": ["token": "http://idp.example.com/token"]]], "invalid_descriptor", "endpoints.token"),
            (["protocol": "saml"], "invalid_request", "protocol"),
            (["protocol": "oauth2"], "invalid_request", "issuer"),
        ]
        for (body, code, named) in cases {
            let r = try await register(w, "bad", body)
            #expect(r.status == 400 && r["error"] as? String == code && (r["message"] as? String ?? "").contains(named), "\(body): \(r.status) \(r.json)")
        }
        #expect(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/bad", key: w.operatorKey).status == 404)
    }

    @Test("a provider folder that cannot be used stops the start with a message naming it")
    func badFolders() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("providers-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("not json".utf8).write(to: folder.appendingPathComponent("broken.json"))
        let base = ["DATABASE_URL": try TestEnv.databaseURL(), "TOKENBROKER_SEALING_KEYS": "k1:" + Data(repeating: 7, count: 32).base64EncodedString(),
                    "TOKENBROKER_LISTEN": "127.0.0.1:\(TestEnv.freePort())"]
        let missing = try runCommand("tokenbroker", ["serve"], env: base.merging(["TOKENBROKER_PROVIDERS_DIR": "/nonexistent/providers"]) { _, b in b })
        #expect(missing.status != 0 && missing.err.contains("TOKENBROKER_PROVIDERS_DIR") && missing.err.contains("/nonexistent/providers"), "\(missing.err)")
        let broken = try runCommand("tokenbroker", ["serve"], env: base.merging(["TOKENBROKER_PROVIDERS_DIR": folder.path]) { _, b in b })
        #expect(broken.status != 0 && broken.err.contains("broken.json") && broken.err.contains("not a JSON object"), "\(broken.err)")
    }
}
