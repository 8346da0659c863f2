import BrokerCore
import Foundation

/// The callback half of the login flow (RFC 6749 §4.1.2, RFC 9207).
extension LoginService {
    /// The callback's parameters (RFC 6749 §4.1.2, §4.1.2.1; RFC 9207 §2).
    public struct Callback: Sendable {
        public var state: String?
        public var code: String?
        public var iss: String?
        public var error: String?

        public init(state: String?, code: String?, iss: String?, error: String?) {
            self.state = state
            self.code = code
            self.iss = iss
            self.error = error
        }
    }

    public enum Completion: Sendable {
        case signedIn(Session, redirectAfter: String?)
        /// The IdP answered with an error code (kept as it came when it is a plain token).
        case refused(error: String, redirectAfter: String?)
    }

    /// Completes a login. The login is consumed first, so whatever fails afterwards, it cannot
    /// be replayed; nothing is stored unless every check passed.
    public func complete(_ cb: Callback) throws -> Completion {
        func bad(_ code: String, _ m: String) -> BrokerError { .badRequest(code: code, message: m) }
        func refuse(_ login: PendingLogin, _ code: String, _ m: String, _ now: Date) throws -> Completion {
            try self.refuse(login, bad(code, m), now)
        }
        guard let state = cb.state, !state.isEmpty, state.utf8.count <= 512 else { throw bad("invalid_request", "the callback has no state") }
        guard let login = try logins.consume(stateHash: digest.sha256(Array(state.utf8))) else {
            throw bad("invalid_state", "unknown or already used state")
        }
        let now = clock.now()
        guard login.expiresAt > now else { return try refuse(login, "invalid_state", "the login expired; start a new one", now) }
        // Read before the iss check, which depends on the client's profile: a read that fails
        // refuses the login (fails closed) rather than skip the check. Its trust anchors are
        // whom the issuer's metadata is read with.
        let registered: ClientRegistration?
        do { registered = try registry.client(tenant: login.tenant, id: login.client, now: now) } catch {
            return try self.refuse(login, BrokerError.answering(error) { cause in
                events(.unexpected(tenant: login.tenant, client: login.client, session: nil, doing: "reading the login's client", cause: cause))
            }, now)
        }
        let anchors = registered?.trustAnchors
        let meta = try Self.mapped { () throws(TokenEndpointError) in
            // The registration's metadata (and descriptor's endpoints); an OpenID issuer's when it is gone.
            if let registered, registered.issuer == login.issuer { return try directory.metadata(for: registered, now: now) }
            return try directory.metadata(issuer: login.issuer, trustAnchors: anchors, now: now)
        }
        // RFC 9207 §2.4: compare before anything else, errors included; required when advertised.
        if let iss = cb.iss {
            guard iss == login.issuer else { return try refuse(login, "issuer_mismatch", "the iss parameter is not the login's issuer", now) }
        } else if registered?.profile == .fapi2 {
            return try refuse(login, "issuer_mismatch", "a FAPI 2.0 client needs iss in the authorization response (RFC 9207)", now)
        } else if meta.issParameterSupported, sendsIss(registered.flatMap { $0.issuer == login.issuer ? $0.metadataSource : nil } ?? .openID(login.issuer),
                                                       trustAnchors: anchors, now: now) {
            return try refuse(login, "issuer_mismatch", "the issuer sends iss in responses, and this one has none", now)
        }
        if let e = cb.error {
            let code = OAuthError.isCode(e) ? e : "invalid_request"
            audit.record(AuditEvent(at: now, actor: "callback", action: .loginComplete, tenant: login.tenant, session: nil, outcome: "idp:" + code))
            return .refused(error: code, redirectAfter: login.redirectAfter)
        }
        guard let code = cb.code, !code.isEmpty, code.utf8.count <= 2048 else {
            return try refuse(login, "invalid_request", "the callback has neither code nor error", now)
        }
        guard let client = registered, client.issuer == login.issuer else {
            return try refuse(login, "invalid_state", "the login's client changed since it started", now)
        }
        var proof: DPoPProof?
        if let key = login.dpopKey {
            guard let p = dpopKeys?.prover(key) else { return try self.refuse(login, .internalError, now) }
            proof = p
        }
        let grant: TokenGrant
        do { grant = try endpoint.exchangeCode(client: client, code: code, verifier: login.verifier, dpop: proof) } catch {
            // The log line names the refusal without the IdP's description (`TokenEndpointError.reason`).
            return try self.refuse(login, Self.refusal(error, sentProof: proof != nil), now, logged: error.reason)
        }
        guard client.descriptor.kind == .oidc else {
            // A plain OAuth 2.0 provider: no ID token; the user's id from the answer or a "who am I" call.
            let subject: String
            do throws(TokenEndpointError) {
                if let s = grant.subject { subject = s } else { subject = try endpoint.userID(client: client, accessToken: grant.accessToken) }
            } catch {
                switch error {
                case .transient, .notSent, .unanswered: return try self.refuse(login, .idpUnavailable(retryAfter: nil), now)
                case .certificateRefused(let why): return try self.refuse(login, .idpCertificateRefused(reason: why), now)
                default: return try refuse(login, "invalid_token_response", "the user's id could not be learnt: \(error.reason)", now)
                }
            }
            return try store(Self.session(from: grant, subject: subject, claims: IdentityClaims(), login: login, client: client, now: now), login, now)
        }
        guard let idToken = grant.idToken else { return try refuse(login, "invalid_token_response", "the token response has no id_token", now) }
        let verified: VerifiedIDToken
        do {
            var expect = IDTokenExpectation(issuer: login.issuer, clientID: client.clientID, nonce: login.nonce, algorithms: client.idTokenAlgorithms)
            expect.issuerTemplate = client.descriptor.issuerTemplate
            verified = try idTokens.verify(idToken, expect, trustAnchors: client.trustAnchors, now: now)
        } catch {
            switch error {
            case .rejected(let why): return try refuse(login, "invalid_id_token", "ID token rejected: \(why.reason)", now)
            case .keysUnavailable: return try self.refuse(login, .idpUnavailable(retryAfter: nil), now)
            }
        }
        return try store(Self.session(from: grant, subject: verified.subject, claims: verified.claims, login: login, client: client, now: now), login, now)
    }

