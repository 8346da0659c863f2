import BrokerCore
import BrokerHTTP
import Foundation

/// Test controls of the development IdP (unauthenticated: it listens on loopback only).
extension DevIdP {

    /// Counters per client (all clients without `client_id`); `times` adds every refresh's time
    /// by subject, which is large: tests ask for it once, pollers should not.
    func stats(_ clientID: String?, times withTimes: Bool) -> HTTPResponse {
        let (all, activeFamilies) = state.withLock { s in
            (clientID.map { [$0: s.stats[$0] ?? .init()] } ?? s.stats,
             s.families.values.filter { !$0.revoked && (clientID == nil || $0.client == clientID) }.count)
        }
        var calls: [String: Int] = [:]
        var ok = 0, reuse = 0, revoked = 0, revocations = 0, assertions = 0, endSessions = 0, userinfo = 0
        var presentations = 0, introspections = 0, dpopRefusals = 0, exchanges = 0, repeats = 0, whoAmI = 0, clientCredentials = 0
        var styles: [String: Int] = [:], revokedTokens: [String: Int] = [:]
        var mtls = 0, aliasCalls = 0, certificatesRefused = 0, certificates: Set<String> = []
        var traceparents: [String] = []
        var times: [String: [Double]] = [:]
        for st in all.values {
            if withTimes { for (k, v) in st.refreshTimes { times[k, default: []] += v } }
            for (k, v) in st.calls { calls[k, default: 0] += v }
            ok += st.refreshesOK
            reuse += st.reuseDetected
            revoked += st.familiesRevoked
            revocations += st.revocations
            assertions += st.assertions
            endSessions += st.endSessions
            userinfo += st.userinfo
            presentations += st.refreshPresentations
            introspections += st.introspections
            dpopRefusals += st.dpopRefusals
            exchanges += st.exchanges
            repeats += st.refreshRepeats
            whoAmI += st.whoAmI
            clientCredentials += st.clientCredentialsGrants
            mtls += st.mtlsAuthentications
            aliasCalls += st.mtlsAliasCalls
            certificatesRefused += st.certificatesRefused
            certificates.formUnion(st.certificatesSeen)
            for (k, v) in st.revocationStyles { styles[k, default: 0] += v }
            for (k, v) in st.revokedTokens { revokedTokens[k, default: 0] += v }
            traceparents += st.traceparents
        }
        var body: [String: Any] = ["token_calls": calls, "refreshes_ok": ok, "reuse_detected": reuse, "families_revoked": revoked,
                                   "revocations": revocations, "client_assertions": assertions, "end_sessions": endSessions,
                                   "userinfo_calls": userinfo, "jwks_fetches": state.withLock { $0.jwksFetches },
                                   "discovery_fetches": state.withLock { $0.discoveryFetches },
                                   "active_families": activeFamilies, "refresh_presentations": presentations,
                                   "introspections": introspections, "traceparents": traceparents, "dpop_refusals": dpopRefusals]
        state.withLock { s in
            body["exchanges"] = exchanges
            body["refresh_repeats"] = repeats
            body["revocations_by_style"] = styles
            body["revoked_tokens"] = revokedTokens
            body["whoami_calls"] = whoAmI
            body["client_credentials_grants"] = clientCredentials
            body["mtls_authentications"] = mtls
            body["mtls_alias_calls"] = aliasCalls
            body["client_certificates_refused"] = certificatesRefused
            body["client_certificates_seen"] = certificates.sorted()
            body["dpop_nonce_challenges"] = s.dpopNonceChallenges
        }
        body.merge(resourceStats(clientID)) { _, new in new }
        let connections = connectionCounts.withLock { $0 }()
        body["connections_opened"] = connections.opened
        body["tls_handshakes_full"] = connections.handshakesFull
        body["tls_handshakes_resumed"] = connections.handshakesResumed
        if withTimes { body["refresh_times"] = times }
        return json(200, body)
    }

