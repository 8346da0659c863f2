import BrokerCore
import BrokerCrypto
import Foundation
import Testing

/// The development IdP's personalities, driven over HTTP as each provider's client would: every
/// quirk a provider descriptor describes is played here, so that the catalogue can be tested end
/// to end without the providers.
@Suite("Development IdP personalities: each provider's documented quirks over HTTP", .serialized)
struct PersonalityTests {
    let redirect = "https://app.example.test/callback"
    let secret = "personality-secret-" + UUID().uuidString.prefix(8).lowercased()

    /// A dev IdP with one client, usable with every personality.
    func start() async throws -> (idp: DevIdPServer, client: String) {
        let idp = try await DevIdPServer()
        let client = TestEnv.uniqueName("pc")
        try await idp.registerPersonalityClient(client, secret: secret, redirectURI: redirect)
        return (idp, client)
    }

    func verifier() -> String {
        var rng = SystemRandomNumberGenerator()
        return Identifiers.token(bytes: 32, using: &rng)
    }

    /// Signs `subject` in at personality `name` and exchanges the code with the client's
    /// credentials where the personality takes them; the token answer.
    func login(_ idp: DevIdPServer, _ client: String, _ name: String, subject: String = "alice", params: [String: String] = [:],
               headers: [String: String] = [:]) async throws -> HTTP.Reply {
        let p = try #require(try await idp.personalities()[name])
        let tenant = p["tenant"] as? String ?? "common"
        let v = verifier()
        let q = try await idp.authorize((p["authorization_endpoint"] as! String).replacingOccurrences(of: "{tenant}", with: tenant),
                                        client: client, redirectURI: redirect, subject: subject, params: params, verifier: v)
        let code = try #require(q["code"], "\(name): \(q)")
        #expect(q["state"] == "st-1" && q["iss"] == nil, "\(name): \(q)")
        let basic = (p["client_auth"] as? [String] ?? []).contains("basic")
        var fields = ["grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "code_verifier": v]
        if !basic { fields["client_id"] = client; fields["client_secret"] = secret }
        return try await idp.post((p["token_endpoint"] as! String).replacingOccurrences(of: "{tenant}", with: tenant), fields,
                                  basic: basic ? (client, secret) : nil, json: (p["token_request"] as? [String]) == ["json"], headers: headers)
    }

    @Test("every personality: authorize with login_hint, exchange the code, its \"who am I\" knows the token, its metadata answers, its refresh token refreshes")
    func everyPersonality() async throws {
        let (idp, client) = try await start()
        defer { idp.process.stop() }
        let all = try await idp.personalities()
        #expect(Set(all.keys).isSuperset(of: ["github", "github-app", "gitlab", "google", "microsoft", "microsoft-common", "slack", "salesforce",
                                              "dropbox", "notion", "atlassian", "hubspot", "zoom", "intuit", "xero", "linkedin", "okta", "auth0",
                                              "oauth2-form"]))
        for (name, p) in all.sorted(by: { $0.key < $1.key }) {
            var params = ["scope": p["oidc"] as? Bool == true ? "openid email" : "read"]
            if let s = p["offline_scope"] as? String { params["scope"]! += " " + s }
            for (k, v) in p["offline_parameter"] as? [String: String] ?? [:] { params[k] = v }
            let answer = try await login(idp, client, name, subject: "user-\(name)@example.test", params: params)
            #expect(answer.status == 200, "\(name): \(answer.text)")
            let m = answer.members
            let access = try #require(m["access_token"], "\(name): \(answer.text)")
            if p["oidc"] as? Bool == true {
                let claims = jwtClaims(try #require(m["id_token"], "\(name)"))
                #expect(claims["aud"] as? String == client && (claims["iss"] as? String)?.hasPrefix(idp.issuer + "/p/" + name) == true, "\(name): \(claims)")
            }
            let who = try #require((p["whoami"] as? [[String: String]])?.first)
            var url = who["url"]!.replacingOccurrences(of: "{token}", with: access)
            if name == "salesforce" { url = try #require(m["id"]) }
            if let tenant = p["tenant"] as? String { url = url.replacingOccurrences(of: "{tenant}", with: tenant) }
            let me = try await idp.call(who["method"]!, url, headers: ["Authorization": "Bearer " + access])
            #expect(me.status == 200 && me["ok"] as? Bool != false, "\(name): \(me.status) \(me.text)")
            let stranger = try await idp.call(who["method"]!, url.replacingOccurrences(of: access, with: "not-a-token"),
                                              headers: ["Authorization": "Bearer not-a-token"])
            #expect(stranger.status == 401 || stranger["ok"] as? Bool == false, "\(name): \(stranger.status) \(stranger.text)")
            if let metadata = p["metadata"] as? String {
                let d = try await idp.call("GET", metadata.replacingOccurrences(of: "{tenant}", with: p["tenant"] as? String ?? "common"))
                #expect(d.status == 200 && d["token_endpoint"] is String, "\(name): \(d.text)")
            }
            if let refresh = m["refresh_token"] {
                let r = try await refreshAt(idp, client, p, refresh)
                #expect(r.status == 200 && r.members["access_token"] != nil && r.members["access_token"] != access, "\(name): \(r.text)")
            }
        }
    }

    func refreshAt(_ idp: DevIdPServer, _ client: String, _ p: [String: Any], _ refresh: String) async throws -> HTTP.Reply {
        let basic = (p["client_auth"] as? [String] ?? []).contains("basic")
        var fields = ["grant_type": "refresh_token", "refresh_token": refresh]
        if !basic { fields["client_id"] = client; fields["client_secret"] = secret }
        let url = (p["token_endpoint"] as! String).replacingOccurrences(of: "{tenant}", with: p["tenant"] as? String ?? "common")
        return try await idp.post(url, fields, basic: basic ? (client, secret) : nil, json: (p["token_request"] as? [String]) == ["json"])
    }

    func stats(_ idp: DevIdPServer, _ client: String) async throws -> [String: Any] { try await idp.counters(client: client) }
}
