import Foundation
import Testing

/// Every catalogue entry against the development IdP's personality of the same provider, over
/// HTTP, as an operator would register it: the catalogue's descriptor with only its URLs pointed
/// at the personality. A login with the application's own user id, a hand-out with the right
/// token type and kept members, refreshes where the provider has them (rotation counted at the
/// provider: never a rotated token presented again; a reusable one presented again), and a
/// revocation in the provider's own style (or none, said as such).
@Suite(.serialized)
struct CatalogueTests {
    /// The catalogue entries a personality plays: all of them.
    static let played = ["asana", "atlassian", "auth0", "bitbucket", "box", "discord", "dropbox", "github", "github-app", "gitlab", "google",
                         "hubspot", "intuit", "keycloak", "linkedin", "microsoft", "microsoft-common", "notion", "okta", "salesforce", "slack",
                         "spotify", "x", "xero", "zoom"]

    static let catalogue = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("providers")

    /// The catalogue entry's URLs, each pointed at the personality's own: the registration's
    /// descriptor patch (RFC 7396) an operator pointing the entry at a mock would write.
    static func patch(entry: [String: Any], personality p: [String: Any]) -> [String: Any] {
        // Microsoft's paths name the tenant: the personality's own, or the common one.
        func url(_ v: Any?) -> String? {
            (v as? String).map { $0.replacingOccurrences(of: "{tenant}", with: p["tenant"] as? String ?? "common") }
        }
        /// A fixed URL (no placeholder left), else NSNull: the member is removed.
        func fixed(_ v: Any?) -> Any { url(v).flatMap { $0.contains("{") ? nil : $0 } ?? NSNull() }
        var patch: [String: Any] = [:]
        var endpoints: [String: Any] = [:]
        let given = entry["endpoints"] as? [String: Any] ?? [:]
        let revocations = p["revocation"] as? [[String: Any]] ?? []
        let whoami = p["whoami"] as? [[String: Any]] ?? []
        if given["authorization"] != nil { endpoints["authorization"] = fixed(p["authorization_endpoint"]) }
        if given["token"] != nil { endpoints["token"] = fixed(p["token_endpoint"]) }
        if given["revocation"] != nil { endpoints["revocation"] = fixed(revocations.first?["url"]) }
        if given["userinfo"] != nil { endpoints["userinfo"] = fixed(whoami.first?["url"]) }
        if given["introspection"] != nil { endpoints["introspection"] = NSNull() }
        if !endpoints.isEmpty { patch["endpoints"] = endpoints }
        if var subject = entry["subject"] as? [String: Any], subject["url"] != nil {
            let method = subject["method"] as? String ?? "GET"
            subject["url"] = url((whoami.first { $0["method"] as? String == method } ?? whoami.first)?["url"])
            patch["subject"] = subject
        }
        if var revocation = entry["revocation"] as? [String: Any], revocation["url"] != nil {
            revocation["url"] = url(revocations.first?["url"])
            patch["revocation"] = revocation
        }
        if let issuer = p["issuer"] as? String {
            patch["issuer"] = url(issuer)
            if entry["issuer_template"] != nil { patch["issuer_template"] = issuer.replacingOccurrences(of: "{tenant}", with: "{tenantid}") }
        }
        return patch
    }

    /// What an operator changes of an entry for the provider's optional modes the personality
    /// plays: Slack's token rotation (off by default: tokens that never expire, no refresh token).
    static func mode(_ name: String) -> [String: Any] {
        name == "slack" ? ["grant": ["refresh_token": "rotating", "access_token_expires": true]] : [:]
    }

