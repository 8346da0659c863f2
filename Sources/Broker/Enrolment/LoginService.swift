import BrokerCore
import Foundation

/// LoginService signs users in the way the XID SDK does, server-side: it starts an
/// authorization-code request with PKCE S256 and fresh state and nonce, and completes it at the
/// callback — state consumed once, `iss` checked (RFC 9207), code exchanged with the verifier,
/// ID token verified — before a session is stored. Any refusal stores nothing.
///
/// Thread-safety: a value; its dependencies are thread-safe. Calls block (database, IdP): run
/// them on worker threads.
public struct LoginService: Sendable {
    let logins: any LoginStore
    let sessions: any SessionStore
    let registry: RegistryCache
    let directory: any IssuerDirectory
    let endpoint: any TokenEndpoint
    let idTokens: JWTVerifier
    let digest: any Digest
    let feed: any ChangeFeed
    let audit: any AuditSink
    let clock: any Clock
    let events: @Sendable (LogLine) -> Void
    /// Makes the DPoP key of a login whose client binds its tokens (nil: no client does here).
    let dpopKeys: DPoPKeys?
    /// How long a started login may wait for its callback (10 minutes).
    public static let lifetime: TimeInterval = 600

    public init(logins: any LoginStore, sessions: any SessionStore, registry: RegistryCache, directory: any IssuerDirectory,
                endpoint: any TokenEndpoint, idTokens: JWTVerifier, digest: any Digest, feed: any ChangeFeed,
                audit: any AuditSink, clock: any Clock, dpopKeys: DPoPKeys? = nil, events: @escaping @Sendable (LogLine) -> Void = { _ in }) {
        self.logins = logins
        self.sessions = sessions
        self.registry = registry
        self.directory = directory
        self.endpoint = endpoint
        self.idTokens = idTokens
        self.digest = digest
        self.feed = feed
        self.audit = audit
        self.clock = clock
        self.events = events
        self.dpopKeys = dpopKeys
    }

    public struct Request: Sendable {
        public var client: String
        public var redirectAfter: String?
        public var loginHint: String?
        public var scopes: [String]?
        /// The application's own id of the user signing in (EndUser's rule), stored on the session.
        public var endUser: String?

        public init(client: String, redirectAfter: String?, loginHint: String?, scopes: [String]?, endUser: String? = nil) {
            self.client = client
            self.redirectAfter = redirectAfter
            self.loginHint = loginHint
            self.scopes = scopes
            self.endUser = endUser
        }
    }

    public struct Started: Sendable {
        public let id: String
        public let authorizationURL: String
        public let expiresAt: Date
    }