    /// Stores the new session and tells the other replicas.
    private func store(_ session: Session, _ login: PendingLogin, _ now: Date) throws -> Completion {
        let client = session.client
        try sessions.insert(session)
        feed.publish(.subject(tenant: login.tenant, client: client, subject: session.subject))
        if let user = login.endUser { feed.publish(.endUser(tenant: login.tenant, client: client, endUser: user)) }
        feed.publish(.scheduled(tenant: login.tenant, id: session.id, client: client, at: session.nextRefreshAt))
        audit.record(AuditEvent(at: now, actor: "callback", action: .loginComplete, tenant: login.tenant, session: session.id, outcome: "ok"))
        return .signedIn(session, redirectAfter: login.redirectAfter)
    }

    /// The new session: tokens from the grant, the user's id and claims (from the verified ID
    /// token, or for a plain OAuth 2.0 provider from its answer), the grant's start now (spec
    /// §8). Without a refresh token the session lives until its access token expires (the end of
    /// its grant, announced as such), then needs re-authentication; a token that never expires
    /// is never scheduled.
    static func session(from g: TokenGrant, subject: String, claims: IdentityClaims, login: PendingLogin, client: ClientRegistration,
                        now: Date) -> Session {
        var rng = SystemRandomNumberGenerator()
        let expires = g.expiresAt(sentAt: now, client.descriptor.grant)
        let never = expires == Session.neverExpires
        let refresh = client.descriptor.grant.refreshTokens == .none ? nil : g.refreshToken
        let next = never || refresh == nil ? (never ? nil : expires)
            : client.refreshPolicy.nextRefresh(issuedAt: now, expiresAt: expires, jitter: Double.random(in: -1...1))
        var grantEnds = g.grantExpiry(policy: client.refreshPolicy.grantExpiry(grantedAt: now, refreshedAt: now), sentAt: now)
        // Without a refresh token the grant is its access token: it ends with it, or never.
        if refresh == nil { grantEnds = never ? nil : min(grantEnds ?? expires, expires) }
        let bound = client.authMethod.needsCertificate ? CertificateBinding.thumbprint(ofAccessToken: g.accessToken) : nil
        return Session(tenant: login.tenant, id: Identifiers.session(using: &rng), client: client.id, subject: subject, issuer: login.issuer,
                       scopes: g.scope ?? login.scopes, claims: claims, accessToken: g.accessToken, accessExpiresAt: expires,
                       accessLifetime: never ? nil : expires.timeIntervalSince(now), refreshToken: refresh, idToken: g.idToken, state: .active,
                       nextRefreshAt: next, grantedAt: now, createdAt: now, lastRefreshedAt: now, grantExpiresAt: grantEnds,
                       accessTokenType: g.tokenType, dpopKey: login.dpopKey, metadata: g.metadata,
                       endUser: login.endUser, certificateBinding: bound)
    }

