import Foundation

/// RefreshPolicy says when a session's access token is refreshed, per client.
///
/// The lead defaults to 20% of the token's lifetime, capped at 5 minutes. Whatever the lead and
/// jitter, a refresh is never scheduled before half the lifetime has passed, so a token that lives
/// two seconds cannot start a refresh loop, and never after expiry.
///
/// Refreshes follow use: a session not handed out for `idleAfter` is idle — no longer refreshed
/// ahead of expiry, refreshed when a worker asks, and kept alive by one refresh `keepaliveEvery`
/// after its last one, so that the grant outlives the IdP's idle limit (XID: 30 days). The IdP
/// then sees refreshes in proportion to the sessions used, not to the sessions stored.
public struct RefreshPolicy: Sendable, Equatable, Codable {
    /// A fixed lead in seconds; when nil, `leadFraction` of the lifetime capped at `leadCap`.
    public var leadSeconds: TimeInterval?
    public var leadFraction: Double
    public var leadCap: TimeInterval
    /// Refreshes are spread by up to ± this many seconds.
    public var jitterSeconds: TimeInterval
    /// The min_ttl a token request gets when it names none (at most half the lead: `defaultMinTTL`).
    public var minTTL: TimeInterval
    /// Not handed out for this long, a session is idle. Nil: three access-token lifetimes, at
    /// least `minimumIdleAfter` (10 min); 0: never idle (refreshed ahead of every expiry, used or not).
    public var idleAfter: TimeInterval?
    /// An idle session's keep-alive refresh runs this long after its last refresh.
    public var keepaliveEvery: TimeInterval
    /// The IdP's absolute lifetime of a grant (XID: 7 days), counted from the sign-in, or from
    /// each refresh when `grantLifetimeRolling` (glewlwyd: 14 days rolling).
    public var grantLifetime: TimeInterval
    public var grantLifetimeRolling: Bool

    public static let minimumIdleAfter: TimeInterval = 600

    public init(leadSeconds: TimeInterval? = nil, leadFraction: Double = 0.2, leadCap: TimeInterval = 300,
                jitterSeconds: TimeInterval = 0, minTTL: TimeInterval = 60, idleAfter: TimeInterval? = nil,
                keepaliveEvery: TimeInterval = 86_400, grantLifetime: TimeInterval = 7 * 86_400, grantLifetimeRolling: Bool = false) {
        self.leadSeconds = leadSeconds
        self.leadFraction = leadFraction
        self.leadCap = leadCap
        self.jitterSeconds = jitterSeconds
        self.minTTL = minTTL
        self.idleAfter = idleAfter
        self.keepaliveEvery = keepaliveEvery
        self.grantLifetime = grantLifetime
        self.grantLifetimeRolling = grantLifetimeRolling
    }

    // Stored as JSON: members written by an older version are missing and take their defaults.
    private enum CodingKeys: String, CodingKey {
        case leadSeconds, leadFraction, leadCap, jitterSeconds, minTTL, idleAfter, keepaliveEvery, grantLifetime, grantLifetimeRolling
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = RefreshPolicy()
        self.init(leadSeconds: try c.decodeIfPresent(TimeInterval.self, forKey: .leadSeconds),
                  leadFraction: try c.decodeIfPresent(Double.self, forKey: .leadFraction) ?? d.leadFraction,
                  leadCap: try c.decodeIfPresent(TimeInterval.self, forKey: .leadCap) ?? d.leadCap,
                  jitterSeconds: try c.decodeIfPresent(TimeInterval.self, forKey: .jitterSeconds) ?? d.jitterSeconds,
                  minTTL: try c.decodeIfPresent(TimeInterval.self, forKey: .minTTL) ?? d.minTTL,
                  idleAfter: try c.decodeIfPresent(TimeInterval.self, forKey: .idleAfter),
                  keepaliveEvery: try c.decodeIfPresent(TimeInterval.self, forKey: .keepaliveEvery) ?? d.keepaliveEvery,
                  grantLifetime: try c.decodeIfPresent(TimeInterval.self, forKey: .grantLifetime) ?? d.grantLifetime,
                  grantLifetimeRolling: try c.decodeIfPresent(Bool.self, forKey: .grantLifetimeRolling) ?? d.grantLifetimeRolling)
    }

