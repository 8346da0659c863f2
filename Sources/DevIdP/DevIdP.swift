import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation
import Synchronization

/// DevIdP is the development OpenID provider the tests and `make run` speak to over HTTP, with
/// XID's semantics (spec §8): PKCE S256 only; refresh tokens only with `offline_access` and only
/// for confidential clients; refresh tokens rotate on every use with NO grace period, and a
/// rotated token presented again revokes its whole family, including the tokens just issued to
/// the winner of a race. Access tokens are ES256 JWTs (`typ: at+jwt`); refreshed ID tokens carry
/// no nonce. Codes live 60 s and are single use.
///
/// Test-only endpoints (unauthenticated, loopback only): `POST /admin/clients`,
/// `POST /admin/failures`, `POST /admin/revoke-subject`, `POST /admin/grants`, `GET /stats`.
public final class DevIdP: Sendable {
    public let issuer: String
    private let signer = JWTSigner(kid: "es256-1")
    private let state: Mutex<DevIdPState>

    public init(issuer: String, accessTTL: Int) {
        self.issuer = issuer
        state = Mutex(DevIdPState(defaultAccessTTL: accessTTL))
    }

    public func router() -> Router {
        var r = Router()
        r.add("GET", "/.well-known/openid-configuration") { [self] _ in .now(json(200, discovery())) }
        r.add("GET", "/jwks") { [self] _ in .now(json(200, ["keys": [signer.jwk]])) }
        r.add("GET", "/authorize") { [self] req in .now(authorize(req)) }
        r.add("POST", "/token") { [self] req in .now(token(req)) }
        r.add("POST", "/revoke") { [self] req in .now(revoke(req)) }
        r.add("GET", "/stats") { [self] req in .now(stats(req.queryValue("client_id"), times: req.queryValue("times") == "1")) }
        r.add("POST", "/admin/clients") { [self] req in .now(registerClient(req)) }
        r.add("POST", "/admin/failures") { [self] req in .now(setFailure(req)) }
        r.add("POST", "/admin/revoke-subject") { [self] req in .now(revokeSubject(req)) }
        r.add("POST", "/admin/grants") { [self] req in .now(bulkGrants(req)) }
        return r
    }

