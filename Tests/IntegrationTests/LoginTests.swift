import Foundation
import Testing

@Suite("Enrolment: login with PKCE S256, callback, ID token checks", .serialized)
struct LoginTests {
    @Test("login → IdP → callback → session stored → a worker gets its token")
    func happyPath() async throws {
        let w = try await World()
        defer { w.stop() }
        let started = try expectStatus(try await w.startLogin(subject: "alice", redirectAfter: w.appURL), 201)
        let url = try #require(URLComponents(string: started["authorization_url"] as! String))
        let q = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(url.path == "/authorize" && q["response_type"] == "code" && q["client_id"] == w.idpClientID)
        #expect(q["code_challenge_method"] == "S256" && q["code_challenge"]?.count == 43)
        #expect((q["state"]?.count ?? 0) >= 22 && (q["nonce"]?.count ?? 0) >= 22 && q["state"] != q["nonce"])
        #expect(q["login_hint"] == "alice" && q["redirect_uri"] == w.redirectURI)
        // Form encoding (RFC 6749 §4.1.1, Appendix B): a space is "+", which URLComponents leaves as is.
        #expect(Set((q["scope"] ?? "").split(whereSeparator: { $0 == " " || $0 == "+" })) == ["openid", "offline_access"])
        #expect(try w.count("logins") == 1)

        let back = try expectStatus(try await w.callback(try await w.authorize(url.url!.absoluteString)), 303)
        let location = try #require(back.headers["location"])
        #expect(location.hasPrefix(w.appURL + "?session_id=ses_"))
        let session = String(location.split(separator: "=").last!)
        #expect(try w.count("logins") == 0)   // single use: consumed, verifier gone

        let doc = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(session)", key: w.workerKey), 200)
        #expect(doc["subject"] as? String == "alice" && doc["sid"] as? String == "sid-alice" && doc["state"] as? String == "active")
        #expect(doc["auth_time"] is String && doc["granted_at"] is String && doc["email"] as? String == "alice@example.test")
        let token = try expectStatus(try await w.token(session), 200)
        #expect(token["subject"] as? String == "alice" && (token["expires_in"] as? Int ?? 0) > 3000)
        // A refresh answers with a new ID token (no nonce): verified and accepted.
        try expectStatus(try await w.token(session, body: ["force_refresh": true]), 200)
        let c = try await w.idp.counters(client: w.idpClientID)
        #expect((c["token_calls"] as? [String: Int]) == ["authorization_code": 1, "refresh_token": 1])
    }

