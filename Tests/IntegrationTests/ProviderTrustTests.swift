import Foundation
import Testing

/// A client registration's own trust anchors reach a provider behind a private CA, and widen no
/// one else's trust: another tenant's client for the same provider, trusting only the
/// deployment's CAs, is refused by its certificate — at registration a 400, on a token request a
/// 502, both naming the refusal — and its
/// session stays as it was, refresh token unspent, until its registration trusts that CA.
@Suite("Provider trust per client", .serialized)
struct ProviderTrustTests {
    @Test("own anchors reach the private provider; another tenant's client is refused by its certificate (400 at registration, 502 on a token request, naming it), the session untouched until it trusts that CA")
    func anchorsPerClient() async throws {
        let w = try await World()   // the deployment trusts the system bundle only
        defer { w.stop() }
        let pki = try TestCA(name: "tenant-pki")
        let provider = try await DevIdPServer(tls: pki)
        defer { provider.process.stop() }
        let b = w.brokers[0].url, op = w.operatorKey
        let secret = "secret-" + UUID().uuidString
        func registration(_ idpClient: String, anchors: String?) -> [String: Any] {
            var r: [String: Any] = ["issuer": provider.issuer, "client_id": idpClient, "auth_method": "client_secret_basic",
                                    "client_secret": secret, "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"]]
            if let anchors { r["trust_anchors"] = anchors }
            return r
        }
        func importSession(tenant: String, client: String, idpClient: String, key: String) async throws -> String {
            let t = try await provider.login(client: idpClient, secret: secret, redirectURI: w.redirectURI, subject: "ada")
            let r = try await HTTP.post(b + "/v1/tenants/\(tenant)/sessions:import", key: key, json: [
                "client": client, "subject": "ada", "refresh_token": t.refresh, "access_token": t.access,
                "expires_at": ISO8601DateFormatter().string(from: Date().addingTimeInterval(30))])
            try expectStatus(r, 201)
            return r["session_id"] as! String
        }

        // Tenant A's client trusts the private CA: it registers (discovery over TLS) and refreshes.
        let ownID = TestEnv.uniqueName("own")
        try await provider.registerClient(ownID, secret: secret, redirectURI: w.redirectURI)
        try await expectStatus(HTTP.put(b + "/v1/tenants/\(w.tenant)/clients/private", key: op, json: registration(ownID, anchors: pki.pem)), 201)
        let own = try await importSession(tenant: w.tenant, client: "private", idpClient: ownID, key: w.workerKey)
        try expectStatus(try await w.token(own), 200)

        // Tenant B's client for the same provider without anchors: refused at registration (the
        // operator's input does not hold: 400 naming the certificate refusal)…
        let other = TestEnv.uniqueName("t")
        try await expectStatus(HTTP.put(b + "/v1/tenants/\(other)", key: op, json: ["name": "Other"]), 201)
        let key = try await w.newKey(roles: ["worker", "admin"], tenants: [other])
        let theirsID = TestEnv.uniqueName("theirs")
        try await provider.registerClient(theirsID, secret: secret, redirectURI: w.redirectURI)
        let url = b + "/v1/tenants/\(other)/clients/private"
        let refused = try await HTTP.put(url, key: op, json: registration(theirsID, anchors: nil))
        #expect(refused.status == 400 && refused["error"] as? String == "invalid_issuer", "\(refused.status) \(refused.json)")
        #expect((refused["message"] as? String)?.contains("unable to get local issuer certificate") == true, "\(refused.json)")
        #expect(try await HTTP.get(url, key: op).status == 404)

        // …and, registered without the discovery check, its session is refused the same way, untouched.
        try await expectStatus(HTTP.put(url + "?verify=false", key: op, json: registration(theirsID, anchors: nil)), 201)
        let theirs = try await importSession(tenant: other, client: "private", idpClient: theirsID, key: key)
        let token = { () async throws -> HTTP.Reply in
            try await HTTP.post(b + "/v1/tenants/\(other)/sessions/\(theirs)/token", key: key, json: ["min_ttl": 60])
        }
        let r = try await token()
        #expect(r.status == 502 && r["error"] as? String == "idp_certificate_refused", "\(r.status) \(r.json)")
        let session = try await HTTP.get(b + "/v1/tenants/\(other)/sessions/\(theirs)", key: key)
        #expect(session["state"] as? String == "active")
        #expect(try await provider.presentations(client: theirsID).presented == 0, "the refresh token reached the provider")

        // Once its registration trusts the CA, the same refresh token works (it was never spent).
        try await expectStatus(HTTP.put(url, key: op, json: registration(theirsID, anchors: pki.pem)), 200)
        var after = try await token()
        for _ in 0..<40 where after.status == 503 {   // the refusal's backoff
            try await Task.sleep(for: .milliseconds(250))
            after = try await token()
        }
        #expect(after.status == 200, "\(after.status) \(after.json)")
        let p = try await provider.presentations(client: theirsID)
        #expect(p.presented == 1 && p.reuse == 0)
    }
}
