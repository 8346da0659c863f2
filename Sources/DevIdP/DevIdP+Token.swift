import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// The token endpoint (RFC 6749 §3.2): code exchange with PKCE, refresh with rotation and
/// family revocation on reuse, and the misbehaviours that break one check of the broker's each.
extension DevIdP {
    /// Counts the request, then answers it — at once, or late (`.later`, never holding a server
    /// thread) under an injected failure, a refresh fault or a stall. A stall holds the answer
    /// until it ends, whatever else applies; with `process: last` the request also waits for it
    /// before anything else happens. Client authentication failures are answered at once.
    func token(_ req: HTTPRequest) -> HTTPReply {
        let form = FormEncoding.decode(req.body)
        let grantType = form["grant_type"] ?? ""
        guard let clientID = authenticate(req, form) else {
            return .now(json(401, ["error": "invalid_client"], ["WWW-Authenticate": "Basic"]))
        }
        // RFC 9449: a proof is checked before the grant is looked at, so a refusal (a nonce
        // challenge included) consumes nothing and counts as no presentation.
        let glewlwyd = glewlwydNonce(clientID)
        let check = checkProof(req, path: "/token", accessToken: nil, nonceRequired: glewlwyd != nil || state.withLock { $0.settings.dpopNonce },
                               expected: glewlwyd)
        if let refusal = tokenRefusal(check) {
            state.withLock { $0.stats[clientID, default: .init()].dpopRefusals += 1 }
            return .now(refusal)
        }
        var jkt: String?
        if case .valid(let k) = check { jkt = k }
        let (failure, fault, stall) = state.withLock { s -> (DevIdPState.Failure?, RefreshFault?, Stall?) in
            s.stats[clientID, default: .init()].calls[grantType, default: 0] += 1
            // W3C Trace Context: the last few a client's token requests carried, for tests.
            if let t = req.header("traceparent") { s.stats[clientID, default: .init()].traceparents = (s.stats[clientID]?.traceparents ?? []).suffix(19) + [t] }
            if grantType == "refresh_token", let t = form["refresh_token"], s.refreshTokens[t] != nil {
                s.stats[clientID, default: .init()].refreshPresentations += 1
            }
            let failure = s.takeFailure("token")
            // A refresh fault acts on grants that are processed, so not on ones failed instead.
            let fault = grantType == "refresh_token" && (failure?.status ?? 0) == 0 ? s.takeRefreshFault(clientID) : nil
            return (failure, fault, s.stall(at: Date()))
        }
        let bound = jkt, issuer = issuer(for: req)
        let process: @Sendable () -> HTTPResponse = { [self] in
            withClientNonce(grant(form, grantType: grantType, clientID: clientID, jkt: bound, issuer: issuer), clientID)
        }
        return answered(failure: failure, fault: fault, stall: stall, process)
    }

    /// `process`'s answer — at once, or late (`.later`) under an injected failure, a refresh
    /// fault or a stall: the dev IdP's token endpoint and every personality's answer this way.
    func answered(failure: DevIdPState.Failure?, fault: RefreshFault?, stall: Stall?, _ process: @escaping @Sendable () -> HTTPResponse) -> HTTPReply {
        guard failure != nil || fault != nil || stall != nil else { return .now(process()) }
        return .later { respond in
            let release: @Sendable (HTTPResponse) -> Void = { r in Self.at(stall?.until) { respond(r) } }
            let answer: @Sendable () -> Void = { [self] in
                let due = Date().addingTimeInterval(Double(failure?.delayMS ?? 0) / 1000)
                if let failure, failure.status != 0 { return Self.at(due) { release(self.failing(failure)) } }
                Self.at(due) {
                    // `drop_unprocessed`: the connection dies before the IdP acts (a proxy gave up).
                    if fault?.mode == .dropUnprocessed {
                        return Self.at(Date().addingTimeInterval(Double(fault!.delayMS) / 1000)) { release(.drop) }
                    }
                    let r = process()
                    guard let fault else { return release(r) }
                    Self.at(Date().addingTimeInterval(Double(fault.delayMS) / 1000)) { release(fault.mode == .drop ? .drop : r) }
                }
            }
            if let stall, !stall.processFirst { Self.at(stall.until, answer) } else { answer() }
        }
    }

