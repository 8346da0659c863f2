import Foundation
import Testing

/// Every catalogue entry against the development IdP's personality of the same provider, over
/// HTTP, as an operator would register it: the catalogue's descriptor with only its URLs pointed
/// at the personality (and, for a provider's optional mode, the override docs/providers.md gives
/// for it). The personality and the entry must agree on how grants live; then a login with the
/// application's own user id, hand-outs with the right token type, scopes, expiry and kept
/// members, refreshes where the provider has them, each presenting the refresh token the provider
/// expects (counted at the provider: the newest of a rotating one, the same reusable one again,
/// never a spent one), a refused refresh token read in the provider's own shape, and a revocation
/// in the provider's own style of the token the entry names (or none, said as such).
@Suite(.serialized)
struct CatalogueTests {
    /// The catalogue entries a personality plays: all of them.
    static let played = ["asana", "atlassian", "auth0", "bitbucket", "box", "discord", "dropbox", "github", "github-app", "gitlab", "google",
                         "hubspot", "intuit", "keycloak", "linkedin", "microsoft", "microsoft-common", "notion", "okta", "salesforce", "slack",
                         "spotify", "x", "xero", "zoom"]

    /// An entry as shipped, or in one of its provider's optional modes.
    struct Case: Sendable, CustomTestStringConvertible {
        let provider: String
        var mode: Mode? = nil
        var testDescription: String { mode.map { "\(provider) with \($0.rawValue)" } ?? provider }
    }

    /// A provider's optional mode: a setting of the app at the provider, played by the dev IdP
    /// for a client registered with it, and the registration override docs/providers.md tells
    /// operators to write for it. Its raw value names both (the `POST /admin/clients` member, and
    /// the member of `GET /p` saying how the personality's grants then live).
    enum Mode: String, Sendable {
        case tokenRotation = "token_rotation"

        /// The paragraph of the provider's section of docs/providers.md that gives the override.
        var paragraph: String {
            switch self {
            case .tokenRotation: "**An app with token rotation on.**"
            }
        }
    }

    /// The registration's descriptor override for `c`'s mode (RFC 7396, over the entry), read from
    /// docs/providers.md: the `"descriptor": {…}` of the first JSON block after the mode's
    /// paragraph in the provider's section, so that the test runs what operators are told to write.
    static func override(_ c: Case) throws -> [String: Any] {
        guard let mode = c.mode else { return [:] }
        let doc = try String(contentsOf: catalogue.deletingLastPathComponent().appendingPathComponent("docs/providers.md"), encoding: .utf8)
        let section = try #require(doc.components(separatedBy: "\n## " + c.provider + "\n").dropFirst().first, "no section \(c.provider)")
        let after = try #require(section.components(separatedBy: mode.paragraph).dropFirst().first, "no paragraph \(mode.paragraph)")
        let block = try #require(after.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let o = try JSONSerialization.jsonObject(with: Data(("{" + block + "}").utf8)) as? [String: Any]
        return try #require(o?["descriptor"] as? [String: Any], "no descriptor in \(block)")
    }

    static let cases = played.map { Case(provider: $0) } + [Case(provider: "slack", mode: .tokenRotation)]

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
        if given["introspection"] != nil { endpoints["introspection"] = fixed(p["introspection_endpoint"]) }
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

    /// The catalogue's word for a personality's refresh behaviour (`GET /p`'s `refresh`): a
    /// token echoed by every answer is as reusable as one no answer carries.
    static func refreshKind(_ played: Any?) -> String? {
        (played as? String).map { $0 == "reusableEchoed" ? "reusable" : $0 }
    }

