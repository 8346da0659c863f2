import BrokerCore
import Foundation

/// SessionAdmin is what admins do with a tenant's sessions: import grants obtained
/// elsewhere, read one session's metadata — never token material —, list them, revoke one, and
/// read the audit trail. Every call is refused (404) for a tenant that is disabled or unknown.
public struct SessionAdmin: Sendable {
    let store: any SessionStore
    let catalog: any SessionCatalog
    let auditLog: any AuditLog
    let registry: RegistryCache
    let revocations: RevocationService
    let tokens: TokenService
    let feed: any ChangeFeed
    let audit: any AuditSink
    let clock: any Clock
    /// Writes what this replica buffered (audit tallies), so that the trail it reads includes it.
    let flush: @Sendable () -> Void
    /// Lines for errors answered as `internal_error` (their cause).
    let events: @Sendable (LogLine) -> Void

    public init(store: any SessionStore, catalog: any SessionCatalog, auditLog: any AuditLog, registry: RegistryCache,
                revocations: RevocationService, tokens: TokenService, feed: any ChangeFeed, audit: any AuditSink, clock: any Clock,
                flush: @escaping @Sendable () -> Void, events: @escaping @Sendable (LogLine) -> Void = { _ in }) {
        self.store = store
        self.catalog = catalog
        self.auditLog = auditLog
        self.registry = registry
        self.revocations = revocations
        self.tokens = tokens
        self.feed = feed
        self.audit = audit
        self.clock = clock
        self.flush = flush
        self.events = events
    }

    private func active(_ tenant: String) throws { _ = try registry.activeTenant(tenant, now: clock.now()) }

    /// One page of the tenant's sessions, newest first.
    public func sessions(tenant: String, matching query: SessionQuery) throws -> (sessions: [Session], next: SessionQuery.Cursor?) {
        try active(tenant)
        _ = try EndUser.checked(query.endUser)
        return try catalog.sessions(tenant: tenant, matching: query)
    }

    /// Revokes one session here and at the IdP; with `endSession`, also answers the URL that
    /// ends the user's session at the IdP. A `postLogoutRedirect` must be one of the client's
    /// `redirect_after_allowed` exactly — checked before anything changes.
    public func revoke(tenant: String, id: String, actor: String, endSession: Bool, postLogoutRedirect: String? = nil) throws
        -> RevocationService.Outcome {
        try active(tenant)
        if let to = postLogoutRedirect {
            guard endSession else {
                throw BrokerError.badRequest(code: "invalid_request", message: "'post_logout_redirect_uri' needs end_session=true")
            }
            guard let s = try store.session(tenant: tenant, id: id) else { throw BrokerError.notFound("session") }
            guard let client = try registry.client(tenant: tenant, id: s.client, now: clock.now()), client.redirectAfterAllowed.contains(to) else {
                throw BrokerError.badRequest(code: "invalid_request", message: "'post_logout_redirect_uri' is not in the client's redirect_after_allowed list")
            }
        }
        return try revocations.revoke(tenant: tenant, id: id, actor: actor, endSession: endSession, postLogoutRedirect: postLogoutRedirect)
    }

    /// One page of the tenant's audit trail, newest first, this replica's buffered events included.
    public func events(tenant: String, matching query: AuditQuery) throws -> (records: [AuditRecord], next: Int64?) {
        try active(tenant)
        flush()
        return try auditLog.events(tenant: tenant, matching: query)
    }

    /// Imports a grant; without a usable access token it is refreshed at once, and
    /// `completion` hears the session as it then is.
    public func importSession(_ i: Import, tenant: String, by principal: Principal, completion: @escaping @Sendable (Result<Session, BrokerError>) -> Void) {
        let s: Session
        do {
            try active(tenant)
            s = try importSession(i, tenant: tenant, actor: principal.id)
        } catch {
            return completion(.failure(BrokerError.answering(error) { cause in
                events(.unexpected(tenant: tenant, client: i.client, session: nil, doing: "importing a session", cause: cause))
            }))
        }
        guard s.accessToken == nil else { return completion(.success(s)) }
        // Refreshed for the broker (nothing is handed out): a certificate-bound token is no refusal.
        var refresh = TokenRequest(minTTL: 0)
        refresh.presentedByBroker = true
        tokens.token(by: principal, tenant: tenant, target: .session(s.id), request: refresh) { [store] _ in
            // The import is stored; a failed re-read only shows the row as imported, not as refreshed.
            completion(.success((try? store.session(tenant: tenant, id: s.id)) ?? s))
        }
    }

    public struct Import: Sendable {
        public var client: String
        public var subject: String
        /// Nil: a grant without a refresh token, kept until its access token expires (or for
        /// good, when the client's provider issues tokens that never expire).
        public var refreshToken: String?
        public var accessToken: String?
        public var expiresAt: Date?
        public var scopes: [String]?
        public var grantedAt: Date?
        /// Members of the provider's answer to keep with the session (a JSON object, compact).
        public var metadata: String?
        /// The application's own id of the user (EndUser's rule); the subject stays the provider's.
        public var endUser: String?