    /// Answers a grant as `issuer` (the one the request was addressed to).
    private func grant(_ form: [String: String], grantType: String, clientID: String, jkt: String?, issuer: String) -> HTTPResponse {
        switch grantType {
        case "authorization_code": return exchangeCode(form, clientID: clientID, jkt: jkt, issuer: issuer)
        case "refresh_token": return refresh(form, clientID: clientID, jkt: jkt, issuer: issuer)
        case TokenExchange.grantType: return exchangeToken(form, clientID: clientID, jkt: jkt, issuer: issuer)
        case "client_credentials": return clientCredentials(form, clientID: clientID, jkt: jkt, issuer: issuer)
        default: return json(400, ["error": "unsupported_grant_type"])
        }
    }

    private func exchangeCode(_ form: [String: String], clientID: String, jkt: String?, issuer: String) -> HTTPResponse {
        guard let code = form["code"], let grant = state.withLock({ $0.codes.removeValue(forKey: code) }),
              grant.client == clientID, grant.expires > Date(), grant.redirectURI == form["redirect_uri"] else {
            return json(400, ["error": "invalid_grant", "error_description": "code unknown, used, expired or not yours"])
        }
        guard let verifier = form["code_verifier"], Base64URL.encode(DevIdPCrypto.sha256(verifier)) == grant.challenge else {
            return json(400, ["error": "invalid_grant", "error_description": "PKCE verification failed"])
        }
        // RFC 9449 §10: a code requested with dpop_jkt is redeemed only with a proof of that key.
        if let want = grant.dpopJKT, want != jkt {
            return json(400, ["error": "invalid_dpop_proof", "error_description": "the code is bound to another DPoP key"])
        }
        if jkt == nil, state.withLock({ $0.clients[clientID]?.dpopRequired == true || $0.settings.fapi2 }) {
            return json(400, ["error": "invalid_dpop_proof", "error_description": "this client must send DPoP proofs"])
        }
        let confidential = state.withLock { $0.clients[clientID]?.confidential == true }
        var rng = SystemRandomNumberGenerator()
        var refresh: String?, familyID: String?
        if confidential && grant.scope.split(separator: " ").contains("offline_access") {
            let family = Identifiers.token(bytes: 16, using: &rng)
            let rt = Identifiers.token(bytes: 32, using: &rng)
            state.withLock { s in
                s.families[family] = .init(current: rt, revoked: false, client: clientID, subject: grant.subject, authTime: Date(), jkt: jkt)
                s.refreshTokens[rt] = .init(family: family, client: clientID, subject: grant.subject, scope: grant.scope)
            }
            refresh = rt
            familyID = family
        }
        return issue(clientID: clientID, subject: grant.subject, scope: grant.scope, nonce: grant.nonce, refresh: refresh, family: familyID,
                     jkt: jkt, issuer: issuer)
    }

    private func refresh(_ form: [String: String], clientID: String, jkt: String?, issuer: String) -> HTTPResponse {
        guard let presented = form["refresh_token"] else { return json(400, ["error": "invalid_request"]) }
        var rng = SystemRandomNumberGenerator()
        let next = Identifiers.token(bytes: 32, using: &rng)
        let outcome = state.withLock { $0.presentRefresh(presented, clientID: clientID, jkt: jkt, personality: nil, next: next, now: Date()) }
        if case .keyRefused = outcome { return json(400, ["error": "invalid_dpop_proof", "error_description": "not the grant's DPoP key"]) }
        guard case .granted(let subject, let scope, let family, _) = outcome else {
            return json(400, ["error": "invalid_grant", "error_description": "refresh token invalid, revoked or reused"])
        }
        let familyKey = state.withLock { $0.families[family]?.jkt }
        return issue(clientID: clientID, subject: subject, scope: scope, nonce: nil, refresh: next, family: family,
                     jkt: familyKey ?? jkt, issuer: issuer)
    }

