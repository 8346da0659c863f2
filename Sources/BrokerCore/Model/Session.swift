import Foundation

/// Session is one user's grant at one client, with its tokens in the clear: only the store
/// seals and unseals them, and nothing outside memory ever sees them unsealed.
public struct Session: Sendable, Equatable {
    /// The fields, in one box shared by copies until one is changed (copy on write): sessions
    /// are copied at every step between the cache, the store and the refresh machine, and a
    /// copy of twenty-seven fields retained every string of the row each time. Changed only on
    /// a box nobody else holds, so no two threads ever see one box change: hence @unchecked.
    private final class Storage: @unchecked Sendable {
        let tenant: String
        let id: String
        let client: String
        let subject: String
        let issuer: String
        var scopes: [String]
        var claims: IdentityClaims
        var accessToken: String?
        var accessExpiresAt: Date?
        var accessLifetime: TimeInterval?
        var refreshToken: String?
        var idToken: String?
        var state: SessionState
        var nextRefreshAt: Date?
        var version: Int64
        var failureCount: Int
        var lastError: String?
        let grantedAt: Date
        let createdAt: Date
        var lastUsedAt: Date?
        var lastRefreshedAt: Date?
        var attempt: RefreshAttempt?
        var backoffUntil: Date?
        var reason: String?
        var grantExpiresAt: Date?
        var accessTokenType: TokenType
        let dpopKey: DPoPKeyMaterial?
        var metadata: String?
        let endUser: String?
        var certificateBinding: String?

        init(tenant: String, id: String, client: String, subject: String, issuer: String, scopes: [String],
            claims: IdentityClaims, accessToken: String?, accessExpiresAt: Date?, accessLifetime: TimeInterval?,
            refreshToken: String?, idToken: String?, state: SessionState, nextRefreshAt: Date?, version: Int64, failureCount: Int,
            lastError: String?, grantedAt: Date, createdAt: Date, lastUsedAt: Date?, lastRefreshedAt: Date?,
            attempt: RefreshAttempt?, backoffUntil: Date?, reason: String?, grantExpiresAt: Date?, accessTokenType: TokenType,
            dpopKey: DPoPKeyMaterial?, metadata: String?, endUser: String?, certificateBinding: String?) {
            self.certificateBinding = certificateBinding
            self.tenant = tenant
            self.id = id
            self.client = client
            self.subject = subject
            self.issuer = issuer
            self.scopes = scopes
            self.claims = claims
            self.accessToken = accessToken
            self.accessExpiresAt = accessExpiresAt
            self.accessLifetime = accessLifetime
            self.refreshToken = refreshToken
            self.idToken = idToken
            self.state = state
            self.nextRefreshAt = nextRefreshAt
            self.version = version
            self.failureCount = failureCount
            self.lastError = lastError
            self.grantedAt = grantedAt
            self.createdAt = createdAt
            self.lastUsedAt = lastUsedAt
            self.lastRefreshedAt = lastRefreshedAt
            self.attempt = attempt
            self.backoffUntil = backoffUntil
            self.reason = reason
            self.grantExpiresAt = grantExpiresAt
            self.accessTokenType = accessTokenType
            self.dpopKey = dpopKey
            self.metadata = metadata
            self.endUser = endUser
        }

        func copy() -> Storage {
            Storage(tenant: tenant, id: id, client: client, subject: subject, issuer: issuer, scopes: scopes, claims: claims,
                accessToken: accessToken, accessExpiresAt: accessExpiresAt, accessLifetime: accessLifetime,
                refreshToken: refreshToken, idToken: idToken, state: state, nextRefreshAt: nextRefreshAt, version: version,
                failureCount: failureCount, lastError: lastError, grantedAt: grantedAt, createdAt: createdAt,
                lastUsedAt: lastUsedAt, lastRefreshedAt: lastRefreshedAt, attempt: attempt, backoffUntil: backoffUntil,
                reason: reason, grantExpiresAt: grantExpiresAt, accessTokenType: accessTokenType, dpopKey: dpopKey, metadata: metadata, endUser: endUser,
                certificateBinding: certificateBinding)
        }
    }

    private var storage: Storage

    private mutating func change(_ body: (Storage) -> Void) {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        body(storage)
    }