    /// `{"client_id", "redirect_uris", "client_secret"?, "jwks"? (private_key_jwt), "access_ttl"?,
    /// "id_token_alg"? (ES256, RS256, PS256), "dpop_required"?, "actor_jwks"?, "exchange_audiences"?,
    /// "token_rotation"?, "tls_client_certificate_sha256"? (hex: mutual TLS, RFC 8705 §2.2),
    /// "tls_client_auth_subject_dn"? (RFC 4514: mutual TLS by a certificate of the listener's CA, §2.1.2)}`: registers or replaces a client (`token_rotation`: an app with token
    /// rotation on, at a personality where it is an app setting).
    func registerClient(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let id = o["client_id"] as? String,
              let uris = o["redirect_uris"] as? [String] else { return json(400, ["error": "invalid_request"]) }
        let alg = (o["id_token_alg"] as? String).map { JWSAlgorithm(rawValue: $0) } ?? .es256
        guard let alg else { return json(400, ["error": "invalid_request", "error_description": "id_token_alg"]) }
        let keys = ((o["jwks"] as? [String: Any])?["keys"] as? [[String: Any]] ?? []).compactMap(JSONWebKey.init(json:))
        var client = DevIdPState.Client(secret: o["client_secret"] as? String, redirectURIs: uris,
                                        accessTTL: (o["access_ttl"] as? Int) ?? state.withLock { $0.defaultAccessTTL },
                                        idTokenAlg: alg, jwks: keys)
        client.dpopRequired = o["dpop_required"] as? Bool ?? false
        client.accessTTLGiven = o["access_ttl"] is Int
        client.actorJWKS = ((o["actor_jwks"] as? [String: Any])?["keys"] as? [[String: Any]] ?? []).compactMap(JSONWebKey.init(json:))
        client.exchangeAudiences = o["exchange_audiences"] as? [String] ?? []
        client.tokenRotation = o["token_rotation"] as? Bool ?? false
        client.tlsCertificateSHA256 = (o["tls_client_certificate_sha256"] as? String)?.lowercased()
        client.tlsSubjectDN = o["tls_client_auth_subject_dn"] as? String
        state.withLock { $0.clients[id] = client }
        return json(201, ["client_id": id])
    }

    /// `{"status", "count"?, "retry_after"?, "endpoint"? ("token" or "revoke"), "delay_ms"?,
    /// "body"?, "content_type"?}`: the endpoint's next `count` requests fail with `status` (0:
    /// succeed, `delay_ms` late), `delay_ms` late, without holding a server thread. With `body`
    /// the failing answer carries exactly it (`""`: an empty body) and `content_type`, if given,
    /// instead of the JSON `temporarily_unavailable`.
    func setFailure(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let status = o["status"] as? Int else {
            return json(400, ["error": "invalid_request"])
        }
        state.withLock {
            $0.failure = .init(endpoint: (o["endpoint"] as? String) ?? "token", status: status, retryAfter: o["retry_after"] as? Int,
                               remaining: (o["count"] as? Int) ?? 1, delayMS: (o["delay_ms"] as? Int) ?? 0,
                               body: o["body"] as? String, contentType: o["content_type"] as? String)
        }
        return json(200, ["ok": true])
    }