    /// RFC 6749 §4.4: a confidential client's own token (its subject the client), the scope asked,
    /// no refresh token and no ID token; DPoP-bound when a proof came (RFC 9449 §5). Counted in
    /// `client_credentials_grants`.
    private func clientCredentials(_ form: [String: String], clientID: String, jkt: String?, issuer: String) -> HTTPResponse {
        guard state.withLock({ $0.clients[clientID]?.confidential == true }) else {
            return json(400, ["error": "unauthorized_client", "error_description": "client credentials are for confidential clients"])
        }
        let (ttl, keys, certificate) = state.withLock { s in
            (s.clients[clientID]?.accessTTL ?? s.defaultAccessTTL, s.keys, s.clients[clientID]?.presentedCertificate)
        }
        let scope = form["scope"] ?? ""
        let now = Int(Date().timeIntervalSince1970)
        var rng = SystemRandomNumberGenerator()
        let jti = Identifiers.token(bytes: 16, using: &rng)
        var claims: [String: Any] = ["iss": issuer, "sub": clientID, "aud": form["resource"] ?? form["audience"] ?? clientID, "client_id": clientID,
                                     "scope": scope, "iat": now, "exp": now + ttl, "jti": jti]
        var cnf: [String: Any] = [:]
        if let jkt { cnf["jkt"] = jkt }
        // Bound to the certificate a mutual-TLS client authenticated with (RFC 8705 §3.1).
        if let certificate { cnf["x5t#S256"] = Base64URL.encode(Self.bytes(hex: certificate)) }
        if !cnf.isEmpty { claims["cnf"] = cnf }
        let access = keys.sign(claims, alg: .es256, type: "at+jwt")
        let issued = IssuedAccessToken(digest: DevIdPCrypto.sha256(access), client: clientID, subject: clientID, scope: scope,
                                       expires: Date(timeIntervalSince1970: TimeInterval(now + ttl)), family: nil, jkt: jkt, x5t: certificate)
        state.withLock { s in
            s.record(jti: jti, issued, now: Date())
            s.stats[clientID, default: .init()].clientCredentialsGrants += 1
        }
        return json(200, ["access_token": access, "token_type": jkt == nil ? "Bearer" : "DPoP", "expires_in": ttl, "scope": scope],
                    ["Cache-Control": "no-store"])
    }

