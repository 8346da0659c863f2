import Foundation

/// Session is one user's grant at one client, with its tokens in the clear: only the store
/// seals and unseals them, and nothing outside memory ever sees them unsealed.
public struct Session: Sendable, Equatable {
    public let tenant: String
    public let id: String
    public let client: String
    public let subject: String
    public let issuer: String
    public var scopes: [String]
    public var claims: IdentityClaims
    public var accessToken: String?
    public var accessExpiresAt: Date?
    /// The lifetime the IdP gave the last access token (expires_in), if known.
    public var accessLifetime: TimeInterval?
    public var refreshToken: String?
    public var idToken: String?
    public var state: SessionState
    public var nextRefreshAt: Date?
    /// Bumped on every write; a refresh skips when it moved since the caller looked.
    public var version: Int64
    public var failureCount: Int
    /// A generic description of the last failure: never a token, never an IdP body.
    public var lastError: String?
    /// When the grant began: the IdP's absolute refresh-token lifetime counts from here (spec §8).
    public let grantedAt: Date
    public let createdAt: Date
    public var lastUsedAt: Date?
    public var lastRefreshedAt: Date?
    /// The refresh attempt recorded before the IdP call and not yet resolved (spec §5): while it
    /// stands nobody presents the refresh token again.
    public var attempt: RefreshAttempt?
    /// No IdP call for this session before this instant (backoff, Retry-After): on-demand
    /// requests honour it as the timer does.
    public var backoffUntil: Date?
    /// Why the session is not active, machine-readable (`invalid_grant`, `refresh_outcome_lost`, …).
    public var reason: String?
    /// When the IdP ends the grant whatever happens (its absolute refresh-token lifetime, from
    /// the client's `grant_lifetime`: from the sign-in, or from each refresh when it rolls).
    public var grantExpiresAt: Date?
    /// The access token's `token_type` as the IdP named it (RFC 6749 §5.1): handed out as it is,
    /// never relabelled.
    public var accessTokenType: TokenType
    /// The session's DPoP key (RFC 9449), when its client binds tokens: the same key from the
    /// code exchange to the last refresh.
    public let dpopKey: DPoPKeyMaterial?

    public init(tenant: String, id: String, client: String, subject: String, issuer: String,
                scopes: [String], claims: IdentityClaims = IdentityClaims(), accessToken: String? = nil,
                accessExpiresAt: Date? = nil, accessLifetime: TimeInterval? = nil, refreshToken: String?,
                idToken: String? = nil, state: SessionState = .active, nextRefreshAt: Date? = nil,
                version: Int64 = 1, failureCount: Int = 0, lastError: String? = nil, grantedAt: Date,
                createdAt: Date, lastUsedAt: Date? = nil, lastRefreshedAt: Date? = nil,
                attempt: RefreshAttempt? = nil, backoffUntil: Date? = nil, reason: String? = nil, grantExpiresAt: Date? = nil,
                accessTokenType: TokenType = .bearer, dpopKey: DPoPKeyMaterial? = nil) {
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

    /// Seconds the access token still lives at `now` (negative once expired, nil without one).
    public func accessTTL(at now: Date) -> TimeInterval? {
        guard accessToken != nil, let exp = accessExpiresAt else { return nil }
        return exp.timeIntervalSince(now)
    }
}