    /// Starts a login: stores it (verifier and nonce sealed, state hashed) and returns the URL to
    /// send the user's browser to.
    public func start(_ r: Request, tenant: String, actor: String) throws -> Started {
        func bad(_ m: String) -> BrokerError { .badRequest(code: "invalid_request", message: m) }
        let now = clock.now()
        _ = try registry.activeTenant(tenant, now: now)
        guard let client = try registry.client(tenant: tenant, id: r.client, now: now) else { throw BrokerError.notFound("client") }
        if let after = r.redirectAfter, !client.redirectAfterAllowed.contains(after) {
            // Exact match only: no prefix, no pattern, so that a login cannot be turned into an open redirect.
            throw bad("'redirect_after' is not in the client's redirect_after_allowed list")
        }
        if let hint = r.loginHint, hint.isEmpty || hint.utf8.count > 255 { throw bad("'login_hint' must be 1...255 bytes") }
        let endUser = try EndUser.checked(r.endUser)
        var scopes = r.scopes ?? client.scopes
        guard scopes.count <= 50, scopes.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 100 }) else { throw bad("'scope' must be at most 50 scope tokens") }
        let d = client.descriptor
        // OpenID Connect Core §3.1.2.1: `openid` makes it an OpenID request; a plain OAuth 2.0
        // provider may not know that scope.
        if d.kind == .oidc, !scopes.contains("openid") { scopes.insert("openid", at: 0) }
        let meta = try Self.mapped { () throws(TokenEndpointError) in try directory.metadata(for: client, now: now) }
        guard let authorize = meta.authorizationEndpoint else {
            throw BrokerError.unprocessable(code: "idp_misconfigured", message: "the issuer's metadata has no authorization_endpoint")
        }
        // A FAPI 2.0 client runs only while its checklist holds, the issuer's part included.
        if client.profile == .fapi2 {
            let problems = FAPI2Profile.clientProblems(client) + FAPI2Profile.issuerProblems(meta)
            if !problems.isEmpty { throw BrokerError.unprocessable(code: "idp_misconfigured", message: problems.joined(separator: "; ")) }
        }
        var rng = SystemRandomNumberGenerator()
        // 256 bits each (RFC 7636 §4.1 asks at least 43 characters of the verifier; ≥ 128 bits for state and nonce).
        let verifier = Identifiers.token(bytes: 32, using: &rng)
        let state = Identifiers.token(bytes: 32, using: &rng)
        let nonce = Identifiers.token(bytes: 32, using: &rng)
        // RFC 9449 §10: the session's key is made now, and the code bound to it by dpop_jkt.
        var dpop: (key: DPoPKeyMaterial, proof: DPoPProof)?
        if let alg = client.dpopAlgorithm {
            guard let keys = dpopKeys else { throw BrokerError.internalError }
            let key = try keys.make(alg)
            guard let proof = keys.prover(key) else { throw BrokerError.internalError }
            dpop = (key, proof)
        }
        let login = PendingLogin(id: "lgn_" + Identifiers.token(bytes: 16, using: &rng), tenant: tenant, client: client.id, issuer: client.issuer,
                                 stateHash: try digest.sha256(Array(state.utf8)), verifier: verifier, nonce: nonce, scopes: scopes,
                                 redirectAfter: r.redirectAfter, createdAt: now, expiresAt: now.addingTimeInterval(Self.lifetime),
                                 dpopKey: dpop?.key, endUser: endUser)
        var query = [("response_type", "code"), ("client_id", client.clientID), ("redirect_uri", client.redirectURI),
                     (d.authorization.scopeParam, scopes.joined(separator: d.authorization.scopeSeparator)), ("state", state)]
        if d.kind == .oidc { query.append(("nonce", nonce)) }
        if d.authorization.pkce {
            query += [("code_challenge", Base64URL.encode(try digest.sha256(Array(verifier.utf8)))), ("code_challenge_method", "S256")]
        }
        if let hint = r.loginHint { query.append(("login_hint", hint)) }
        if let dpop { query.append(("dpop_jkt", dpop.proof.thumbprint)) }
        if d.kind == .oidc, scopes.contains("offline_access") { query.append(("prompt", "consent")) }   // OIDC Core §11
        // The provider's own parameters (`access_type=offline`), each in place of the broker's of that name.
        for p in d.authorization.params {
            query.removeAll { $0.0 == p.name }
            query.append((p.name, p.value))
        }
        // RFC 9126: where the issuer offers PAR, the request is pushed with the client's
        // authentication and the browser carries only client_id and request_uri; an issuer
        // that requires PAR without offering its endpoint cannot be served.
        var url = Self.url(authorize, adding: query), expires = login.expiresAt
        if meta.pushedAuthorizationRequestEndpoint != nil {
            let pushed: (requestURI: String, expiresIn: Int)
            do { pushed = try push(client, query, dpop: dpop?.proof) } catch let error as TokenEndpointError {
                switch error {
                // The IdP refused the request itself (RFC 9126 §2.3): the registration must change, retrying cannot help.
                case .oauth(let o) where dpop == nil && (o.error == "invalid_dpop_proof" || o.error == "use_dpop_nonce"):
                    throw BrokerError.unprocessable(code: "idp_misconfigured", message: Self.dpopWanted(o, on: "the pushed authorization request"))
                case .oauth(let o):
                    throw BrokerError.unprocessable(code: "idp_misconfigured", message: "the issuer refused the pushed authorization request: \(o.told)")
                case .refused:
                    throw BrokerError.unprocessable(code: "idp_misconfigured", message: "the issuer refused the pushed authorization request: \(error.reason)")
                default: throw error.callerError
                }
            }
            url = Self.url(authorize, adding: [("client_id", client.clientID), ("request_uri", pushed.requestURI)])
            expires = min(expires, now.addingTimeInterval(TimeInterval(pushed.expiresIn)))
        } else if meta.requirePushedAuthorizationRequests {
            throw BrokerError.unprocessable(code: "idp_misconfigured",
                                            message: "the issuer requires pushed authorization requests but advertises no pushed_authorization_request_endpoint")
        }
        try logins.insert(login)   // after the push: a refused one leaves no pending login
        audit.record(AuditEvent(at: now, actor: actor, action: .loginStart, tenant: tenant, session: nil, outcome: "ok"))
        return Started(id: login.id, authorizationURL: url, expiresAt: expires)
    }

    /// Purges logins that expired (called by the housekeeper).
    public func purgeExpired() throws -> Int { try logins.purge(expiredBefore: clock.now()) }

    static func mapped<T>(_ body: () throws(TokenEndpointError) -> T) throws(BrokerError) -> T {
        do { return try body() } catch { throw error.callerError }
    }

    /// `base` with `query` appended (form-encoded), keeping a query it already has.
    static func url(_ base: URL, adding query: [(String, String)]) -> String {
        let s = base.absoluteString
        return s + (s.contains("?") ? "&" : "?") + FormEncoding.body(query)
    }
}
