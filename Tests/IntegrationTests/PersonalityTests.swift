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

    /// Runs `body` with a fresh dev IdP, its client, and the endpoints of personality `name`.
    func playing(_ name: String?, _ body: (DevIdPServer, String, [String: Any]) async throws -> Void) async throws {
        let (idp, client) = try await start()
        defer { idp.process.stop() }
        var p: [String: Any] = [:]
        if let name { p = try #require(try await idp.personalities()[name]) }
        try await body(idp, client, p)
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
                                              "oauth2-form", "box", "discord", "spotify", "bitbucket", "asana", "keycloak"]))
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
            var url = who["url"]!
            if name == "salesforce" { url = try #require(m["id"]) }
            if let tenant = p["tenant"] as? String { url = url.replacingOccurrences(of: "{tenant}", with: tenant) }
            /// "Who am I" for `token`, carried as the personality takes it (HubSpot's introspection: in a form, with the client's credentials).
            func whoAmI(_ token: String) async throws -> HTTP.Reply {
                guard who["token_in"] == "form" else { return try await idp.call(who["method"]!, url, headers: ["Authorization": "Bearer " + token]) }
                return try await idp.post(url, ["token": token, "client_id": client, "client_secret": secret])
            }
            let me = try await whoAmI(access)
            #expect(me.status == 200 && me["ok"] as? Bool != false && me["active"] as? Bool != false, "\(name): \(me.status) \(me.text)")
            let stranger = try await whoAmI("not-a-token")
            #expect(stranger.status == 401 || stranger["ok"] as? Bool == false || stranger["active"] as? Bool == false,
                    "\(name): \(stranger.status) \(stranger.text)")
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

    func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer " + token] }
    func basic(_ client: String) -> [String: String] { ["Authorization": "Basic " + Data("\(client):\(secret)".utf8).base64EncodedString()] }

    @Test("github: form-encoded answers unless JSON is accepted, no refresh token and no expires_in, bad_verification_code inside HTTP 200, GET /user with a numeric id, DELETE /applications/{client_id}/token answering 204")
    func github() async throws {
        try await playing(nil) { idp, client, _ in
            let base = idp.issuer + "/p/github"
            let form = try await login(idp, client, "github", params: ["scope": "repo read:user"])
            #expect(form.status == 200 && form.headers["content-type"] == "application/x-www-form-urlencoded", "\(form.text)")
            let m = form.form
            #expect(m["token_type"] == "bearer" && m["scope"] == "repo,read:user" && m["access_token"]?.hasPrefix("gho_") == true, "\(m)")
            #expect(m["refresh_token"] == nil && m["expires_in"] == nil)
            let json = try await login(idp, client, "github", headers: ["Accept": "application/json"])
            #expect(json.headers["content-type"] == "application/json" && json["access_token"] is String, "\(json.text)")
            let used = ["client_id": client, "client_secret": secret, "code": "not-a-code"]
            let bad = try await idp.post(base + "/login/oauth/access_token", used)
            #expect(bad.status == 200 && bad.form["error"] == "bad_verification_code" && bad.form["error_uri"]?.hasPrefix("https://docs.github.com/") == true,
                    "\(bad.text)")
            let badJSON = try await idp.post(base + "/login/oauth/access_token", used, headers: ["Accept": "application/json"])
            #expect(badJSON.status == 200 && badJSON["error"] as? String == "bad_verification_code", "\(badJSON.text)")
            let wrongSecret = try await idp.post(base + "/login/oauth/access_token", ["client_id": client, "client_secret": "wrong", "code": "x"])
            #expect(wrongSecret.status == 200 && wrongSecret.form["error"] == "incorrect_client_credentials")
            let access = try #require(m["access_token"])
            let me = try await idp.call("GET", base + "/user", headers: bearer(access))
            #expect(me.status == 200 && (me["id"] as? Int) != nil && me["login"] as? String == "alice", "\(me.text)")
            let revoked = try await idp.call("DELETE", base + "/applications/\(client)/token", json: ["access_token": access], headers: basic(client))
            #expect(revoked.status == 204, "\(revoked.text)")
            #expect(try await idp.call("GET", base + "/user", headers: bearer(access)).status == 401)
            let again = try await idp.call("DELETE", base + "/applications/\(client)/token", json: ["access_token": access], headers: basic(client))
            #expect(again.status == 404)
            #expect(try await revocations(idp, client, "github") == 2)
        }
    }

    @Test("github-app: 8-hour tokens with a rotating ghr_ refresh token and refresh_token_expires_in; a rotated token presented again is refused inside HTTP 200 and ends the grant, no grace period")
    func githubAppRotation() async throws {
        try await playing("github-app") { idp, client, p in
            let m = try await login(idp, client, "github-app").form
            #expect(m["expires_in"] == "28800" && m["refresh_token_expires_in"] == "15897600" && m["access_token"]?.hasPrefix("ghu_") == true, "\(m)")
            let first = try #require(m["refresh_token"])
            #expect(first.hasPrefix("ghr_"))
            let rotated = try await refreshAt(idp, client, p, first).form
            let second = try #require(rotated["refresh_token"], "\(rotated)")
            #expect(second != first && second.hasPrefix("ghr_"))
            let oldAccess = try #require(m["access_token"]), newAccess = try #require(rotated["access_token"])
            #expect(try await idp.call("GET", idp.issuer + "/p/github-app/user", headers: bearer(oldAccess)).status == 401, "a rotation ends the old access token")
            #expect(try await idp.call("GET", idp.issuer + "/p/github-app/user", headers: bearer(newAccess)).status == 200)
            let reused = try await refreshAt(idp, client, p, first)
            #expect(reused.status == 200 && reused.form["error"] == "bad_refresh_token", "\(reused.text)")
            #expect(try await refreshAt(idp, client, p, second).form["error"] == "bad_refresh_token", "the family is revoked")
            let s = try await stats(idp, client)
            #expect(s["refreshes_ok"] as? Int == 1 && s["reuse_detected"] as? Int == 1 && s["families_revoked"] as? Int == 1, "\(s)")
        }
    }

    @Test("slack (token rotation off, Slack's default): the bot token on top and the user token under authed_user (token_type bot and user), tokens that never expire and no refresh token, refusals as {ok: false} in HTTP 200, auth.test, auth.revoke by bearer or form")
    func slack() async throws {
        try await playing(nil) { idp, client, _ in
            let base = idp.issuer + "/p/slack"
            let p = try #require(try await idp.personalities()["slack"])
            #expect(p["refresh"] as? String == "none" && p["access_expires"] as? Bool == false, "\(p)")
            let a = try await login(idp, client, "slack", params: ["scope": "chat:write,channels:read", "user_scope": "search:read"])
            #expect(a["ok"] as? Bool == true && a["token_type"] as? String == "bot" && a["scope"] as? String == "chat:write,channels:read", "\(a.text)")
            #expect((a["access_token"] as? String)?.hasPrefix("xoxb-") == true && (a["team"] as? [String: Any])?["id"] is String)
            #expect(a["expires_in"] == nil && a["refresh_token"] == nil, "\(a.text)")
            let user = try #require(a["authed_user"] as? [String: Any])
            let userToken = try #require(user["access_token"] as? String), userID = try #require(user["id"] as? String)
            #expect(user["token_type"] as? String == "user" && userToken.hasPrefix("xoxp-") && userID.hasPrefix("U"), "\(user)")
            #expect(user["refresh_token"] == nil && user["expires_in"] == nil, "no refresh token, a token that never expires: \(user)")
            let refresh = try await idp.post(base + "/api/oauth.v2.access", ["grant_type": "refresh_token", "refresh_token": "xoxe-1-x"], basic: (client, secret))
            #expect(refresh.status == 200 && refresh["ok"] as? Bool == false && refresh["error"] as? String == "invalid_grant_type", "\(refresh.text)")
            let bad = try await idp.post(base + "/api/oauth.v2.access", ["code": "not-a-code", "grant_type": "authorization_code"], basic: (client, secret))
            #expect(bad.status == 200 && bad["ok"] as? Bool == false && bad["error"] as? String == "invalid_code", "\(bad.text)")
            let me = try await idp.post(base + "/api/auth.test", [:], headers: bearer(userToken))
            #expect(me["ok"] as? Bool == true && me["user_id"] as? String == userID, "\(me.text)")
            let bot = try #require(a["access_token"] as? String)
            let revoked = try await idp.post(base + "/api/auth.revoke", [:], headers: bearer(bot))
            #expect(revoked["ok"] as? Bool == true && revoked["revoked"] as? Bool == true, "\(revoked.text)")
            let gone = try await idp.post(base + "/api/auth.test", [:], headers: bearer(bot))
            #expect(gone.status == 200 && gone["ok"] as? Bool == false && gone["error"] as? String == "invalid_auth")
            let byForm = try await idp.post(base + "/api/auth.revoke", ["token": userToken])
            #expect(byForm["revoked"] as? Bool == true)
            #expect(try await revocations(idp, client, "slack") == 2)
        }
    }

    @Test("slack with token rotation (a client registered with token_rotation): 12-hour xoxe. tokens with a rotating xoxe-1- refresh token under authed_user, a refresh answering the user token at the top level")
    func slackTokenRotation() async throws {
        try await playing(nil) { idp, _, _ in
            let client = TestEnv.uniqueName("rotating")
            try await idp.registerPersonalityClient(client, secret: secret, redirectURI: redirect, settings: ["token_rotation": true])
            let p = try #require(try await idp.personalities()["slack"])
            #expect((p["token_rotation"] as? [String: Any])?["refresh"] as? String == "rotating", "\(p)")
            let a = try await login(idp, client, "slack", params: ["scope": "chat:write", "user_scope": "search:read"])
            #expect((a["access_token"] as? String)?.hasPrefix("xoxe.xoxb-") == true && a["expires_in"] as? Int == 43200, "\(a.text)")
            let user = try #require(a["authed_user"] as? [String: Any])
            let first = try #require(user["refresh_token"] as? String)
            #expect((user["access_token"] as? String)?.hasPrefix("xoxe.xoxp-") == true && first.hasPrefix("xoxe-1-") && user["expires_in"] as? Int == 43200, "\(user)")
            let refreshed = try await refreshAt(idp, client, p, first)
            #expect(refreshed["ok"] as? Bool == true && refreshed["token_type"] as? String == "user" && refreshed["expires_in"] as? Int == 43200
                    && (refreshed["refresh_token"] as? String).map { $0 != first } == true, "\(refreshed.text)")
            let me = try await idp.post(idp.issuer + "/p/slack/api/auth.test", [:], headers: bearer(try #require(refreshed["access_token"] as? String)))
            #expect(me["ok"] as? Bool == true && me["user_id"] as? String == user["id"] as? String, "\(me.text)")
            let reused = try await refreshAt(idp, client, p, first)
            #expect(reused.status == 200 && reused["ok"] as? Bool == false && reused["error"] as? String == "invalid_refresh_token", "\(reused.text)")
        }
    }

    @Test("google: a refresh token only with access_type=offline, reusable (refreshed twice, none in the answers), RFC 7009 revocation ends it")
    func googleReusable() async throws {
        try await playing("google") { idp, client, p in
            let online = try await login(idp, client, "google", params: ["scope": "openid email"])
            #expect(online["refresh_token"] == nil && online["access_token"] is String, "\(online.text)")
            let offline = try await login(idp, client, "google", params: ["scope": "openid email", "access_type": "offline", "nonce": "n-1"])
            #expect(offline["expires_in"] as? Int == 3599 && (offline["access_token"] as? String)?.hasPrefix("ya29.") == true)
            let claims = jwtClaims(try #require(offline["id_token"] as? String))
            #expect(claims["iss"] as? String == idp.issuer + "/p/google" && claims["nonce"] as? String == "n-1", "\(claims)")
            let refresh = try #require(offline["refresh_token"] as? String)
            for _ in 0..<2 {
                let r = try await refreshAt(idp, client, p, refresh)
                #expect(r.status == 200 && r["access_token"] is String && r["refresh_token"] == nil, "\(r.text)")
            }
            var s = try await stats(idp, client)
            #expect(s["refreshes_ok"] as? Int == 2 && s["refresh_repeats"] as? Int == 1 && s["reuse_detected"] as? Int == 0, "\(s)")
            let revoked = try await idp.post(idp.issuer + "/p/google/revoke", ["token": refresh])
            #expect(revoked.status == 200)
            let after = try await refreshAt(idp, client, p, refresh)
            #expect(after.status == 400 && after["error"] as? String == "invalid_grant")
            s = try await stats(idp, client)
            #expect((s["revocations_by_style"] as? [String: Int])?["rfc7009"] == 1)
        }
    }

    @Test("dropbox: token_access_type=offline, a reusable refresh token, account_id and uid, POST /2/users/get_current_account, /2/auth/token/revoke by bearer answering 200 null")
    func dropbox() async throws {
        try await playing(nil) { idp, client, _ in
            let base = idp.issuer + "/p/dropbox"
            let p = try #require(try await idp.personalities()["dropbox"])
            #expect(try await login(idp, client, "dropbox")["refresh_token"] == nil)
            let a = try await login(idp, client, "dropbox", params: ["token_access_type": "offline"])
            #expect(a["token_type"] as? String == "bearer" && a["expires_in"] as? Int == 14400 && (a["account_id"] as? String)?.hasPrefix("dbid:") == true
                    && a["uid"] is String, "\(a.text)")
            let refresh = try #require(a["refresh_token"] as? String)
            let r = try await refreshAt(idp, client, p, refresh)
            #expect(r.status == 200 && r["refresh_token"] == nil && r["account_id"] == nil && r["uid"] == nil && r["expires_in"] as? Int == 14400,
                    "a refresh answers the access token, its type and lifetime only: \(r.text)")
            let access = try #require(r["access_token"] as? String)
            let me = try await idp.call("POST", base + "/2/users/get_current_account", body: Data("null".utf8),
                                        headers: bearer(access).merging(["Content-Type": "application/json"]) { a, _ in a })
            #expect(me.status == 200 && me["account_id"] as? String == a["account_id"] as? String, "\(me.text)")
            let revoked = try await idp.call("POST", base + "/2/auth/token/revoke", headers: bearer(access))
            #expect(revoked.status == 200 && revoked.text == "null")
            let gone = try await idp.call("POST", base + "/2/users/get_current_account", headers: bearer(access))
            #expect(gone.status == 401 && gone.text.contains("invalid_access_token"))
            #expect(try await refreshAt(idp, client, p, refresh).status == 400, "revoking the access token ends its grant")
            #expect(try await revocations(idp, client, "dropbox") == 1)
        }
    }

    @Test("salesforce: instance_url, id, issued_at and a signature of id and issued_at keyed with the client secret, no expires_in; the refresh_token scope gives a reusable refresh token; the identity URL says who")
    func salesforce() async throws {
        try await playing("salesforce") { idp, client, p in
            let a = try await login(idp, client, "salesforce", params: ["scope": "api refresh_token"])
            let id = try #require(a["id"] as? String), issuedAt = try #require(a["issued_at"] as? String)
            #expect(a["instance_url"] as? String == idp.issuer + "/p/salesforce" && a["expires_in"] == nil && Int(issuedAt) != nil, "\(a.text)")
            let mac = try HMACSHA256.mac(key: Array(secret.utf8), Array((id + issuedAt).utf8))
            #expect(a["signature"] as? String == Data(mac).base64EncodedString())
            let refreshed = try await refreshAt(idp, client, p, try #require(a["refresh_token"] as? String))
            #expect(refreshed.status == 200 && refreshed["refresh_token"] == nil && refreshed["instance_url"] is String, "\(refreshed.text)")
            let me = try await idp.call("GET", id, headers: bearer(refreshed["access_token"] as! String))
            #expect(me.status == 200 && id.hasSuffix(me["user_id"] as? String ?? "-"), "\(me.text)")
            #expect(try await login(idp, client, "salesforce", params: ["scope": "api"])["refresh_token"] == nil)
        }
    }

    @Test("notion: JSON token requests with HTTP Basic only (a form, or credentials in the body, refused), the workspace and its owner in the answer, revocation as JSON only with Notion-Version")
    func notion() async throws {
        try await playing(nil) { idp, client, _ in
            let base = idp.issuer + "/p/notion"
            let a = try await login(idp, client, "notion")
            #expect(a.status == 200 && a["bot_id"] is String && a["workspace_id"] is String && (a["owner"] as? [String: Any])?["type"] as? String == "user"
                    && a["expires_in"] == nil && a["refresh_token"] is String, "\(a.text)")
            let form = try await idp.post(base + "/v1/oauth/token", ["grant_type": "authorization_code", "code": "x"], basic: (client, secret))
            #expect(form.status == 400 && form["error"] as? String == "invalid_request")
            let inBody = try await idp.post(base + "/v1/oauth/token", ["grant_type": "authorization_code", "code": "x", "client_id": client,
                                                                      "client_secret": secret], json: true)
            #expect(inBody.status == 401 && inBody["error"] as? String == "invalid_client")
            let access = try #require(a["access_token"] as? String)
            #expect(try await idp.call("GET", base + "/v1/users/me", headers: bearer(access)).status == 200)
            let unversioned = try await idp.post(base + "/v1/oauth/revoke", ["token": access], basic: (client, secret), json: true)
            #expect(unversioned.status == 400 && unversioned["code"] as? String == "missing_version" && unversioned["object"] as? String == "error",
                    "\(unversioned.text)")
            #expect(try await idp.call("GET", base + "/v1/users/me", headers: bearer(access)).status == 200, "a refused revocation revokes nothing")
            let revoked = try await idp.post(base + "/v1/oauth/revoke", ["token": access], basic: (client, secret), json: true,
                                             headers: ["Notion-Version": "2025-09-03"])
            #expect(revoked.status == 200 && revoked["request_id"] is String, "\(revoked.status) \(revoked.text)")
            #expect(try await idp.call("GET", base + "/v1/users/me", headers: bearer(access)).status == 401)
        }
    }

    @Test("microsoft-common: discovery at common names the issuer with a literal {tenantid}; each ID token's iss names its user's tenant, the tid claim; microsoft (one tenant) answers only at its own tenant")
    func microsoftTenants() async throws {
        try await playing(nil) { idp, client, _ in
            let d = try await idp.call("GET", idp.issuer + "/p/microsoft-common/common/v2.0/.well-known/openid-configuration")
            #expect(d["issuer"] as? String == idp.issuer + "/p/microsoft-common/{tenantid}/v2.0", "\(d.text)")
            var tids: [String] = []
            for subject in ["alice@contoso.test", "bob@contoso.test", "carol@fabrikam.test"] {
                let a = try await login(idp, client, "microsoft-common", subject: subject, params: ["scope": "openid offline_access"])
                let c = jwtClaims(try #require(a["id_token"] as? String, "\(a.text)"))
                let tid = try #require(c["tid"] as? String)
                #expect(c["iss"] as? String == idp.issuer + "/p/microsoft-common/\(tid)/v2.0" && c["oid"] is String, "\(c)")
                #expect(a["refresh_token"] is String && a["ext_expires_in"] is Int)
                tids.append(tid)
            }
            #expect(tids[0] == tids[1] && tids[0] != tids[2], "users of one domain share a tenant")
            let p = try #require(try await idp.personalities()["microsoft"])
            let tenant = try #require(p["tenant"] as? String)
            let own = try await idp.call("GET", idp.issuer + "/p/microsoft/\(tenant)/v2.0/.well-known/openid-configuration")
            #expect(own["issuer"] as? String == idp.issuer + "/p/microsoft/\(tenant)/v2.0" && own["revocation_endpoint"] == nil)
            #expect(try await idp.call("GET", idp.issuer + "/p/microsoft/common/v2.0/.well-known/openid-configuration").status == 404)
            let a = try await login(idp, client, "microsoft", params: ["scope": "openid"])
            #expect(jwtClaims(a["id_token"] as? String ?? "")["tid"] as? String == tenant && a["refresh_token"] == nil, "no offline_access, no refresh token")
        }
    }

    @Test("oauth2-form: RFC 8414 metadata by path insertion, form-encoded answers and refusals, rotation with no grace period (reuse refused and the family revoked), RFC 7009 revocation; its tokens are refused at the dev IdP's own /token")
    func plainForm() async throws {
        try await playing(nil) { idp, client, _ in
            let base = idp.issuer + "/p/oauth2-form"
            let p = try #require(try await idp.personalities()["oauth2-form"])
            let d = try await idp.call("GET", idp.issuer + "/.well-known/oauth-authorization-server/p/oauth2-form")
            #expect(d["issuer"] as? String == base && d["token_endpoint"] as? String == base + "/token" && d["revocation_endpoint"] as? String == base + "/revoke")
            let a = try await login(idp, client, "oauth2-form")
            #expect(a.headers["content-type"] == "application/x-www-form-urlencoded" && a.form["expires_in"] == "3600", "\(a.text)")
            let first = try #require(a.form["refresh_token"])
            #expect(try await idp.refreshDirectly(client: client, secret: secret, refreshToken: first) == 400, "not the dev IdP's own grant")
            let second = try #require(try await refreshAt(idp, client, p, first).form["refresh_token"])
            let reused = try await refreshAt(idp, client, p, first)
            #expect(reused.status == 400 && reused.form["error"] == "invalid_grant", "\(reused.text)")
            #expect(try await refreshAt(idp, client, p, second).form["error"] == "invalid_grant", "the family is revoked")
            let s = try await stats(idp, client)
            #expect(s["reuse_detected"] as? Int == 1 && s["refreshes_ok"] as? Int == 1 && s["refresh_presentations"] as? Int == 4, "\(s)")
            let b = try await login(idp, client, "oauth2-form")
            let revoked = try await idp.post(base + "/revoke", ["token": b.form["refresh_token"]!], basic: (client, secret))
            #expect(revoked.status == 200)
            #expect(try await refreshAt(idp, client, p, b.form["refresh_token"]!).status == 400)
            let bulk = try await idp.call("POST", idp.issuer + "/admin/grants", json: ["client_id": client, "subjects": ["b1"], "personality": "oauth2-form"])
            let bulkToken = try #require((bulk["refresh_tokens"] as? [String: String])?["b1"], "\(bulk.text)")
            #expect(try await refreshAt(idp, client, p, bulkToken).status == 200, "grants made in bulk for a personality refresh there")
            let wrongPKCE = try await idp.authorize(base + "/authorize", client: client, redirectURI: redirect, subject: "alice", verifier: verifier())
            let refused = try await idp.post(base + "/token", ["grant_type": "authorization_code", "code": wrongPKCE["code"]!, "redirect_uri": redirect,
                                                              "code_verifier": verifier()], basic: (client, secret))
            #expect(refused.status == 400 && refused.form["error"] == "invalid_grant")
        }
    }

    @Test("hubspot (OAuth API 2026-03): hub_id, user_id and scopes in every answer, a new refresh token with every refresh (the used one refused with RFC 6749's error beside HubSpot's), revocation of the refresh token in a form with the client's credentials leaving its access tokens, introspection")
    func hubspot() async throws {
        try await playing("hubspot") { idp, client, p in
            let base = idp.issuer + "/p/hubspot/oauth/2026-03"
            #expect(p["token_endpoint"] as? String == base + "/token" && p["introspection_endpoint"] as? String == base + "/token/introspect", "\(p)")
            let a = try await login(idp, client, "hubspot", params: ["scope": "oauth crm.objects.contacts.read"])
            #expect(a["expires_in"] as? Int == 1800 && a["hub_id"] as? Int == 1_234_567 && (a["user_id"] as? Int) != nil
                    && a["scopes"] as? [String] == ["oauth", "crm.objects.contacts.read"] && a["scope"] == nil, "\(a.text)")
            let first = try #require(a["refresh_token"] as? String)
            let again = try await refreshAt(idp, client, p, first)
            let second = try #require(again["refresh_token"] as? String, "\(again.text)")
            #expect(second != first && again["hub_id"] as? Int == 1_234_567 && again["user_id"] as? Int == a["user_id"] as? Int, "\(again.text)")
            let spent = try await refreshAt(idp, client, p, first)
            #expect(spent.status == 400 && spent["error"] as? String == "invalid_grant" && spent["category"] is String && spent["correlationId"] is String,
                    "\(spent.text)")
            let b = try await login(idp, client, "hubspot")
            let refresh = try #require(b["refresh_token"] as? String), access = try #require(b["access_token"] as? String)
            let introspected = try await idp.post(base + "/token/introspect", ["token": access, "client_id": client, "client_secret": secret])
            #expect(introspected["active"] as? Bool == true && introspected["user_id"] as? Int == b["user_id"] as? Int
                    && introspected["hub_id"] as? Int == 1_234_567 && introspected["token_type"] as? String == "access", "\(introspected.text)")
            let inBasic = try await idp.post(base + "/token/revoke", ["token": refresh], basic: (client, secret))
            #expect(inBasic.status == 401, "the 2026-03 API takes the credentials in the form: \(inBasic.text)")
            let revoked = try await idp.post(base + "/token/revoke", ["token": refresh, "client_id": client, "client_secret": secret])
            #expect(revoked.status == 200, "\(revoked.text)")
            #expect(try await refreshAt(idp, client, p, refresh).status == 400)
            let after = try await idp.post(base + "/token/introspect", ["token": access, "client_id": client, "client_secret": secret])
            #expect(after["active"] as? Bool == true, "revoking the refresh token leaves its access tokens: \(after.text)")
            let s = try await stats(idp, client)
            #expect((s["revocations_by_style"] as? [String: Int])?["hubspot"] == 1 && s["reuse_detected"] as? Int == 1, "\(s)")
        }
    }

    @Test("linkedin, intuit: the same refresh token echoed by every refresh, the grant's lifetime as refresh_token_expires_in or x_refresh_token_expires_in, realmId in the redirect, revocation as JSON")
    func grantLifetimes() async throws {
        try await playing(nil) { idp, client, _ in
            let all = try await idp.personalities()
            let li = try await login(idp, client, "linkedin", params: ["scope": "openid profile email"])
            #expect(li["refresh_token_expires_in"] as? Int == 31_536_000 && li["expires_in"] as? Int == 5_184_000 && li["scope"] as? String == "openid,profile,email",
                    "\(li.text)")
            let liAgain = try await refreshAt(idp, client, all["linkedin"]!, li["refresh_token"] as! String)
            #expect(liAgain["refresh_token"] as? String == li["refresh_token"] as? String && (liAgain["refresh_token_expires_in"] as? Int ?? 0) <= 31_536_000
                    && (liAgain["refresh_token_expires_in"] as? Int ?? 0) > 31_535_000, "the grant's lifetime runs from the sign-in: \(liAgain.text)")
            let intuit = try #require(all["intuit"])
            let q = try await idp.authorize(intuit["authorization_endpoint"] as! String, client: client, redirectURI: redirect, subject: "alice")
            #expect(q["realmId"] != nil && q["code"] != nil)
            let i = try await login(idp, client, "intuit")
            #expect(i["x_refresh_token_expires_in"] as? Int == 8_726_400, "\(i.text)")
            let revoked = try await idp.post(idp.issuer + "/p/intuit/v2/oauth2/tokens/revoke", ["token": i["refresh_token"] as! String],
                                             basic: (client, secret), json: true)
            #expect(revoked.status == 200)
            let styles = try await stats(idp, client)["revocations_by_style"] as? [String: Int]
            #expect(styles?["json"] == 1, "\(styles ?? [:])")
        }
    }

    @Test("x: PKCE required (an authorization request without it is refused), a public client sending only its client_id, a rotating refresh token with offline.access, who am I inside {data}")
    func xRequiresPKCE() async throws {
        try await playing("x") { idp, client, p in
            let authorize = try #require(p["authorization_endpoint"] as? String), token = try #require(p["token_endpoint"] as? String)
            let refused = try await idp.authorize(authorize, client: client, redirectURI: redirect, subject: "alice", params: ["scope": "users.read"])
            #expect(refused["error"] == "invalid_request" && refused["code"] == nil, "\(refused)")
            let publicClient = TestEnv.uniqueName("public")
            let registered = try await idp.call("POST", idp.issuer + "/admin/clients", json: ["client_id": publicClient, "redirect_uris": [redirect]])
            #expect(registered.status == 201)
            let v = verifier()
            let q = try await idp.authorize(authorize, client: publicClient, redirectURI: redirect, subject: "alice",
                                            params: ["scope": "users.read offline.access"], verifier: v)
            let a = try await idp.post(token, ["grant_type": "authorization_code", "code": try #require(q["code"]), "redirect_uri": redirect,
                                               "code_verifier": v, "client_id": publicClient])
            #expect(a.status == 200 && a["expires_in"] as? Int == 7200 && a["refresh_token"] is String, "\(a.text)")
            let me = try await idp.call("GET", idp.issuer + "/p/x/2/users/me", headers: bearer(try #require(a["access_token"] as? String)))
            #expect(((me["data"] as? [String: Any])?["id"] as? String).flatMap { Int($0) } != nil, "an id of digits, as a string: \(me.text)")
            let spent = try await idp.post(token, ["grant_type": "authorization_code", "code": q["code"]!, "redirect_uri": redirect,
                                                   "code_verifier": v, "client_id": publicClient])
            #expect(spent.status == 400 && spent["error"] as? String == "invalid_request", "X refuses a spent code as invalid_request: \(spent.text)")
        }
    }

    @Test("refusals and lifetimes as documented: atlassian's spent refresh token 403 invalid_grant, microsoft's AADSTS codes, salesforce's words; gitlab's created_at; each provider's own access-token lifetime")
    func refusalsAndLifetimes() async throws {
        try await playing(nil) { idp, client, _ in
            let all = try await idp.personalities()
            let a = try await login(idp, client, "atlassian", params: ["scope": "read:me offline_access"])
            let first = try #require(a["refresh_token"] as? String, "\(a.text)")
            #expect(a["expires_in"] as? Int == 3600)
            #expect(try await refreshAt(idp, client, all["atlassian"]!, first).status == 200)
            let spent = try await refreshAt(idp, client, all["atlassian"]!, first)
            #expect(spent.status == 403 && spent["error"] as? String == "invalid_grant", "\(spent.text)")
            let g = try await login(idp, client, "gitlab", params: ["scope": "openid"])
            #expect(g["expires_in"] as? Int == 7200 && (g["created_at"] as? Int).map { abs($0 - Int(Date().timeIntervalSince1970)) < 60 } == true, "\(g.text)")
            let ms = try await refreshAt(idp, client, all["microsoft"]!, "not-a-refresh-token")
            #expect(ms.status == 400 && ms["error"] as? String == "invalid_grant" && ms["error_codes"] as? [Int] == [70000]
                    && (ms["error_description"] as? String)?.hasPrefix("AADSTS70000:") == true && ms["correlation_id"] is String, "\(ms.text)")
            let sf = try await refreshAt(idp, client, all["salesforce"]!, "not-a-refresh-token")
            #expect(sf.status == 400 && sf["error"] as? String == "invalid_grant" && sf["error_description"] as? String == "expired access/refresh token", "\(sf.text)")
            for (name, ttl) in [("auth0", 86400), ("okta", 3600), ("microsoft", 3600)] {
                let t = try await login(idp, client, name, params: ["scope": "openid"])
                #expect(t["expires_in"] as? Int == ttl, "\(name): \(t.text)")
            }
        }
    }

    @Test("azure-ad-b2c sends expires_in as a string")
    func expiresInString() async throws {
        try await playing(nil) { idp, client, _ in
            let a = try await login(idp, client, "azure-ad-b2c", params: ["scope": "openid offline_access"])
            #expect(a["expires_in"] as? String == "3600" && a["refresh_token"] is String, "\(a.text)")
        }
    }

    @Test("asana: the user under data in the token answer (gid as a string), a reusable refresh token, revocation of the refresh token with the credentials in the form, GET /api/1.0/users/me inside {data}")
    func asanaUserInData() async throws {
        try await playing("asana") { idp, client, p in
            let a = try await login(idp, client, "asana", subject: "alice@example.test")
            let data = try #require(a["data"] as? [String: Any], "\(a.text)")
            let gid = try #require(data["gid"] as? String)
            #expect(Int(gid) != nil && data["email"] as? String == "alice@example.test" && a["token_type"] as? String == "bearer"
                    && a["expires_in"] as? Int == 3600, "\(a.text)")
            let me = try await idp.call("GET", idp.issuer + "/p/asana/api/1.0/users/me", headers: bearer(try #require(a["access_token"] as? String)))
            #expect((me["data"] as? [String: Any])?["gid"] as? String == gid, "\(me.text)")
            let refresh = try #require(a["refresh_token"] as? String)
            let r = try await refreshAt(idp, client, p, refresh)
            #expect(r.status == 200 && r["refresh_token"] == nil && (r["data"] as? [String: Any])?["gid"] as? String == gid, "\(r.text)")
            let basic = try await idp.post(idp.issuer + "/p/asana/-/oauth_revoke", ["token": refresh], basic: (client, secret))
            #expect(basic.status == 400, "the credentials go in the form: \(basic.text)")
            let revoked = try await idp.post(idp.issuer + "/p/asana/-/oauth_revoke", ["client_id": client, "client_secret": secret, "token": refresh])
            #expect(revoked.status == 200 && revoked.text.isEmpty)
            #expect(try await refreshAt(idp, client, p, refresh).status == 400)
            #expect(try await revocations(idp, client, "request") == 1)
        }
    }

    @Test("box: bearer tokens with restricted_to and issued_token_type, a refresh token good for one use; revoking the access token with the credentials in the form logs the user out (the grant ends)")
    func boxRevokesTheGrant() async throws {
        try await playing("box") { idp, client, p in
            let a = try await login(idp, client, "box")
            #expect(a["token_type"] as? String == "bearer" && a["restricted_to"] is [Any]
                    && a["issued_token_type"] as? String == "urn:ietf:params:oauth:token-type:access_token", "\(a.text)")
            let refresh = try #require(a["refresh_token"] as? String)
            let r = try await refreshAt(idp, client, p, refresh)
            let access = try #require(r["access_token"] as? String), next = try #require(r["refresh_token"] as? String)
            #expect(next != refresh)
            let me = try await idp.call("GET", idp.issuer + "/p/box/2.0/users/me", headers: bearer(access))
            #expect(me.status == 200 && me["id"] is String, "\(me.text)")
            let revoked = try await idp.post(idp.issuer + "/p/box/oauth2/revoke", ["client_id": client, "client_secret": secret, "token": access])
            #expect(revoked.status == 200 && revoked.text.isEmpty)
            #expect(try await refreshAt(idp, client, p, next).status == 400, "revoking the access token ends its grant")
            #expect(try await revocations(idp, client, "request") == 1)
        }
    }

    @Test("bitbucket: HTTP Basic, the granted scopes as scopes (no scope member), two-hour bearer tokens, GET /2.0/user with a uuid in braces")
    func bitbucketScopes() async throws {
        try await playing("bitbucket") { idp, client, _ in
            let a = try await login(idp, client, "bitbucket", params: ["scope": "account repository"])
            #expect(a["scopes"] as? String == "account repository" && a["scope"] == nil && a["expires_in"] as? Int == 7200, "\(a.text)")
            let me = try await idp.call("GET", idp.issuer + "/p/bitbucket/2.0/user", headers: bearer(try #require(a["access_token"] as? String)))
            let uuid = try #require(me["uuid"] as? String, "\(me.text)")
            #expect(uuid.hasPrefix("{") && uuid.hasSuffix("}") && UUID(uuidString: String(uuid.dropFirst().dropLast())) != nil, "\(uuid)")
        }
    }

    @Test("keycloak: discovery at /realms/dev, 5-minute tokens, a refresh token without asking (refresh_expires_in 1800, or 0 for an offline token with offline_access)")
    func keycloakOffline() async throws {
        try await playing("keycloak") { idp, client, p in
            let d = try await idp.call("GET", try #require(p["metadata"] as? String))
            #expect(d["issuer"] as? String == idp.issuer + "/p/keycloak/realms/dev" && d["revocation_endpoint"] is String, "\(d.text)")
            let online = try await login(idp, client, "keycloak", params: ["scope": "openid"])
            #expect(online["expires_in"] as? Int == 300 && online["refresh_token"] is String && online["refresh_expires_in"] as? Int == 1800, "\(online.text)")
            let offline = try await login(idp, client, "keycloak", params: ["scope": "openid offline_access"])
            #expect(offline["refresh_expires_in"] as? Int == 0 && offline["session_state"] is String, "\(offline.text)")
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

    /// The revocations of `style` the client's personalities received.
    func revocations(_ idp: DevIdPServer, _ client: String, _ style: String) async throws -> Int? {
        (try await stats(idp, client)["revocations_by_style"] as? [String: Int])?[style]
    }
}