        public init(client: String, subject: String, refreshToken: String?, accessToken: String?, expiresAt: Date?, scopes: [String]?,
                    grantedAt: Date?, metadata: String? = nil, endUser: String? = nil) {
            self.client = client
            self.subject = subject
            self.refreshToken = refreshToken
            self.accessToken = accessToken
            self.expiresAt = expiresAt
            self.scopes = scopes
            self.grantedAt = grantedAt
            self.metadata = metadata
            self.endUser = endUser
        }
    }

    /// Stores the imported grant as a new active session.
    func importSession(_ i: Import, tenant: String, actor: String) throws -> Session {
        func bad(_ m: String) -> BrokerError { .badRequest(code: "invalid_request", message: m) }
        let now = clock.now()
        guard let client = try registry.client(tenant: tenant, id: i.client, now: now) else { throw BrokerError.notFound("client") }
        guard !i.subject.isEmpty, i.subject.utf8.count <= 255 else { throw bad("'subject' must be 1...255 bytes") }
        let endUser = try EndUser.checked(i.endUser)
        if let r = i.refreshToken, r.isEmpty || r.utf8.count > 8192 { throw bad("'refresh_token' must be 1...8192 bytes") }
        if let a = i.accessToken, a.isEmpty || a.utf8.count > 16384 { throw bad("'access_token' must be 1...16384 bytes") }
        let never = !client.descriptor.grant.accessTokenExpires
        if i.accessToken != nil, i.expiresAt == nil, !never { throw bad("'expires_at' is required with 'access_token'") }
        guard i.refreshToken != nil || i.accessToken != nil else { throw bad("'refresh_token' or 'access_token' is required") }
        if i.refreshToken != nil, client.descriptor.grant.refreshTokens == .none {
            throw bad("the client's provider issues no refresh tokens: import the access token alone")
        }
        if let m = i.metadata, m.utf8.count > TokenResponseShape.maxKept * TokenResponseShape.maxKeptBytes { throw bad("'metadata' is too large") }
        if let g = i.grantedAt, g > now.addingTimeInterval(60) { throw bad("'granted_at' is in the future") }
        var rng = SystemRandomNumberGenerator()
        // Never later than the token's own exp (a JWT's, read unverified): the caller's figure
        // may be counted from after the token was issued.
        // nil: no access token to keep (none given, or already expired), so it is refreshed at once.
        // A token of a provider whose tokens never expire, imported without expires_at, never does.
        let expiresAt = i.accessToken.flatMap { t in
            i.expiresAt.map { AccessTokenExpiry.clamp($0, token: t) } ?? (never ? Session.neverExpires : nil)
        }.flatMap { $0 > now ? $0 : nil }
        guard i.refreshToken != nil || expiresAt != nil else { throw bad("an access token without a refresh token must not have expired") }
        let forever = expiresAt == Session.neverExpires
        // Without a refresh token, the grant ends with its access token (announced as such).
        let grantEnds = i.refreshToken == nil ? (forever ? nil : expiresAt)
            : client.refreshPolicy.grantExpiry(grantedAt: i.grantedAt ?? now, refreshedAt: nil)
        let session = Session(
            tenant: tenant, id: Identifiers.session(using: &rng), client: client.id, subject: i.subject, issuer: client.issuer,
            scopes: i.scopes ?? client.scopes, accessToken: expiresAt == nil ? nil : i.accessToken, accessExpiresAt: expiresAt,
            refreshToken: i.refreshToken, state: .active,
            nextRefreshAt: forever ? nil : i.refreshToken == nil ? expiresAt
                : expiresAt.map { client.refreshPolicy.nextRefresh(issuedAt: now, expiresAt: $0, jitter: Double.random(in: -1...1)) } ?? now,
            grantedAt: i.grantedAt ?? now,
            createdAt: now, grantExpiresAt: grantEnds, metadata: i.metadata, endUser: endUser,
            certificateBinding: expiresAt == nil ? nil : i.accessToken.flatMap(CertificateBinding.thumbprint(ofAccessToken:)))
        try store.insert(session)
        feed.publish(.subject(tenant: tenant, client: client.id, subject: i.subject))
        if let endUser { feed.publish(.endUser(tenant: tenant, client: client.id, endUser: endUser)) }
        feed.publish(.scheduled(tenant: tenant, id: session.id, client: client.id, at: session.nextRefreshAt))
        audit.record(AuditEvent(at: now, actor: actor, action: .sessionImport, tenant: tenant, session: session.id, outcome: "ok"))
        return session
    }

    public func session(tenant: String, id: String) throws -> Session {
        try active(tenant)
        guard let s = try store.session(tenant: tenant, id: id) else { throw BrokerError.notFound("session") }
        return s
    }
}
