import BrokerCore
import BrokerCrypto
import BrokerHTTP
import Foundation

/// A personality's token endpoint: the body and client authentication the provider accepts,
/// the code exchange, and refreshes that rotate (DevIdPState.presentRefresh, shared with the
/// dev IdP's own endpoint), stay the same, or do not exist. Injected failures
/// (`POST /admin/failures`, endpoint `token`), refresh faults (`/admin/refresh-fault`: late or
/// dropped answers after acting) and stalls apply here as at `/token`.
extension DevIdP {
    func personalityToken(_ base: Personality, _ req: HTTPRequest) -> HTTPReply {
        let isJSON = (req.header("content-type") ?? "").lowercased().hasPrefix("application/json")
        guard base.tokenRequest.contains(isJSON ? .json : .form) else {
            return .now(refusal(base, req, code: base.codes.request, description: "this request body is not accepted"))
        }
        let form = Self.fields(req)
        guard let clientID = personalityClient(base, req, form) else {
            return .now(refusal(base, req, code: base.codes.client, status: 401, description: "client authentication failed"))
        }
        // The app's own setting, where the provider has one (Slack's token rotation).
        let p = base.played(rotation: state.withLock { $0.clients[clientID]?.tokenRotation ?? false })
        if case .single(let tenant) = p.tenancy, req.parameters["tenant"] != tenant {
            return .now(refusal(p, req, code: p.codes.request, description: "unknown tenant"))
        }
        let grantType = form["grant_type"] ?? (p.grantTypeOptional && form["code"] != nil ? "authorization_code" : "")
        let (failure, fault, stall) = state.withLock { s -> (DevIdPState.Failure?, RefreshFault?, Stall?) in
            s.stats[clientID, default: .init()].calls[grantType, default: 0] += 1
            if grantType == "refresh_token", let t = form["refresh_token"], s.refreshTokens[t] != nil {
                s.stats[clientID, default: .init()].refreshPresentations += 1
            }
            let failure = s.takeFailure("token")
            let fault = grantType == "refresh_token" && (failure?.status ?? 0) == 0 ? s.takeRefreshFault(clientID) : nil
            return (failure, fault, s.stall(at: Date()))
        }
        let root = issuer(for: req)
        let process: @Sendable () -> HTTPResponse = { [self] in
            switch grantType {
            case "authorization_code": return personalityExchange(p, req, form, clientID: clientID, root: root)
            case "refresh_token" where p.refresh != .none: return personalityRefresh(p, req, form, clientID: clientID, root: root)
            default: return refusal(p, req, code: p.codes.grantType, description: "unsupported grant_type")
            }
        }
        return answered(failure: failure, fault: fault, stall: stall, process)
    }

    /// The client, authenticated only where the personality accepts its credentials.
    private func personalityClient(_ p: Personality, _ req: HTTPRequest, _ form: [String: String]) -> String? {
        let basic = req.header("authorization")?.hasPrefix("Basic ") == true
        guard basic ? p.clientAuth.contains(.basic) : (form["client_secret"] == nil || p.clientAuth.contains(.body)) else { return nil }
        return authenticate(req, form)
    }

    private func personalityExchange(_ p: Personality, _ req: HTTPRequest, _ form: [String: String], clientID: String, root: String) -> HTTPResponse {
        guard let code = form["code"], let c = state.withLock({ $0.personalityCodes.removeValue(forKey: code) }),
              c.personality == p.name, c.client == clientID, c.expires > Date(), form["redirect_uri"].map({ $0 == c.redirectURI }) ?? true else {
            return refusal(p, req, code: p.codes.code, description: "code unknown, used, expired or not yours")
        }
        if let challenge = c.challenge {
            guard let verifier = form["code_verifier"], Base64URL.encode(DevIdPCrypto.sha256(verifier)) == challenge else {
                return refusal(p, req, code: p.codes.code, description: "PKCE verification failed")
            }
        }
        // Slack: a bot token for `scope`, a user token for `user_scope`; one grant each.
        var asked: [(kind: String?, scope: String)] = [(nil, c.scope)]
        if p.shape == .slack {
            asked = [("bot", c.scope), ("user", c.userScope ?? "")].filter { !$0.scope.isEmpty }
            guard !asked.isEmpty else { return refusal(p, req, code: "invalid_scope", description: "no scope asked for") }
        }
        var rng = SystemRandomNumberGenerator()
        let issued = asked.map { kind, scope -> PersonalityIssue in
            var refresh: String?, family: String?
            if c.offline && p.refresh != .none {
                let f = Identifiers.token(bytes: 16, using: &rng), rt = p.refreshPrefix + Identifiers.token(bytes: 32, using: &rng)
                state.withLock { s in
                    s.families[f] = .init(current: rt, revoked: false, client: clientID, subject: c.subject, authTime: Date(), personality: p.name)
                    s.refreshTokens[rt] = .init(family: f, client: clientID, subject: c.subject, scope: scope, kind: kind)
                }
                (refresh, family) = (rt, f)
            }
            return personalityIssue(p, clientID: clientID, subject: c.subject, scope: scope, kind: kind, refresh: refresh, family: family,
                                    nonce: c.nonce, root: root)
        }
        return personalityAnswer(p, req, personalityBody(p, issued, subject: c.subject, clientID: clientID, root: root, refreshed: false))
    }

