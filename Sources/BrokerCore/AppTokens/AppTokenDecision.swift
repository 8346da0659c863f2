import Foundation

/// AppTokenDecision is the pure rule of the app-token path: serve the stored token, grant a new
/// one, or refuse — with the session rules of "fresh enough" (TokenDecision.lives: at least
/// min_ttl, and one second, of real life; min_ttl at or past the token's lifetime is refused
/// before any IdP call) and of renewal (RefreshPolicy's lead, the same as a session's).
public enum AppTokenDecision: Sendable, Equatable {
    case serve
    case grant
    case reject(BrokerError)

    /// Decides for an ask with `minTTL` from the stored token (nil: none stored).
    public static func decide(_ t: AppToken?, minTTL: TimeInterval, now: Date) -> AppTokenDecision {
        guard let t else { return .grant }
        if let lifetime = t.lifetime, t.accessToken != nil, minTTL >= lifetime { return .reject(.minTTLTooLong(maximum: TokenDecision.maximum(lifetime))) }
        return lives(t, minTTL: minTTL, now) ? .serve : .grant
    }

    /// Decides under the cross-replica lock, from the row re-read there. A forced renewal
    /// (`ifStill`: the version its caller saw refused upstream) grants only while the row is
    /// still at that version: a caller arriving after another renewed gets the new token.
    public static func decideLocked(_ t: AppToken?, minTTL: TimeInterval, ifStill: Int64?, now: Date) -> AppTokenDecision {
        if let seen = ifStill, let t, t.version == seen, t.accessToken != nil { return .grant }
        return decide(t, minTTL: minTTL, now: now)
    }

    /// After a grant: a token that cannot live min_ttl is refused, saying the most it can.
    public static func afterGrant(_ t: AppToken, minTTL: TimeInterval, now: Date) -> AppTokenDecision {
        if lives(t, minTTL: minTTL, now) { return .serve }
        return .reject(.minTTLTooLong(maximum: TokenDecision.maximum(t.lifetime ?? t.ttl(at: now) ?? 0)))
    }

    /// Whether the background renewal grants now: the token is past its renewal instant, not
    /// expired, and was handed out during its life (used since it was granted). A token nobody
    /// asks for is not renewed: it expires, and the next ask grants.
    public static func renewalDue(_ t: AppToken, now: Date) -> Bool {
        guard t.accessToken != nil, let renewAt = t.renewAt, renewAt <= now, let e = t.expiresAt, e > now,
              let used = t.lastUsedAt, let granted = t.grantedAt else { return false }
        return used >= granted
    }

    /// At least `minTTL` (and one second) of real life.
    public static func lives(_ t: AppToken, minTTL: TimeInterval, _ now: Date) -> Bool {
        guard let ttl = t.ttl(at: now) else { return false }
        return ttl >= max(minTTL, 1)
    }

}