    @Test("each provider of the catalogue, against its personality: login, hand-outs, refreshes as the provider rotates, its refusal, revocation in its style",
          arguments: cases)
    func provider(_ c: Case) async throws {
        let name = c.provider
        let w = try await World()
        defer { w.stop() }
        let all = try await w.idp.personalities()
        let p = try #require(all[name], "no personality \(name)")
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.catalogue.appendingPathComponent(name + ".json"))) as? [String: Any])
        let clientID = TestEnv.uniqueName(name), secret = "s-" + UUID().uuidString
        try await w.idp.registerPersonalityClient(clientID, secret: secret, redirectURI: w.redirectURI,
                                                  settings: c.mode.map { [$0.rawValue: true] } ?? [:])
        let auth = (p["client_auth"] as? [String] ?? []).contains("body") ? "client_secret_post" : "client_secret_basic"
        var scopes = ["read", "write"]
        if let offline = p["offline_scope"] as? String { scopes.append(offline) }
        let reg = try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(name)", key: w.operatorKey, json: [
            "provider": name, "client_id": clientID, "client_secret": secret, "auth_method": auth, "redirect_uri": w.redirectURI,
            "scopes": scopes, "descriptor": Self.patch(entry: entry, personality: p).merging(try Self.override(c)) { _, b in b }])
        #expect(reg.status == 201, "\(name): \(reg.json)")
        try expectStatus(reg, 201)
        let descriptor = try #require(reg["descriptor"] as? [String: Any])
        let grant = descriptor["grant"] as? [String: Any] ?? [:]
        let refreshes = grant["refresh_token"] as? String ?? "rotating"
        let expires = grant["access_token_expires"] as? Bool ?? true

        // The personality plays the grants the entry describes.
        let plays = c.mode.flatMap { p[$0.rawValue] as? [String: Any] } ?? p
        #expect(Self.refreshKind(plays["refresh"]) == refreshes && plays["access_expires"] as? Bool == expires,
                "\(c.testDescription): the entry says refresh \(refreshes), expires \(expires); the personality plays \(plays)")

        // A login that carries the application's own id of its user.
        let started = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/logins", key: w.workerKey, json: [
            "client": name, "login_hint": "user-\(name)", "end_user": "app-user-42"]), 201)
        let back = try await w.callback(try await w.authorize(started["authorization_url"] as! String))
        #expect(back.status == 200, "\(name): \(back.json)")
        let done = try expectStatus(back, 200)
        let session = try #require(done["session_id"] as? String)
        #expect((done["subject"] as? String ?? "").isEmpty == false && done["end_user"] as? String == "app-user-42", "\(name): \(done.json)")

        // Each hand-out: Bearer, the scopes granted each as itself (however the provider's answer
        // joins them), expires_at null exactly when the entry says the token never expires (else
        // the provider's lifetime, where its answers say it), and every member the entry keeps,
        // the same in every hand-out.
        let answersSay = plays["sends_expires_in"] as? Bool ?? p["sends_expires_in"] as? Bool ?? true
        let lifetime = answersSay ? plays["access_ttl"] as? Int : nil
        let keeps = ((entry["token_response"] as? [String: Any])?["keep"] as? [String: Any] ?? [:]).keys.sorted()
        var kept: [String: String] = [:]
        func expectHandOut(_ t: HTTP.Reply, _ which: String) {
            #expect(t["token_type"] as? String == "Bearer", "\(name), \(which): \(t.json)")
            let granted = Set((t["scope"] as? String ?? "").split(separator: " ").map(String.init))
            #expect(granted.isSuperset(of: scopes), "\(name), \(which): scope \(t["scope"] ?? "none"), asked \(scopes)")
            let at = t["expires_at"]
            #expect(expires ? at is String : at is NSNull, "\(name), \(which): expires_at \(at ?? "missing"), the entry says expires \(expires)")
            if let lifetime, at is String, let left = (t["expires_in"] as? NSNumber)?.doubleValue {
                #expect(abs(left - Double(lifetime)) < 120, "\(name), \(which): handed out with expires_in \(Int(left)), the provider's tokens live \(lifetime) s")
            }
            let metadata = t["metadata"] as? [String: Any] ?? [:]
            for k in keeps {
                let v = metadata[k].flatMap { $0 is NSNull ? nil : "\($0)" }
                #expect(v.map { !$0.isEmpty } == true, "\(name), \(which): metadata \(k) not kept: \(metadata)")
                #expect(kept[k, default: v ?? ""] == v, "\(name), \(which): metadata \(k) changed from \(kept[k] ?? "") to \(v ?? "nothing")")
                kept[k] = v
            }
        }
        expectHandOut(try expectStatus(try await w.token(session), 200), "first hand-out")

        // Two refreshes where the provider has them, each presenting the token it expects: the
        // newest of a rotating one, the same reusable one again; none where it has none.
        if refreshes != "none" {
            for i in 1...2 { expectHandOut(try expectStatus(try await w.token(session, body: ["min_ttl": 60, "force_refresh": true]), 200), "refresh \(i)") }
        }
        let stats = try await w.idp.counters(client: clientID)
        let presented = (refreshes == "none" ? 0 : 2, refreshes == "reusable" ? 1 : 0)
        #expect(stats["refreshes_ok"] as? Int == presented.0 && stats["refresh_presentations"] as? Int == presented.0
                && stats["refresh_repeats"] as? Int == presented.1 && stats["reuse_detected"] as? Int == 0,
                "\(c.testDescription): \(presented.0) refreshes with \(presented.1) repeats expected (\(refreshes)): \(stats)")

        // A refused refresh token, refused in the provider's own shape (its status, its code where
        // the entry reads it): the grant ends unless the entry names the code as retried or as
        // refusing the client (docs/provider-descriptors.md's defaults where it names none).
        if refreshes != "none" {
            let other = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/logins", key: w.workerKey, json: [
                "client": name, "login_hint": "other-\(name)", "end_user": "app-user-43"]), 201)
            let second = try expectStatus(try await w.callback(try await w.authorize(other["authorization_url"] as! String)), 200)
            let id = try #require(second["session_id"] as? String)
            _ = try await w.idp.call("POST", w.idp.issuer + "/admin/revoke-subject", json: ["sub": "other-\(name)"])
            let refused = try await w.token(id, body: ["min_ttl": 60, "force_refresh": true])
            let refusal = plays["refresh_refusal"] as? [String: Any] ?? p["refresh_refusal"] as? [String: Any] ?? [:]
            let code = refusal["error"] as? String ?? ""
            let named = descriptor["refusals"] as? [String: Any] ?? [:]
            let retried = named["retried"] as? [String] ?? ["invalid_request"]
            let clientRefused = named["client_refused"] as? [String] ?? ["invalid_client", "unauthorized_client"]
            let expected = retried.contains(code) ? "retried" : clientRefused.contains(code) ? "idp_client_rejected" : "needs_reauth"
            if expected == "retried" {
                #expect(refused.status >= 500 && refused["error"] as? String != "needs_reauth", "\(c.testDescription): \(code) is retried: \(refused.status) \(refused.json)")
            } else {
                #expect(refused["error"] as? String == expected, "\(c.testDescription): \(code) (HTTP \(refusal["status"] ?? "?")) should be \(expected): \(refused.status) \(refused.json)")
            }
        }

        // Revocation in the provider's own style, of the token the entry names, or none, said as
        // such; never a token the provider does not know (a spent one).
        let revoked = try await HTTP.request("DELETE", w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(session)", key: w.workerKey)
        let style = (descriptor["revocation"] as? [String: Any])?["style"] as? String ?? "rfc7009"
        #expect(revoked.status == 200 && revoked["idp_revocation"] as? String == (style == "none" ? "unsupported" : "confirmed"), "\(name): \(revoked.json)")
        if style != "none" {
            let after = try await w.idp.counters(client: clientID)
            let byStyle = after["revocations_by_style"] as? [String: Int] ?? [:], byKind = after["revoked_tokens"] as? [String: Int] ?? [:]
            let named = (descriptor["revocation"] as? [String: Any])?["token"] as? String ?? "refresh"
            #expect(byStyle[p["revocation_style"] as? String ?? ""] ?? 0 >= 1, "\(name): \(byStyle)")
            #expect(byKind[named] ?? 0 >= 1 && byKind["unknown"] == nil, "\(c.testDescription): the entry revokes the \(named) token: \(byKind)")
            // An entry that names its token sends only that one: revoking it ends the grant.
            if (descriptor["revocation"] as? [String: Any])?["token"] != nil {
                #expect(byKind.filter { $0.key != named }.values.reduce(0, +) == 0, "\(c.testDescription): only the \(named) token is sent: \(byKind)")
            }
        }
    }
}