    /// Creates grants without the authorize round trip (benchmarks): one refresh-token family per
    /// subject, as if each had signed in with `offline_access` — at `personality`, when given
    /// (its refresh tokens are then refreshed only there).
    func bulkGrants(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let clientID = o["client_id"] as? String,
              let subjects = o["subjects"] as? [String], state.withLock({ $0.clients[clientID]?.confidential == true }) else {
            return json(400, ["error": "invalid_request"])
        }
        let personality = Personality.all.first { $0.name == o["personality"] as? String }
        if o["personality"] != nil, personality.map({ $0.refresh == Personality.Refresh.none }) ?? true {
            return json(400, ["error": "invalid_request", "error_description": "no such personality, or one without refresh tokens"])
        }
        var rng = SystemRandomNumberGenerator()
        var tokens: [String: String] = [:]
        state.withLock { s in
            for sub in subjects {
                let family = Identifiers.token(bytes: 16, using: &rng), rt = Identifiers.token(bytes: 32, using: &rng)
                s.families[family] = .init(current: rt, revoked: false, client: clientID, subject: sub, authTime: Date(),
                                           personality: personality?.name)
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



    /// `{"client_id", "mode", "count"?}`: the client's next `count` responses misbehave as
    /// `mode` (see Misbehaviour); `"mode": null` switches it off.
    func misbehave(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let id = o["client_id"] as? String else {
            return json(400, ["error": "invalid_request"])
        }
        guard let name = o["mode"] as? String else {
            state.withLock { $0.switches[id] = nil }
            return json(200, ["ok": true])
        }
        guard let mode = Misbehaviour(rawValue: name) else {
            return json(400, ["error": "invalid_request", "modes": Misbehaviour.allCases.map(\.rawValue)])
        }
        state.withLock { $0.switches[id] = .init(mode: mode, remaining: (o["count"] as? Int) ?? 1) }
        return json(200, ["ok": true])
    }

    /// `{"keep_old"?: bool}`: new signing keys of a new generation; the JWKS then publishes
    /// only them (or the old ones too with keep_old).
    func rotateKeys(_ req: HTTPRequest) -> HTTPResponse {
        // An empty or unreadable body is the default: the old keys are dropped.
        let keepOld = ((try? JSONSerialization.jsonObject(with: Data(req.body))) as? [String: Any])?["keep_old"] as? Bool ?? false
        let generation = state.withLock { s -> Int in
            s.keys = DevIdPKeys(generation: s.keys.generation + 1, keepingOld: keepOld ? s.keys : nil)
            return s.keys.generation
        }
        return json(200, ["generation": generation])
    }

    /// `{"client_id", "sub"?, "sid"?, "mode"?}`: a back-channel logout token (OpenID Connect
    /// Back-Channel Logout 1.0 §2.4) for the test to deliver, signed with the client's ID-token
    /// key, from the issuer the request was addressed to — or wrong in one way: `bad_signature`,
    /// `nonce`, `wrong_aud`, `no_events`, `old_iat`.
    func logoutToken(_ req: HTTPRequest) -> HTTPResponse {
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any], let clientID = o["client_id"] as? String else {
            return json(400, ["error": "invalid_request"])
        }
        let (alg, keys) = state.withLock { ($0.clients[clientID]?.idTokenAlg ?? .es256, $0.keys) }
        let now = Int(Date().timeIntervalSince1970)
        var rng = SystemRandomNumberGenerator()
        var c: [String: Any] = ["iss": issuer(for: req), "aud": clientID, "iat": now, "exp": now + 120, "jti": Identifiers.token(bytes: 16, using: &rng),
                                "events": ["http://schemas.openid.net/event/backchannel-logout": [String: Any]()]]
        if let sub = o["sub"] as? String { c["sub"] = sub }
        if let sid = o["sid"] as? String { c["sid"] = sid }
        switch o["mode"] as? String {
        case "nonce": c["nonce"] = "n"
        case "wrong_aud": c["aud"] = "someone-else"
        case "no_events": c["events"] = nil
        case "old_iat": c["iat"] = now - 3600
        default: break
        }
        var token = keys.sign(c, alg: alg, type: "logout+jwt")
        if o["mode"] as? String == "bad_signature" {
            let cut = token.lastIndex(of: ".")!
            var sig = Base64URL.decode(String(token[token.index(after: cut)...]))!
            sig[sig.count / 2] ^= 0x01
            token = String(token[...cut]) + Base64URL.encode(sig)
        }
        return json(200, ["logout_token": token])
    }
}