    public var tenant: String { storage.tenant }
    public var id: String { storage.id }
    public var client: String { storage.client }
    public var subject: String { storage.subject }
    public var issuer: String { storage.issuer }
    public var scopes: [String] {
        get { storage.scopes }
        set { change { $0.scopes = newValue } }
    }
    public var claims: IdentityClaims {
        get { storage.claims }
        set { change { $0.claims = newValue } }
    }
    public var accessToken: String? {
        get { storage.accessToken }
        set { change { $0.accessToken = newValue } }
    }
    public var accessExpiresAt: Date? {
        get { storage.accessExpiresAt }
        set { change { $0.accessExpiresAt = newValue } }
    }
    /// The lifetime the IdP gave the last access token (expires_in), if known.
    public var accessLifetime: TimeInterval? {
        get { storage.accessLifetime }
        set { change { $0.accessLifetime = newValue } }
    }
    public var refreshToken: String? {
        get { storage.refreshToken }
        set { change { $0.refreshToken = newValue } }
    }
    public var idToken: String? {
        get { storage.idToken }
        set { change { $0.idToken = newValue } }
    }
    public var state: SessionState {
        get { storage.state }
        set { change { $0.state = newValue } }
    }
    public var nextRefreshAt: Date? {
        get { storage.nextRefreshAt }
        set { change { $0.nextRefreshAt = newValue } }
    }
    /// Bumped on every write; a refresh skips when it moved since the caller looked.
    public var version: Int64 {
        get { storage.version }
        set { change { $0.version = newValue } }
    }
    public var failureCount: Int {
        get { storage.failureCount }
        set { change { $0.failureCount = newValue } }
    }
    /// A generic description of the last failure: never a token, never an IdP body.
    public var lastError: String? {
        get { storage.lastError }
        set { change { $0.lastError = newValue } }
    }
    /// When the grant began: the IdP's absolute refresh-token lifetime counts from here.
    public var grantedAt: Date { storage.grantedAt }
    public var createdAt: Date { storage.createdAt }
    public var lastUsedAt: Date? {
        get { storage.lastUsedAt }
        set { change { $0.lastUsedAt = newValue } }
    }
    public var lastRefreshedAt: Date? {
        get { storage.lastRefreshedAt }
        set { change { $0.lastRefreshedAt = newValue } }
    }
    /// The refresh attempt recorded before the IdP call and not yet resolved: while it
    /// stands nobody presents the refresh token again.
    public var attempt: RefreshAttempt? {
        get { storage.attempt }
        set { change { $0.attempt = newValue } }
    }
    /// No IdP call for this session before this instant (backoff, Retry-After): on-demand
    /// requests honour it as the timer does.
    public var backoffUntil: Date? {
        get { storage.backoffUntil }
        set { change { $0.backoffUntil = newValue } }
    }
    /// Why the session is not active, machine-readable (`invalid_grant`, `refresh_outcome_lost`, …).
    public var reason: String? {
        get { storage.reason }
        set { change { $0.reason = newValue } }
    }
    /// When the IdP ends the grant whatever happens (its absolute refresh-token lifetime, from
    /// the client's `grant_lifetime`: from the sign-in, or from each refresh when it rolls).
    public var grantExpiresAt: Date? {
        get { storage.grantExpiresAt }
        set { change { $0.grantExpiresAt = newValue } }
    }
    /// The access token's `token_type` as the IdP named it (RFC 6749 §5.1): handed out as it is,
    /// never relabelled.
    public var accessTokenType: TokenType {
        get { storage.accessTokenType }
        set { change { $0.accessTokenType = newValue } }
    }
    /// The session's DPoP key (RFC 9449), when its client binds tokens: the same key from the
    /// code exchange to the last refresh.
    public var dpopKey: DPoPKeyMaterial? { storage.dpopKey }
    /// Members of the provider's token answer kept with the session (its descriptor's
    /// `token_response.keep`: Salesforce's `instance_url`), as one compact JSON object, handed
    /// out with every token as `metadata`; nil when the descriptor keeps none.
    public var metadata: String? {
        get { storage.metadata }
        set { change { $0.metadata = newValue } }
    }
    /// The application's own id of the user (`end_user`, EndUser's rule), given when the login
    /// started or the grant was imported; nil when none was. Never the provider's subject.
    public var endUser: String? { storage.endUser }
    /// The SHA-256 thumbprint of the client certificate the access token is bound to (its
    /// `cnf.x5t#S256`, RFC 8705 §3), read when the token came (CertificateBinding); nil: the
    /// token is not certificate-bound. Only a holder of that certificate's key can present it.
    public var certificateBinding: String? {
        get { storage.certificateBinding }
        set { change { $0.certificateBinding = newValue } }
    }

