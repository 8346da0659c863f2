import Foundation
import Testing

/// Bad answers of a plain OAuth 2.0 provider at the callback, each refused with a precise error,
/// nothing stored: a refusal inside HTTP 200, a form-encoded refusal, an answer without the access
/// token, a "who am I" call that fails, a pointer that matches nothing. GitHub's personality of the
/// development IdP, registered from the catalogue; the answers injected at its token endpoint.
@Suite(.serialized)
struct OAuth2BadAnswerTests {
    /// A World with the catalogue's GitHub entry pointed at the personality, `descriptor` over it.
    func github(_ w: World, id: String, descriptor extra: [String: Any] = [:]) async throws {
        let all = try await w.idp.personalities()
        let p = try #require(all["github"])
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: CatalogueTests.catalogue.appendingPathComponent("github.json"))) as? [String: Any])
        let clientID = TestEnv.uniqueName("gh"), secret = "s-" + UUID().uuidString
        try await w.idp.registerPersonalityClient(clientID, secret: secret, redirectURI: w.redirectURI)
        let patch = CatalogueTests.patch(entry: entry, personality: p).merging(extra) { _, b in b }
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(id)", key: w.operatorKey, json: [
            "provider": "github", "client_id": clientID, "client_secret": secret, "auth_method": "client_secret_post",
            "redirect_uri": w.redirectURI, "scopes": ["repo"], "descriptor": patch]), 201)
    }

    /// A login through `client` whose callback is answered as it is; the callback's reply.
    func login(_ w: World, _ client: String) async throws -> HTTP.Reply {
        let started = try expectStatus(try await HTTP.post(w.brokers[0].url + "/v1/tenants/\(w.tenant)/logins", key: w.workerKey, json: [
            "client": client, "login_hint": "octocat"]), 201)
        return try await w.callback(try await w.authorize(started["authorization_url"] as! String))
    }

    @Test("refusals and unusable answers at the code exchange: the provider's code, or invalid_token_response naming what is missing; nothing stored")
    func badAnswers() async throws {
        let w = try await World()
        defer { w.stop() }
        try await github(w, id: "gh")
        let form = "application/x-www-form-urlencoded; charset=utf-8"
        let cases: [(status: Int, body: String, type: String, code: String, says: String)] = [
            (200, "error=bad_verification_code&error_description=The+code+passed+is+incorrect+or+expired.", form, "bad_verification_code", "refused the code"),
            (400, "error=invalid_grant", form, "invalid_grant", "refused the code"),
            (200, #"{"token_type": "bearer", "scope": "repo"}"#, "application/json", "invalid_token_response", "no access token at /access_token"),
            (200, "<html>sign in</html>", "text/html", "invalid_token_response", "not a JSON object"),
        ]
        for c in cases {
            try await w.idp.fail(status: c.status, body: c.body, contentType: c.type, count: 1)
            let r = try await login(w, "gh")
            #expect(r.status == 400 && r["error"] as? String == c.code && (r["message"] as? String ?? "").contains(c.says), "\(c.body): \(r.status) \(r.json)")
        }
        #expect(try w.count("sessions") == 0)
    }

    @Test("a who-am-I call that fails, or whose answer lacks the id, refuses the login, nothing stored")
    func whoAmIFails() async throws {
        let w = try await World()
        defer { w.stop() }
        try await github(w, id: "gone", descriptor: ["subject": ["from": "userinfo", "url": w.idp.issuer + "/p/github/no-such-user", "pointer": "/id"]])
        let gone = try await login(w, "gone")
        #expect(gone.status == 400 && gone["error"] as? String == "invalid_token_response" && (gone["message"] as? String ?? "").contains("userinfo: HTTP 404"),
                "\(gone.json)")
        try await github(w, id: "nothing", descriptor: ["subject": ["from": "userinfo", "url": w.idp.issuer + "/p/github/user", "pointer": "/no_such_member"]])
        let nothing = try await login(w, "nothing")
        #expect(nothing.status == 400 && (nothing["message"] as? String ?? "").contains("no user id at /no_such_member"), "\(nothing.json)")
        #expect(try w.count("sessions") == 0)
    }
}