    /// Signs the tokens of a grant and remembers the access token (of `family`, if any) for
    /// introspection; with `jkt` the access token is bound to that DPoP key (RFC 9449 §6). Both
    /// tokens name `issuer` as their `iss`.
    private func issue(clientID: String, subject: String, scope: String, nonce: String?, refresh: String?, family: String?,
                       jkt: String?, issuer: String) -> HTTPResponse {
        let (ttl, alg, secret, mode, keys, certificate) = state.withLock { s in
            (s.clients[clientID]?.accessTTL ?? s.defaultAccessTTL, s.clients[clientID]?.idTokenAlg ?? .es256, s.clients[clientID]?.secret,
             s.take(clientID, atAuthorize: false), s.keys, s.clients[clientID]?.presentedCertificate)
        }
        let now = Int(Date().timeIntervalSince1970)
        var rng = SystemRandomNumberGenerator()
        let jti = Identifiers.token(bytes: 16, using: &rng)
        var atClaims: [String: Any] = ["iss": issuer, "sub": subject, "aud": clientID, "client_id": clientID, "scope": scope,
                                       "iat": now, "exp": now + ttl, "jti": jti]
        var cnf: [String: Any] = [:]
        if let jkt { cnf["jkt"] = jkt }
        // RFC 8705 §3.1: bound to the client's certificate, by its SHA-256 thumbprint (base64url).
        if let certificate { cnf["x5t#S256"] = Base64URL.encode(Self.bytes(hex: certificate)) }
        if !cnf.isEmpty { atClaims["cnf"] = cnf }
        let access = keys.sign(atClaims, alg: .es256, type: "at+jwt")
        let issued = IssuedAccessToken(digest: DevIdPCrypto.sha256(access), client: clientID, subject: subject, scope: scope,
                                       expires: Date(timeIntervalSince1970: TimeInterval(now + ttl)), family: family, jkt: jkt,
                                       x5t: certificate)
        state.withLock { $0.record(jti: jti, issued, now: Date()) }
        var claims: [String: Any] = ["iss": issuer, "sub": subject, "aud": clientID, "iat": now, "exp": now + 600, "auth_time": now,
                                     "sid": "sid-" + subject, "email": subject + "@example.test"]
        if let nonce { claims["nonce"] = nonce }
        if mode == .idTokenAuthTimeZero { claims["auth_time"] = 0 }
        var body: [String: Any] = ["access_token": access, "token_type": jkt == nil ? "Bearer" : "DPoP", "expires_in": ttl, "scope": scope]
        if let refresh { body["refresh_token"] = refresh }
        if let id = idToken(claims, clientID: clientID, alg: alg, secret: secret, mode: mode, keys: keys, issuer: issuer) { body["id_token"] = id }
        switch mode {
        case .noAccessToken: body["access_token"] = nil
        case .unknownTokenType: body["token_type"] = "MAC"
        case .dpopTokenType: body["token_type"] = "DPoP"
        case .notJSON: return HTTPResponse(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html>ok</html>".utf8))
        case .oversize: body["padding"] = String(repeating: "x", count: 300 * 1024)
        case .noExpiresIn: body["expires_in"] = nil
        default: break
        }
        return json(200, body, ["Cache-Control": "no-store"])
    }

    /// The ID token, made wrong in exactly the way `mode` says (nil: none at all).
    private func idToken(_ claims: [String: Any], clientID: String, alg: JWSAlgorithm, secret: String?, mode: Misbehaviour?,
                         keys: DevIdPKeys, issuer: String) -> String? {
        var c = claims
        let now = claims["iat"] as! Int
        switch mode {
        case .idTokenMissing: return nil
        case .idTokenWrongIss: c["iss"] = issuer + "/other"
        case .idTokenWrongAud: c["aud"] = "someone-else"
        case .idTokenMultiAudNoAzp: c["aud"] = [clientID, "someone-else"]
        case .idTokenMultiAudAzp: c["aud"] = [clientID, "someone-else"]; c["azp"] = clientID
        case .idTokenWrongAzp: c["aud"] = [clientID, "someone-else"]; c["azp"] = "someone-else"
        case .idTokenExpired: c["iat"] = now - 7200; c["exp"] = now - 3600
        case .idTokenIatFuture: c["iat"] = now + 3600; c["exp"] = now + 7200
        case .idTokenWrongNonce: c["nonce"] = "not-the-login-nonce"
        case .idTokenNoNonce: c["nonce"] = nil
        case .idTokenNoSub: c["sub"] = nil
        case .idTokenOtherSub: c["sub"] = "someone-else"
        default: break
        }
        switch mode {
        case .idTokenBadSignature:
            let good = keys.sign(c, alg: alg, type: "JWT")
            let cut = good.lastIndex(of: ".")!
            var sig = Base64URL.decode(String(good[good.index(after: cut)...]))!
            sig[sig.count / 2] ^= 0x01
            return String(good[...cut]) + Base64URL.encode(sig)
        case .idTokenAlgNone:
            return DevIdPCrypto.must { try CompactJWS.make(header: ["alg": "none", "typ": "JWT"], claims: c) { _ in [] } }
        case .idTokenAlgHS256:
            // "Signed" with the client secret, a classic confusion attack (RFC 8725 §2.1).
            return DevIdPCrypto.must {
                try CompactJWS.make(header: ["alg": "HS256", "typ": "JWT", "kid": keys.kid(alg)], claims: c) {
                    try HMACSHA256.mac(key: Array((secret ?? "").utf8), $0)
                }
            }
        case .idTokenUnknownKid:
            let stranger = DevIdPCrypto.must { try SigningKey.generate(alg) }
            return DevIdPCrypto.must { try stranger.jws(c, kid: "unknown-\(now)-\(Int.random(in: 0...1_000_000))", type: "JWT") }
        case .idTokenAccessTokenType:
            return keys.sign(c, alg: alg, type: "at+jwt")
        default:
            return keys.sign(c, alg: alg, type: "JWT")
        }
    }

    /// Bytes of lowercase hex (a certificate's SHA-256 as the listener reports it).
    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16) }
    }
}