    @Test("PAR (RFC 9126) where the issuer requires it: pushed with the client's authentication, the URL carries only client_id and request_uri, the login completes, the request_uri works once")
    func pushedAuthorizationRequest() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.settings(par: "required")
        let started = try expectStatus(try await w.startLogin(subject: "par-user"), 201)
        let url = try #require(URLComponents(string: started["authorization_url"] as! String))
        let q = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(Set(q.keys) == ["client_id", "request_uri"] && q["client_id"] == w.idpClientID, "\(q.keys)")
        #expect(q["request_uri"]?.hasPrefix("urn:ietf:params:oauth:request_uri:") == true)
        let expires = try #require((started["expires_at"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
        #expect(expires.timeIntervalSinceNow <= 61, "the login's URL lives no longer than its request_uri")
        let r = try expectStatus(try await w.callback(try await w.authorize(url.url!.absoluteString)), 200)
        #expect(r["subject"] as? String == "par-user" && (r["session_id"] as? String)?.hasPrefix("ses_") == true)
        try expectStatus(try await HTTP.get(url.url!.absoluteString), 400)   // used once
        // The IdP refuses any request that was not pushed; the broker never sends one to it.
        var plain = url
        plain.queryItems = [URLQueryItem(name: "client_id", value: w.idpClientID), URLQueryItem(name: "response_type", value: "code")]
        try expectStatus(try await HTTP.get(plain.url!.absoluteString), 400)
    }

    @Test("an issuer that withdraws PAR: the failed push (404) makes the broker read the metadata again, and the next login goes without it")
    func parWithdrawn() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.settings(par: "on")
        let first = try expectStatus(try await w.startLogin(subject: "par-gone"), 201)
        #expect((first["authorization_url"] as! String).contains("request_uri="))
        try await w.idp.settings(par: "off")
        let failed = try await w.startLogin(subject: "par-gone")
        #expect(failed.status == 422 && failed["error"] as? String == "idp_misconfigured")
        let next = try expectStatus(try await w.startLogin(subject: "par-gone"), 201)
        #expect(!(next["authorization_url"] as! String).contains("request_uri="), "the withdrawn endpoint was used again")
        try expectStatus(try await w.callback(try await w.authorize(next["authorization_url"] as! String)), 200)
    }

    @Test("claims and types as the IdP meant them: auth_time 0 is absent, not 1970; a DPoP token_type is handed out as DPoP, never relabelled Bearer")
    func honestClaimsAndTypes() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.misbehave(w.idpClientID, "id_token_auth_time_zero")
        let s = try expectStatus(try await w.login(subject: "zero-auth"), 200)["session_id"] as! String
        let doc = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(s)", key: w.workerKey), 200)
        #expect(doc["auth_time"] is NSNull, "auth_time 0 was stored as \(String(describing: doc["auth_time"]))")
        #expect(try expectStatus(try await w.token(s), 200)["token_type"] as? String == "Bearer")
        try await w.idp.misbehave(w.idpClientID, "dpop_token_type")
        let refreshed = try expectStatus(try await w.token(s, body: ["force_refresh": true]), 200)
        #expect(refreshed["token_type"] as? String == "DPoP", "the IdP's DPoP token was labelled \(String(describing: refreshed["token_type"]))")
        // Another replica reads it from the database the same way.
        w.brokers.append(try await BrokerServer(env: w.env, name: "broker-type"))
        #expect(try expectStatus(try await w.token(s, replica: 1), 200)["token_type"] as? String == "DPoP")
    }

    @Test("without redirect_after the callback answers the session as JSON")
    func callbackJSON() async throws {
        let w = try await World()
        defer { w.stop() }
        let r = try expectStatus(try await w.login(subject: "bob"), 200)
        #expect(r["subject"] as? String == "bob" && (r["session_id"] as? String)?.hasPrefix("ses_") == true)
        #expect(r["access_token"] == nil && r["refresh_token"] == nil)
        #expect(try w.count("sessions") == 1)
    }

    @Test("a state is single use, even for two callbacks at once")
    func stateSingleUse() async throws {
        let w = try await World()
        defer { w.stop() }
        let started = try expectStatus(try await w.startLogin(subject: "carol"), 201)
        let callback = try await w.authorize(started["authorization_url"] as! String)
        async let a = w.callback(callback)
        async let b = w.callback(callback)
        let statuses = [try await a.status, try await b.status].sorted()
        #expect(statuses == [200, 400])
        let again = try expectStatus(try await w.callback(callback), 400)
        #expect(again["error"] as? String == "invalid_state")
        #expect(try w.count("sessions") == 1)
        let unknown = try expectStatus(try await w.callback(replacingQuery(callback, "state", "not-a-state")), 400)
        #expect(unknown["error"] as? String == "invalid_state")
        let none = try expectStatus(try await w.callback(replacingQuery(callback, "state", nil)), 400)
        #expect(none["error"] as? String == "invalid_request")
    }

    @Test("an expired login is refused and its code never exchanged")
    func expiredLogin() async throws {
        let w = try await World()
        defer { w.stop() }
        let started = try expectStatus(try await w.startLogin(subject: "dave"), 201)
        let callback = try await w.authorize(started["authorization_url"] as! String)
        _ = try runPSQL("UPDATE logins SET expires_at = now() - interval '1 second' WHERE tenant_id = '\(w.tenant)'")
        let r = try expectStatus(try await w.callback(callback), 400)
        #expect(r["error"] as? String == "invalid_state")
        #expect(try w.count("sessions") == 0 && w.count("logins") == 0)
        #expect((try await w.idp.counters(client: w.idpClientID)["token_calls"] as? [String: Int]) == [:])
    }

    @Test("redirect_after must be in the client's allowlist exactly: no open redirect")
    func redirectAllowlist() async throws {
        let w = try await World()
        defer { w.stop() }
        for bad in ["https://evil.example/", w.appURL + "/x", w.appURL + "?next=https://evil.example", "https://app.example/after-login#"] {
            let r = try expectStatus(try await w.startLogin(subject: "erin", redirectAfter: bad), 400)
            #expect(r["error"] as? String == "invalid_request")
        }
        #expect(try w.count("logins") == 0)
        let unknownClient = try expectStatus(try await w.startLogin(subject: "erin", client: "nope"), 404)
        #expect(unknownClient["error"] as? String == "not_found")
    }

    @Test("iss different from the login's issuer, or missing where advertised, is refused before the code is exchanged (RFC 9207)")
    func issParameter() async throws {
        let w = try await World()
        defer { w.stop() }
        for mode in ["wrong_iss_param", "omit_iss_param"] {
            try await w.idp.misbehave(w.idpClientID, mode)
            let r = try expectStatus(try await w.login(subject: "frank"), 400)
            #expect(r["error"] as? String == "issuer_mismatch", "\(mode)")
        }
        #expect(try w.count("sessions") == 0)
        #expect((try await w.idp.counters(client: w.idpClientID)["token_calls"] as? [String: Int]) == [:])
    }

    @Test("an IdP that stops advertising RFC 9207 iss: the next login re-reads its metadata and succeeds, no restart needed")
    func staleDiscovery() async throws {
        let w = try await World()
        defer { w.stop() }
        try expectStatus(try await w.login(subject: "ivan"), 200)     // metadata cached: iss advertised
        try await w.idp.settings(issParameter: false)
        try expectStatus(try await w.login(subject: "ivan"), 200)
        #expect(try w.count("sessions") == 2)
    }

    @Test("callbacks refused for a stripped iss do not hold up logins once the IdP stopped advertising RFC 9207: while it advertises, two callbacks without iss are both refused; after it stopped, the next two both succeed at once")
    func strippedIssThenStoppedAdvertising() async throws {
        let w = try await World()
        defer { w.stop() }
        for attempt in 0..<2 {
            let started = try expectStatus(try await w.startLogin(subject: "judy"), 201)
            let back = try await w.authorize(started["authorization_url"] as! String)
            let r = try expectStatus(try await w.callback(replacingQuery(back, "iss", nil)), 400)
            #expect(r["error"] as? String == "issuer_mismatch", "stripped callback \(attempt)")
        }
        try await w.idp.settings(issParameter: false)
        for attempt in 0..<2 {
            let r = try await w.login(subject: "judy")
            #expect(r.status == 200, "login \(attempt) after the IdP stopped advertising: \(r.status) \(r["error"] as? String ?? "-")")
        }
        #expect(try w.count("sessions") == 2)
    }

    @Test("an error= answer from the IdP is shown and stores nothing")
    func idpError() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.misbehave(w.idpClientID, "access_denied")
        let r = try expectStatus(try await w.login(subject: "grace"), 400)
        #expect(r["error"] as? String == "access_denied")
        try await w.idp.misbehave(w.idpClientID, "access_denied")
        let started = try expectStatus(try await w.startLogin(subject: "grace", redirectAfter: w.appURL), 201)
        let back = try expectStatus(try await w.callback(try await w.authorize(started["authorization_url"] as! String)), 303)
        #expect(back.headers["location"] == w.appURL + "?error=access_denied")
        #expect(try w.count("sessions") == 0 && w.count("logins") == 0)
    }

    static let idTokenRejections = [
        "id_token_bad_signature", "id_token_alg_none", "id_token_alg_hs256", "id_token_unknown_kid", "id_token_wrong_iss",
        "id_token_wrong_aud", "id_token_multi_aud_no_azp", "id_token_wrong_azp", "id_token_expired", "id_token_iat_future",
        "id_token_wrong_nonce", "id_token_no_nonce", "id_token_no_sub", "id_token_at_jwt",
    ]

    @Test("every forged or wrong ID token is refused and nothing is stored", arguments: idTokenRejections)
    func idTokenRejected(_ mode: String) async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.misbehave(w.idpClientID, mode)
        let r = try expectStatus(try await w.login(subject: "heidi"), 400)
        #expect(r["error"] as? String == "invalid_id_token")
        #expect(try w.count("sessions") == 0 && w.count("logins") == 0)
        // The same login flow works once the IdP behaves: the refusal was about this token only.
        try expectStatus(try await w.login(subject: "heidi"), 200)
    }

    static let responseRejections = ["id_token_missing", "no_access_token", "unknown_token_type", "not_json", "oversize"]

    @Test("a token response without access_token or id_token, of unknown type, not JSON or oversized is refused", arguments: responseRejections)
    func tokenResponseRejected(_ mode: String) async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.misbehave(w.idpClientID, mode)
        let r = try expectStatus(try await w.login(subject: "ivan"), 400)
        #expect(r["error"] as? String == "invalid_token_response")
        #expect(try w.count("sessions") == 0)
    }

    @Test("several audiences with azp = client_id are accepted")
    func azpAccepted() async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.misbehave(w.idpClientID, "id_token_multi_aud_azp")
        try expectStatus(try await w.login(subject: "judy"), 200)
    }

    @Test("RS256 and PS256 ID tokens verify with the IdP's RSA keys", arguments: ["RS256", "PS256"])
    func rsaIDTokens(_ alg: String) async throws {
        let w = try await World()
        defer { w.stop() }
        try await w.idp.registerClient(w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI, idTokenAlg: alg)
        try expectStatus(try await w.login(subject: "ken"), 200)
        try await w.idp.misbehave(w.idpClientID, "id_token_bad_signature")
        #expect(try await w.login(subject: "ken")["error"] as? String == "invalid_id_token")
    }

    @Test("key rotation at the IdP between two logins: the second succeeds after one JWKS re-fetch")
    func keyRotation() async throws {
        let w = try await World()
        defer { w.stop() }
        try expectStatus(try await w.login(subject: "leo"), 200)
        let before = try await w.idp.counters(client: w.idpClientID)["jwks_fetches"] as! Int
        try await w.idp.rotateKeys()
        try expectStatus(try await w.login(subject: "leo"), 200)
        try expectStatus(try await w.login(subject: "leo"), 200)
        let after = try await w.idp.counters(client: w.idpClientID)["jwks_fetches"] as! Int
        #expect(after == before + 1)
    }

    @Test("a flood of unknown kids costs the IdP one JWKS re-fetch")
    func unknownKidRateLimited() async throws {
        let w = try await World()
        defer { w.stop() }
        try expectStatus(try await w.login(subject: "mia"), 200)
        let before = try await w.idp.counters(client: w.idpClientID)["jwks_fetches"] as! Int
        try await w.idp.misbehave(w.idpClientID, "id_token_unknown_kid", count: 5)
        for _ in 0..<5 { #expect(try await w.login(subject: "mia")["error"] as? String == "invalid_id_token") }
        let after = try await w.idp.counters(client: w.idpClientID)["jwks_fetches"] as! Int
        #expect(after - before == 1)
    }

    @Test("mix-up: a login for tenant A's issuer completed with tenant B's iss is refused, nothing sent to B")
    func mixUp() async throws {
        let w = try await World()
        defer { w.stop() }
        let idpB = try await DevIdPServer()
        defer { idpB.process.stop() }
        let tenantB = TestEnv.uniqueName("t")
        try await idpB.registerClient(w.idpClientID, secret: w.idpSecret, redirectURI: w.redirectURI)
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(tenantB)", key: w.operatorKey, json: ["name": "B"]), 201)
        try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(tenantB)/clients/app", key: w.operatorKey, json: [
            "issuer": idpB.issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"]]), 201)
        let started = try expectStatus(try await w.startLogin(subject: "nina"), 201)
        let callback = try await w.authorize(started["authorization_url"] as! String)
        let r = try expectStatus(try await w.callback(replacingQuery(callback, "iss", idpB.issuer)), 400)
        #expect(r["error"] as? String == "issuer_mismatch")
        #expect((try await idpB.counters(client: w.idpClientID)["token_calls"] as? [String: Int]) == [:])
        #expect((try await w.idp.counters(client: w.idpClientID)["token_calls"] as? [String: Int]) == [:])
        #expect(try w.count("sessions") == 0)
    }

    @Test("PUT client reads the issuer's discovery: a trailing slash, a wrong port or a query is 400 invalid_issuer naming both; verify=false skips it")
    func issuerCheckedAtRegistration() async throws {
        let w = try await World()
        defer { w.stop() }
        let url = w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/checked"
        func body(_ issuer: String) -> [String: Any] {
            ["issuer": issuer, "client_id": w.idpClientID, "auth_method": "client_secret_basic", "client_secret": w.idpSecret,
             "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"]]
        }
        let slash = try expectStatus(try await HTTP.put(url, key: w.operatorKey, json: body(w.idp.issuer + "/")), 400)
        #expect(slash["error"] as? String == "invalid_issuer")
        let message = slash["message"] as? String ?? ""
        #expect(message.contains("'\(w.idp.issuer)'") && message.contains("'\(w.idp.issuer)/'"), "\(slash)")
        let port = URLComponents(string: w.idp.issuer)!.port!
        let unused = TestEnv.freePort()
        let wrongPort = w.idp.issuer.replacingOccurrences(of: ":\(port)", with: ":\(unused)")
        let unreachable = try expectStatus(try await HTTP.put(url, key: w.operatorKey, json: body(wrongPort)), 400)
        #expect(unreachable["error"] as? String == "invalid_issuer")
        try expectStatus(try await HTTP.put(url, key: w.operatorKey, json: body(w.idp.issuer + "?tenant=x")), 400)
        try expectStatus(try await HTTP.put(url + "?verify=maybe", key: w.operatorKey, json: body(w.idp.issuer)), 400)
        #expect(try runPSQL("SELECT count(*) FROM clients WHERE tenant_id = '\(w.tenant)' AND id = 'checked'").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        try expectStatus(try await HTTP.put(url + "?verify=false", key: w.operatorKey, json: body(wrongPort)), 201)
        try expectStatus(try await HTTP.put(url, key: w.operatorKey, json: body(w.idp.issuer)), 200)
    }

    @Test("private_key_jwt: the broker's key signs code exchange and refresh", arguments: ["ES256", "RS256"])
    func privateKeyJWT(_ alg: String) async throws {
        let w = try await World()
        defer { w.stop() }
        let idpClient = TestEnv.uniqueName("pkjwt")
        let put = try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/signed", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": idpClient, "auth_method": "private_key_jwt", "assertion_alg": alg,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"]]), 201)
        let jwks = try #require(put["jwks"] as? [String: Any])
        let key = try #require((jwks["keys"] as? [[String: Any]])?.first)
        #expect(key["alg"] as? String == alg && key["d"] == nil && key["p"] == nil)
        try await w.idp.registerClient(idpClient, secret: nil, redirectURI: w.redirectURI, jwks: jwks)
        let r = try expectStatus(try await w.login(subject: "olga", client: "signed"), 200)
        let session = r["session_id"] as! String
        try expectStatus(try await w.token(session, body: ["force_refresh": true]), 200)
        #expect(try await w.idp.counters(client: idpClient)["client_assertions"] as? Int == 2)
        // GET shows the same public key; a second PUT keeps it.
        let again = try expectStatus(try await HTTP.put(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/signed", key: w.operatorKey, json: [
            "issuer": w.idp.issuer, "client_id": idpClient, "auth_method": "private_key_jwt", "assertion_alg": alg,
            "redirect_uri": w.redirectURI, "scopes": ["openid", "offline_access"]]), 200)
        #expect(((again["jwks"] as? [String: Any])?["keys"] as? [[String: Any]])?.first?["kid"] as? String == key["kid"] as? String)
        let shown = try expectStatus(try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/signed", key: w.operatorKey), 200)
        #expect(((shown["jwks"] as? [String: Any])?["keys"] as? [[String: Any]])?.first?["kid"] as? String == key["kid"] as? String)
    }

    @Test("a refreshed ID token for another subject ends the session: nothing handed out")
    func refreshedIDTokenChecked() async throws {
        let w = try await World()
        defer { w.stop() }
        let session = try expectStatus(try await w.login(subject: "pat"), 200)["session_id"] as! String
        try await w.idp.misbehave(w.idpClientID, "id_token_other_sub")
        let r = try expectStatus(try await w.token(session, body: ["force_refresh": true]), 409)
        #expect(r["error"] as? String == "needs_reauth")
        let doc = try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/sessions/\(session)", key: w.workerKey)
        #expect(doc["state"] as? String == "needs_reauth")
        #expect((doc["last_error"] as? String)?.contains("sub differs") == true)
        #expect(try runPSQL("SELECT count(*) FROM sessions WHERE id = '\(session)' AND (access_token IS NOT NULL OR refresh_token IS NOT NULL)")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test("a callback repeating a parameter is refused")
    func duplicateParameters() async throws {
        let w = try await World()
        defer { w.stop() }
        let started = try expectStatus(try await w.startLogin(subject: "quinn"), 201)
        let callback = try await w.authorize(started["authorization_url"] as! String)
        let r = try expectStatus(try await w.callback(callback + "&state=other"), 400)
        #expect(r["error"] as? String == "invalid_request")
        try expectStatus(try await w.callback(callback), 200)   // the login was not consumed by the refusal
    }
}
