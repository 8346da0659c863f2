import Foundation

/// AppToken is a client's own token from the client-credentials grant (RFC 6749 §4.4), one per
/// client and ask, shared by every replica through the store. Its access token is sealed at rest
/// like a session's; a DPoP-bound client's token is bound to `dpopKey`, made for this client
/// and ask and kept while the row lives.
public struct AppToken: Sendable, Equatable {
    public let tenant: String
    public let client: String
    public let ask: AppTokenAsk
    /// Nil when there is none to hand out (never granted yet, or dropped after the IdP refused).
    public var accessToken: String?
    public var tokenType: TokenType
    /// The scopes granted (the ask's when the IdP named none).
    public var scopes: [String]
    public var expiresAt: Date?
    /// The lifetime the IdP gave the token (its expires_in), for min_ttl's ceiling.
    public var lifetime: TimeInterval?
    /// When a used token is renewed: RefreshPolicy.nextRefresh of its lifetime.
    public var renewAt: Date?
    public var dpopKey: DPoPKeyMaterial?
    /// Bumped by every write: a forced renewal names the version its caller saw refused.
    public var version: Int64
    public var grantedAt: Date?
    public var lastUsedAt: Date?
    public let createdAt: Date

    public init(tenant: String, client: String, ask: AppTokenAsk, accessToken: String? = nil, tokenType: TokenType = .bearer,
                scopes: [String] = [], expiresAt: Date? = nil, lifetime: TimeInterval? = nil, renewAt: Date? = nil,
                dpopKey: DPoPKeyMaterial? = nil, version: Int64 = 0, grantedAt: Date? = nil, lastUsedAt: Date? = nil, createdAt: Date) {
        self.tenant = tenant
        self.client = client
        self.ask = ask
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.scopes = scopes
        self.expiresAt = expiresAt
        self.lifetime = lifetime
        self.renewAt = renewAt
        self.dpopKey = dpopKey
        self.version = version
        self.grantedAt = grantedAt
        self.lastUsedAt = lastUsedAt
        self.createdAt = createdAt
    }

    /// The row's id within its tenant: the client and the ask's key.
    public var id: String { Self.id(client: client, ask: ask) }

    public static func id(client: String, ask: AppTokenAsk) -> String { client + "|" + ask.key }

    /// Seconds of life left at `now`; nil without a token.
    public func ttl(at now: Date) -> TimeInterval? {
        guard accessToken != nil, let e = expiresAt else { return nil }
        return e.timeIntervalSince(now)
    }

    /// The token with `grant` written in, granted by a request sent at `sentAt`.
    public func granted(_ grant: TokenGrant, sentAt: Date, lifetime: GrantLifetime, policy: RefreshPolicy) -> AppToken {
        var t = self
        let expires = grant.expiresAt(sentAt: sentAt, lifetime)
        t.accessToken = grant.accessToken
        t.tokenType = grant.tokenType
        t.scopes = grant.scope ?? ask.scopes
        t.expiresAt = expires
        t.lifetime = max(0, expires.timeIntervalSince(sentAt))
        t.renewAt = policy.nextRefresh(issuedAt: sentAt, expiresAt: expires, jitter: 0)
        t.grantedAt = sentAt
        return t
    }

    /// The token dropped: nothing to hand out until the next grant.
    public var dropped: AppToken {
        var t = self
        t.accessToken = nil
        t.expiresAt = nil
        t.renewAt = nil
        return t
    }
}