    /// An IdP's demand for a DPoP proof (RFC 9449 `invalid_dpop_proof`, `use_dpop_nonce`) on
    /// `request` from a client registered without DPoP: the one case where what to change is
    /// known. Any other refusal is reported as the server said it (`OAuthError.told`).
    static func dpopWanted(_ o: OAuthError, on request: String) -> String {
        "the identity provider wants a DPoP proof on \(request) (\(o.told)); this client is registered without DPoP: set \"dpop\": true"
    }

    /// Whether the issuer sends RFC 9207 `iss` now: asked when a callback came without it and
    /// the cached document says it does. The IdP is asked at once (`current`), not through the
    /// metadata re-read budget (one per 30 s per issuer): any earlier refused callback — an
    /// attacker's stripped one included — spent that budget, and the stale "advertised" then
    /// refused every login on the replica for up to 30 s after the IdP really stopped. Reading
    /// now keeps the protection (a callback without iss is refused whenever the IdP still
    /// advertises it) and follows a provider that stopped at once. The cost is bounded: one
    /// discovery read per such callback, each of which first consumed a single-use login that
    /// an authenticated enrol key created, and concurrent ones share one read. A document that
    /// cannot be read keeps the stricter answer: it does.
    private func sendsIss(_ source: MetadataSource, trustAnchors: String?, now: Date) -> Bool {
        (try? directory.current(source, trustAnchors: trustAnchors, now: now))?.issParameterSupported != false
    }

    /// Audits a refused callback and throws the refusal; the log line says `logged` when given
    /// (the refusal without what only its caller may read), else the refusal's message.
    private func refuse(_ login: PendingLogin, _ e: BrokerError, _ now: Date, logged: String? = nil) throws -> Completion {
        events(LogLine(tenant: login.tenant, client: login.client, session: nil,
                       event: RefreshEvent(.warn, e.code, "login refused: \(logged ?? e.message)")))
        audit.record(AuditEvent(at: now, actor: "callback", action: .loginComplete, tenant: login.tenant, session: nil, outcome: e.code))
        throw e
    }

    /// The refusal of a failed code exchange as the IdP said it: its RFC 6749 code kept, its
    /// description when it is plain text, the endpoint, and what the request carried.
    static func refusal(_ e: TokenEndpointError, sentProof: Bool) -> BrokerError {
        switch e {
        case .oauth(let o) where !sentProof && (o.error == "invalid_dpop_proof" || o.error == "use_dpop_nonce"):
            return .badRequest(code: o.error, message: dpopWanted(o, on: "the code exchange"))
        case .oauth(let o):
            let code = OAuthError.isCode(o.error) ? o.error : "invalid_grant"
            return .badRequest(code: code, message: "the identity provider refused the code: \(o.told)")
        case .transient(_, let after): return .idpUnavailable(retryAfter: after)
        case .certificateRefused(let why): return .idpCertificateRefused(reason: why)
        case .notSent, .unanswered: return .idpUnavailable(retryAfter: nil)
        case .refused(let status, _):
            return .badRequest(code: "invalid_grant", message: "the identity provider refused the code (HTTP \(status))")
        case .invalidResponse(let why): return .badRequest(code: "invalid_token_response", message: why)
        case .metadata(let why): return .unprocessable(code: "idp_misconfigured", message: why)
        }
    }

}