    func discovery() -> [String: Any] {
        [
            "issuer": issuer,
            "authorization_endpoint": issuer + "/authorize",
            "token_endpoint": issuer + "/token",
            "jwks_uri": issuer + "/jwks",
            "revocation_endpoint": issuer + "/revoke",
            "userinfo_endpoint": issuer + "/userinfo",
            "end_session_endpoint": issuer + "/end_session",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "subject_types_supported": ["public"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "authorization_response_iss_parameter_supported": true,
            "backchannel_logout_supported": true,
            "dpop_signing_alg_values_supported": ["ES256"],
        ]
    }

    // MARK: authorization endpoint

    func authorize(_ req: HTTPRequest) -> HTTPResponse {
        let q = Dictionary(req.query.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        guard let clientID = q["client_id"], let redirect = q["redirect_uri"],
              let client = state.withLock({ $0.clients[clientID] }), client.redirectURIs.contains(redirect) else {
            return json(400, ["error": "invalid_request", "error_description": "unknown client or redirect_uri"])
        }
        func fail(_ error: String) -> HTTPResponse {
            .redirect(redirect + (redirect.contains("?") ? "&" : "?") + "error=\(error)&state=\(Form.escape(q["state"] ?? ""))&iss=\(Form.escape(issuer))")
        }
        guard q["response_type"] == "code" else { return fail("unsupported_response_type") }
        guard q["code_challenge_method"] == "S256", let challenge = q["code_challenge"], challenge.count == 43 else { return fail("invalid_request") }
        guard let subject = q["login_hint"], !subject.isEmpty else { return fail("login_required") }
        var rng = SystemRandomNumberGenerator()
        let code = Identifiers.token(bytes: 32, using: &rng)
        let grant = DevIdPState.Code(client: clientID, redirectURI: redirect, challenge: challenge, nonce: q["nonce"],
                                     scope: q["scope"] ?? "openid", subject: subject, expires: Date().addingTimeInterval(60))
        state.withLock { $0.codes[code] = grant }
        return .redirect(redirect + (redirect.contains("?") ? "&" : "?") + "code=\(code)&state=\(Form.escape(q["state"] ?? ""))&iss=\(Form.escape(issuer))")
    }

    // MARK: token endpoint

    func token(_ req: HTTPRequest) -> HTTPResponse {
        let form = Form.decode(req.body)
        let grantType = form["grant_type"] ?? ""
        guard let clientID = authenticate(req, form) else {
            return json(401, ["error": "invalid_client"], ["WWW-Authenticate": "Basic"])
        }
        let injected = state.withLock { s -> DevIdPState.Failure? in
            s.stats[clientID, default: .init()].calls[grantType, default: 0] += 1
            guard var f = s.failure, f.remaining > 0 else { return nil }
            f.remaining -= 1
            s.failure = f.remaining > 0 ? f : nil
            return f
        }
        if let f = injected {
            return json(f.status, ["error": "temporarily_unavailable"], f.retryAfter.map { ["Retry-After": String($0)] } ?? [:])
        }
        switch grantType {
        case "authorization_code": return exchangeCode(form, clientID: clientID)
        case "refresh_token": return refresh(form, clientID: clientID)
        default: return json(400, ["error": "unsupported_grant_type"])
        }
    }

    /// client_secret_basic or client_secret_post; a public client sends only client_id.
    private func authenticate(_ req: HTTPRequest, _ form: [String: String]) -> String? {
        var id = form["client_id"], secret = form["client_secret"]
        if let h = req.header("authorization"), h.hasPrefix("Basic "),
           let raw = Data(base64Encoded: String(h.dropFirst(6))), let pair = String(data: raw, encoding: .utf8),
           let colon = pair.firstIndex(of: ":") {
            id = Form.unescape(Array(pair[..<colon].utf8))
            secret = Form.unescape(Array(pair[pair.index(after: colon)...].utf8))
        }
        guard let id, let client = state.withLock({ $0.clients[id] }) else { return nil }
        if let expected = client.secret { return secret == expected ? id : nil }
        return secret == nil ? id : nil
    }

    private func exchangeCode(_ form: [String: String], clientID: String) -> HTTPResponse {
        guard let code = form["code"], let grant = state.withLock({ $0.codes.removeValue(forKey: code) }),
              grant.client == clientID, grant.expires > Date(), grant.redirectURI == form["redirect_uri"] else {
            return json(400, ["error": "invalid_grant", "error_description": "code unknown, used, expired or not yours"])
        }
        guard let verifier = form["code_verifier"], Base64URL.encode(SHA256.hash(verifier)) == grant.challenge else {
            return json(400, ["error": "invalid_grant", "error_description": "PKCE verification failed"])
        }
        let confidential = state.withLock { $0.clients[clientID]?.secret != nil }
        var rng = SystemRandomNumberGenerator()
        var refresh: String?
        if confidential && grant.scope.split(separator: " ").contains("offline_access") {
            let family = Identifiers.token(bytes: 16, using: &rng)
            let rt = Identifiers.token(bytes: 32, using: &rng)
            state.withLock { s in
                s.families[family] = .init(current: rt, revoked: false, client: clientID, subject: grant.subject, authTime: Date())
                s.refreshTokens[rt] = .init(family: family, client: clientID, subject: grant.subject, scope: grant.scope)
            }
            refresh = rt
        }
        return issue(clientID: clientID, subject: grant.subject, scope: grant.scope, nonce: grant.nonce, refresh: refresh)
    }

    private func refresh(_ form: [String: String], clientID: String) -> HTTPResponse {
        guard let presented = form["refresh_token"] else { return json(400, ["error": "invalid_request"]) }
        var rng = SystemRandomNumberGenerator()
        let next = Identifiers.token(bytes: 32, using: &rng)
        let outcome = state.withLock { s -> (subject: String, scope: String)? in
            guard let rt = s.refreshTokens[presented], rt.client == clientID, var family = s.families[rt.family] else { return nil }
            guard !family.revoked else { return nil }
            guard family.current == presented else {
                // Reuse of a rotated token: revoke the whole family, no grace period.
                family.revoked = true
                s.families[rt.family] = family
                s.stats[clientID, default: .init()].reuseDetected += 1
                s.stats[clientID, default: .init()].familiesRevoked += 1
                return nil
            }
            family.current = next
            s.families[rt.family] = family
            s.refreshTokens[next] = .init(family: rt.family, client: clientID, subject: rt.subject, scope: rt.scope)
            s.stats[clientID, default: .init()].refreshesOK += 1
            s.stats[clientID, default: .init()].refreshTimes[rt.subject, default: []].append(Date().timeIntervalSince1970)
            return (rt.subject, rt.scope)
        }
        guard let outcome else { return json(400, ["error": "invalid_grant", "error_description": "refresh token invalid, revoked or reused"]) }
        return issue(clientID: clientID, subject: outcome.subject, scope: outcome.scope, nonce: nil, refresh: next)
    }

    private func issue(clientID: String, subject: String, scope: String, nonce: String?, refresh: String?) -> HTTPResponse {
        let ttl = state.withLock { $0.clients[clientID]?.accessTTL ?? $0.defaultAccessTTL }
        let now = Int(Date().timeIntervalSince1970)
        var rng = SystemRandomNumberGenerator()
        let access = signer.sign(["iss": issuer, "sub": subject, "aud": clientID, "client_id": clientID, "scope": scope,
                                  "iat": now, "exp": now + ttl, "jti": Identifiers.token(bytes: 16, using: &rng)], type: "at+jwt")
        var idClaims: [String: Any] = ["iss": issuer, "sub": subject, "aud": clientID, "iat": now, "exp": now + 600, "auth_time": now,
                                       "sid": "sid-" + subject]
        if let nonce { idClaims["nonce"] = nonce }
        var body: [String: Any] = ["access_token": access, "token_type": "Bearer", "expires_in": ttl, "scope": scope,
                                   "id_token": signer.sign(idClaims, type: "JWT")]
        if let refresh { body["refresh_token"] = refresh }
        return json(200, body, ["Cache-Control": "no-store"])
    }

    // MARK: revocation (RFC 7009)

    func revoke(_ req: HTTPRequest) -> HTTPResponse {
        let form = Form.decode(req.body)
        guard let clientID = authenticate(req, form) else { return json(401, ["error": "invalid_client"]) }
        if let t = form["token"] {
            state.withLock { s in
                s.stats[clientID, default: .init()].revocations += 1
                if let rt = s.refreshTokens[t], rt.client == clientID { s.families[rt.family]?.revoked = true }
            }
        }
        return HTTPResponse(status: 200)
    }

    // MARK: test controls

    /// Counters per client (all clients without `client_id`); `times` adds every refresh's time
    /// by subject, which is large: tests ask for it once, pollers should not.
    func stats(_ clientID: String?, times withTimes: Bool) -> HTTPResponse {
        let all = state.withLock { s in clientID.map { [$0: s.stats[$0] ?? .init()] } ?? s.stats }
        var calls: [String: Int] = [:]
        var ok = 0, reuse = 0, revoked = 0, revocations = 0
        var times: [String: [Double]] = [:]
        for st in all.values {
            if withTimes { for (k, v) in st.refreshTimes { times[k, default: []] += v } }
            for (k, v) in st.calls { calls[k, default: 0] += v }
            ok += st.refreshesOK
            reuse += st.reuseDetected
            revoked += st.familiesRevoked
            revocations += st.revocations
        }
        var body: [String: Any] = ["token_calls": calls, "refreshes_ok": ok, "reuse_detected": reuse, "families_revoked": revoked,
                                   "revocations": revocations]
        if withTimes { body["refresh_times"] = times }
        return json(200, body)
    }

    func registerClient(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let id = o["client_id"] as? String,
              let uris = o["redirect_uris"] as? [String] else { return json(400, ["error": "invalid_request"]) }
        let client = DevIdPState.Client(secret: o["client_secret"] as? String, redirectURIs: uris,
                                        accessTTL: (o["access_ttl"] as? Int) ?? state.withLock { $0.defaultAccessTTL })
        state.withLock { $0.clients[id] = client }
        return json(201, ["client_id": id])
    }

    func setFailure(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let status = o["status"] as? Int else {
            return json(400, ["error": "invalid_request"])
        }
        state.withLock { $0.failure = .init(status: status, retryAfter: o["retry_after"] as? Int, remaining: (o["count"] as? Int) ?? 1) }
        return json(200, ["ok": true])
    }

    /// Creates grants without the authorize round trip (benchmarks): one refresh-token family per
    /// subject, as if each had signed in with `offline_access`.
    func bulkGrants(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let clientID = o["client_id"] as? String,
              let subjects = o["subjects"] as? [String], state.withLock({ $0.clients[clientID]?.secret != nil }) else {
            return json(400, ["error": "invalid_request"])
        }
        var rng = SystemRandomNumberGenerator()
        var tokens: [String: String] = [:]
        state.withLock { s in
            for sub in subjects {
                let family = Identifiers.token(bytes: 16, using: &rng), rt = Identifiers.token(bytes: 32, using: &rng)
                s.families[family] = .init(current: rt, revoked: false, client: clientID, subject: sub, authTime: Date())
                s.refreshTokens[rt] = .init(family: family, client: clientID, subject: sub, scope: "openid offline_access")
                tokens[sub] = rt
            }
        }
        return json(201, ["refresh_tokens": tokens])
    }

    func revokeSubject(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let sub = o["sub"] as? String else {
            return json(400, ["error": "invalid_request"])
        }
        let n = state.withLock { s -> Int in
            var n = 0
            for (k, f) in s.families where f.subject == sub && !f.revoked {
                s.families[k]?.revoked = true
                n += 1
            }
            return n
        }
        return json(200, ["revoked_families": n])
    }

    private func json(_ status: Int, _ object: [String: Any], _ headers: [String: String] = [:]) -> HTTPResponse {
        var r = HTTPResponse.json(status, [UInt8]((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()))
        for (k, v) in headers { r.headers.append((k, v)) }
        return r
    }
}