    public init(tenant: String, id: String, client: String, subject: String, issuer: String,
                scopes: [String], claims: IdentityClaims = IdentityClaims(), accessToken: String? = nil,
                accessExpiresAt: Date? = nil, accessLifetime: TimeInterval? = nil, refreshToken: String?,
                idToken: String? = nil, state: SessionState = .active, nextRefreshAt: Date? = nil,
                version: Int64 = 1, failureCount: Int = 0, lastError: String? = nil, grantedAt: Date,
                createdAt: Date, lastUsedAt: Date? = nil, lastRefreshedAt: Date? = nil,
                attempt: RefreshAttempt? = nil, backoffUntil: Date? = nil, reason: String? = nil, grantExpiresAt: Date? = nil,
                accessTokenType: TokenType = .bearer, dpopKey: DPoPKeyMaterial? = nil, metadata: String? = nil, endUser: String? = nil,
                certificateBinding: String? = nil) {
        storage = Storage(tenant: tenant, id: id, client: client, subject: subject, issuer: issuer, scopes: scopes,
            claims: claims, accessToken: accessToken, accessExpiresAt: accessExpiresAt, accessLifetime: accessLifetime,
            refreshToken: refreshToken, idToken: idToken, state: state, nextRefreshAt: nextRefreshAt, version: version,
            failureCount: failureCount, lastError: lastError, grantedAt: grantedAt, createdAt: createdAt, lastUsedAt: lastUsedAt,
            lastRefreshedAt: lastRefreshedAt, attempt: attempt, backoffUntil: backoffUntil, reason: reason,
            grantExpiresAt: grantExpiresAt, accessTokenType: accessTokenType, dpopKey: dpopKey, metadata: metadata, endUser: endUser,
            certificateBinding: certificateBinding)
    }

    public static func == (a: Session, b: Session) -> Bool {
        if a.storage === b.storage { return true }
        let x = a.storage, y = b.storage
        return x.tenant == y.tenant
            && x.id == y.id
            && x.client == y.client
            && x.subject == y.subject
            && x.issuer == y.issuer
            && x.scopes == y.scopes
            && x.claims == y.claims
            && x.accessToken == y.accessToken
            && x.accessExpiresAt == y.accessExpiresAt
            && x.accessLifetime == y.accessLifetime
            && x.refreshToken == y.refreshToken
            && x.idToken == y.idToken
            && x.state == y.state
            && x.nextRefreshAt == y.nextRefreshAt
            && x.version == y.version
            && x.failureCount == y.failureCount
            && x.lastError == y.lastError
            && x.grantedAt == y.grantedAt
            && x.createdAt == y.createdAt
            && x.lastUsedAt == y.lastUsedAt
            && x.lastRefreshedAt == y.lastRefreshedAt
            && x.attempt == y.attempt
            && x.backoffUntil == y.backoffUntil
            && x.reason == y.reason
            && x.grantExpiresAt == y.grantExpiresAt
            && x.accessTokenType == y.accessTokenType
            && x.dpopKey == y.dpopKey
            && x.metadata == y.metadata
            && x.endUser == y.endUser
            && x.certificateBinding == y.certificateBinding
    }

    /// Proactive: refreshed ahead of expiry; idle: not handed out lately, refreshed on demand and
    /// by a keep-alive — read from the schedule itself (a refresh planned after the token's
    /// expiry is a keep-alive).
    public var refreshMode: String? {
        guard state == .active, let next = nextRefreshAt else { return nil }
        // (A refresh in flight or backing off is not a keep-alive, whatever its next instant.)
        if let exp = accessExpiresAt, next > exp, attempt == nil, backoffUntil == nil { return "idle" }
        return "proactive"
    }

    /// The expiry of an access token that never expires (a provider that gives none and says so
    /// in its descriptor, GitHub OAuth Apps): far enough for any `min_ttl`, handed out as
    /// `expires_at: null`, stored as it is.
    public static let neverExpires = Date(timeIntervalSince1970: 253_402_300_799)   // 9999-12-31T23:59:59Z

    /// Whether the access token never expires.
    public var accessNeverExpires: Bool { accessExpiresAt == Self.neverExpires }

    /// Seconds the access token still lives at `now` (negative once expired, nil without one).
    public func accessTTL(at now: Date) -> TimeInterval? {
        guard accessToken != nil, let exp = accessExpiresAt else { return nil }
        return exp.timeIntervalSince(now)
    }
}