    private func personalityRefresh(_ p: Personality, _ req: HTTPRequest, _ form: [String: String], clientID: String, root: String) -> HTTPResponse {
        guard let presented = form["refresh_token"] else { return refusal(p, req, code: p.codes.request, description: "refresh_token missing") }
        var rng = SystemRandomNumberGenerator()
        let next = p.refresh == .rotating ? p.refreshPrefix + Identifiers.token(bytes: 32, using: &rng) : nil
        let outcome = state.withLock { $0.presentRefresh(presented, clientID: clientID, jkt: nil, personality: p.name, next: next, now: Date()) }
        guard case .granted(let subject, let scope, let family, let kind) = outcome else {
            return refusal(p, req, code: p.codes.refresh, status: p.codes.refreshStatus,
                           description: p.codes.refreshDescription ?? "refresh token invalid, revoked or reused")
        }
        let issued = personalityIssue(p, clientID: clientID, subject: subject, scope: scope, kind: kind,
                                      refresh: p.refresh == .reusableEchoed ? presented : next, family: family, nonce: nil, root: root)
        return personalityAnswer(p, req, personalityBody(p, [issued], subject: subject, clientID: clientID, root: root, refreshed: true))
    }

    /// Makes an opaque access token (and an ID token with `openid` at an OpenID personality)
    /// and remembers it for "who am I" and revocation.
    private func personalityIssue(_ p: Personality, clientID: String, subject: String, scope: String, kind: String?, refresh: String?,
                                  family: String?, nonce: String?, root: String) -> PersonalityIssue {
        var rng = SystemRandomNumberGenerator()
        let prefix = p.accessPrefix + (kind.map { $0 == "user" ? "xoxp-" : "xoxb-" } ?? "")
        let access = prefix + Identifiers.token(bytes: 32, using: &rng)
        let now = Date()
        let (ttl, keys, signedIn) = state.withLock { s -> (Int, DevIdPKeys, Date?) in
            let client = s.clients[clientID]
            let ttl = client?.accessTTLGiven == true ? client!.accessTTL : p.accessTTL ?? client?.accessTTL ?? s.defaultAccessTTL
            if s.personalityAccess.count >= 4096, s.personalityAccess.count % 1024 == 0 {
                s.personalityAccess = s.personalityAccess.filter { $0.value.expires.map { $0 > now } ?? true }
            }
            let grant = family.flatMap { s.families[$0] }
            s.personalityAccess[access] = .init(personality: p.name, client: clientID, subject: subject, scope: scope, family: family,
                                                expires: p.accessExpires ? now.addingTimeInterval(TimeInterval(ttl)) : nil,
                                                familyUses: grant?.uses ?? 0)
            return (ttl, s.keys, grant?.authTime)
        }
        var grantExpiresIn: Int?
        if let l = p.grantLifetime, l.fromSignIn, let signedIn {
            grantExpiresIn = max(0, l.seconds - Int(now.timeIntervalSince(signedIn)))
        }
        var idToken: String?
        if p.oidc, Personality.scopes(scope).contains("openid") {
            let tenant = p.tenant(of: subject), iat = Int(now.timeIntervalSince1970)
            let email = subject.contains("@") ? subject : subject + "@example.test"
            var claims: [String: Any] = ["iss": p.issuer(root: root, tenant: tenant), "sub": p.userIDText(subject), "aud": clientID,
                                         "iat": iat, "exp": iat + 3600, "email": email]
            if let nonce { claims["nonce"] = nonce }
            if let tenant {
                claims["tid"] = tenant
                claims["oid"] = p.userIDText(subject)
                claims["ver"] = "2.0"
                claims["preferred_username"] = email
            }
            idToken = keys.sign(claims, alg: .rs256, type: "JWT")
        }
        return PersonalityIssue(access: access, refresh: refresh, ttl: ttl, scope: scope, kind: kind, idToken: idToken, grantExpiresIn: grantExpiresIn)
    }
}

/// The tokens of one grant, as issued, before the personality shapes its answer.
struct PersonalityIssue {
    let access: String
    let refresh: String?
    let ttl: Int
    let scope: String
    /// Slack's `bot` or `user`.
    let kind: String?
    let idToken: String?
    /// What is left of the grant's lifetime, when it runs from the sign-in.
    let grantExpiresIn: Int?
}