    /// A description of what is wrong with this policy, or nil when it is usable.
    public var problem: String? {
        if let l = leadSeconds, !(l >= 0) { return "lead_seconds must be ≥ 0" }
        if !(leadFraction >= 0 && leadFraction <= 0.5) { return "lead_fraction must be within 0...0.5" }
        if !(leadCap >= 0) { return "lead_cap_seconds must be ≥ 0" }
        if !(jitterSeconds >= 0) { return "jitter_seconds must be ≥ 0" }
        if !(minTTL >= 0) { return "min_ttl must be ≥ 0" }
        if let i = idleAfter, !(i == 0 || i >= 10) { return "idle_after_seconds must be 0 (never idle) or ≥ 10" }
        if !(keepaliveEvery >= 60) { return "keepalive_every_seconds must be ≥ 60" }
        if !(grantLifetime >= 60) { return "grant_lifetime_seconds must be ≥ 60" }
        return nil
    }

    /// How long without a hand-out makes a session idle, for tokens living `lifetime`; nil: never.
    public func idleLimit(lifetime: TimeInterval?) -> TimeInterval? {
        if let i = idleAfter { return i == 0 ? nil : i }
        return max(Self.minimumIdleAfter, 3 * (lifetime ?? 3600))
    }

    /// Whether the session has gone unused (never handed out: since it was created) for the limit.
    public func isIdle(_ s: Session, now: Date) -> Bool {
        guard let limit = idleLimit(lifetime: s.accessLifetime) else { return false }
        return now.timeIntervalSince(s.lastUsedAt ?? s.createdAt) >= limit
    }

    /// An idle session's keep-alive: `keepaliveEvery` after its last refresh (or its grant).
    public func keepalive(_ s: Session) -> Date {
        (s.lastRefreshedAt ?? s.grantedAt).addingTimeInterval(keepaliveEvery)
    }

    /// The next refresh of a session whose token was issued at `issuedAt` and expires at
    /// `expiresAt`: ahead of expiry while it is used, its keep-alive once it is idle.
    public func schedule(_ s: Session, issuedAt: Date, expiresAt: Date, now: Date, jitter: Double) -> Date {
        isIdle(s, now: now) ? max(keepalive(s), now) : nextRefresh(issuedAt: issuedAt, expiresAt: expiresAt, jitter: jitter)
    }

    /// When the IdP ends a grant given at `grantedAt` and last refreshed at `refreshedAt`.
    public func grantExpiry(grantedAt: Date, refreshedAt: Date?) -> Date {
        (grantLifetimeRolling ? refreshedAt ?? grantedAt : grantedAt).addingTimeInterval(grantLifetime)
    }

    /// How long before expiry a session in use is refreshed, for tokens living `lifetime`: the
    /// lead, never more than half the lifetime (a refresh never comes before half of it passed).
    public func lead(lifetime: TimeInterval) -> TimeInterval {
        min(leadSeconds ?? min(lifetime * leadFraction, leadCap), lifetime / 2)
    }

    /// The min_ttl of a request that names none, for tokens living `lifetime`: `minTTL`, never
    /// more than half the shortest lead the jitter leaves. The one rule for "fresh enough": the
    /// timer refreshes a session in use while its token still has twice the life such a request
    /// needs, so that request never waits for an on-demand refresh (60-s tokens: a 12-s lead and
    /// a default min_ttl of 6 s; an hour: 300 s and 60 s).
    public func defaultMinTTL(lifetime: TimeInterval?) -> TimeInterval {
        guard let lifetime else { return minTTL }
        return min(minTTL, max(0, lead(lifetime: lifetime) - jitterSeconds) / 2)
    }

    /// The instant a token issued at `issuedAt` and expiring at `expiresAt` should be refreshed.
    /// `jitter` is a uniform draw in -1...1 (an argument, so that tests choose it).
    public func nextRefresh(issuedAt: Date, expiresAt: Date, jitter: Double) -> Date {
        let lifetime = max(0, expiresAt.timeIntervalSince(issuedAt))
        let wanted = expiresAt.addingTimeInterval(-lead(lifetime: lifetime) + jitterSeconds * jitter)
        let earliest = issuedAt.addingTimeInterval(lifetime / 2)
        return min(max(wanted, earliest), expiresAt)
    }
}