    @Test("each provider of the catalogue, against its personality: login, hand-out, refreshes as the provider rotates, revocation in its style",
          arguments: played)
    func provider(_ name: String) async throws {
        let w = try await World()
        defer { w.stop() }
        let all = try await w.idp.personalities()
        let p = try #require(all[name], "no personality \(name)")
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.catalogue.appendingPathComponent(name + ".json"))) as? [String: Any])
        let clientID = TestEnv.uniqueName(name), secret = "s-" + UUID().uuidString
        try await w.idp.registerPersonalityClient(clientID, secret: secret, redirectURI: w.redirectURI)
        let auth = (p["client_auth"] as? [String] ?? []).contains("body") ? "client_secret_post" : "client_secret_basic"
        var scopes = ["read"]
        if let offline = p["offline_scope"] as? String { scopes.append(offline) }
        let reg = try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(name)", key: w.operatorKey, json: [
            "provider": name, "client_id": clientID, "client_secret": secret, "auth_method": auth, "redirect_uri": w.redirectURI,
            "scopes": scopes, "descriptor": Self.patch(entry: entry, personality: p).merging(Self.mode(name)) { _, b in b }])
        #expect(reg.status == 201, "\(name): \(reg.json)")
        try expectStatus(reg, 201)
        let descriptor = try #require(reg["descriptor"] as? [String: Any])
        let grant = descriptor["grant"] as? [String: Any] ?? [:]
        let refreshes = grant["refresh_token"] as? String ?? "rotating"
        let expires = grant["access_token_expires"] as? Bool ?? true

        // A login that carries the application's own id of its user.
        let started = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/logins", key: w.workerKey, json: [
            "client": name, "login_hint": "user-\(name)", "end_user": "app-user-42"]), 201)
        let back = try await w.callback(try await w.authorize(started["authorization_url"] as! String))
        #expect(back.status == 200, "\(name): \(back.json)")
        let done = try expectStatus(back, 200)
        let session = try #require(done["session_id"] as? String)
        #expect((done["subject"] as? String ?? "").isEmpty == false && done["end_user"] as? String == "app-user-42", "\(name): \(done.json)")
        let keeps = ((entry["token_response"] as? [String: Any])?["keep"] as? [String: Any] ?? [:]).keys
        let t1 = try expectStatus(try await w.token(session), 200)
        #expect(t1["token_type"] as? String == "Bearer", "\(name)")
        #expect(expires || t1["expires_at"] is NSNull, "\(name): a token that never expires is handed out with expires_at null")
        for k in keeps { #expect((t1["metadata"] as? [String: Any])?[k] != nil, "\(name): metadata \(k) not kept: \(t1["metadata"] ?? "none")") }

        // Two refreshes where the provider has them.
        if refreshes != "none" {
            for _ in 0..<2 { try expectStatus(try await w.token(session, body: ["min_ttl": 60, "force_refresh": true]), 200) }
            let stats = try await w.idp.call("GET", w.idp.issuer + "/stats?client_id=\(clientID)")
            #expect(stats["refreshes_ok"] as? Int == 2 && stats["reuse_detected"] as? Int == 0, "\(name): \(stats.json)")
            if refreshes == "reusable" {
                #expect((stats["refresh_repeats"] as? Int ?? 0) >= 1, "\(name): a reusable refresh token is presented again: \(stats.json)")
            } else {
                #expect((stats["refresh_repeats"] as? Int ?? 0) == 0, "\(name): a rotating refresh token is never presented again: \(stats.json)")
            }
        }
        // Revocation in the provider's own style, or none, said as such.
        let revoked = try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(session)", key: w.workerKey)
        let style = (descriptor["revocation"] as? [String: Any])?["style"] as? String ?? "rfc7009"
        #expect(revoked.status == 200 && revoked["idp_revocation"] as? String == (style == "none" ? "unsupported" : "confirmed"), "\(name): \(revoked.json)")
        if style != "none" {
            let stats = try await w.idp.call("GET", w.idp.issuer + "/stats?client_id=\(clientID)")
            let byStyle = stats["revocations_by_style"] as? [String: Int] ?? [:]
            #expect(byStyle[p["revocation_style"] as? String ?? ""] ?? 0 >= 1, "\(name): \(stats.json)")
        }
    }
}
