import Foundation

/// TokenDecision is the pure heart of the token path: given a session and what a caller needs,
/// serve the token held, refresh first, or refuse.
public enum TokenDecision: Sendable, Equatable {
    case serve
    case refresh
    case reject(BrokerError)

    /// Decides before any lock is taken, from a cached or freshly read session.
    ///
    /// While a refresh attempt is in flight the held token is not served: an IdP may kill it the
    /// moment it rotates (no replica hands out a superseded token); callers join or wait
    /// for the flight instead, and get the held token only if it does not end in time.
    public static func decide(_ s: Session, _ need: TokenRequirement, now: Date) -> TokenDecision {
        if let refusal = refusal(s, need) { return .reject(refusal) }
        // A token bound to a certificate no longer presented is renewed with the new one (RFC 8705 §6.3).
        if need.forceRefresh || s.attempt != nil || need.bound.stale(s) { return .refresh }
        if lives(s, need, now) { return .serve }
        // Backing off: no IdP call before then, whoever asks — answered from memory.
        if let b = s.backoffUntil, b > now {
            return .reject(.idpUnavailable(retryAfter: max(1, Int(b.timeIntervalSince(now).rounded(.up)))))
        }
        return .refresh
    }

    /// Decides again under the refresh lock, from the row re-read there. When the version moved
    /// since the caller looked (`seenVersion`), somebody else refreshed: serve their token if it
    /// satisfies the caller, even when the caller asked to force a refresh. A refresh token is
    /// never spent when a good access token was just obtained with it.
    public static func decideLocked(_ s: Session, _ need: TokenRequirement, seenVersion: Int64, now: Date) -> TokenDecision {
        if let refusal = refusal(s, need) { return .reject(refusal) }
        let fresh = lives(s, need, now) && !need.bound.stale(s)
        if fresh && (!need.forceRefresh || s.version != seenVersion) { return .serve }
        if s.refreshToken == nil { return .reject(.sessionNotActive(.needsReauth)) }
        return .refresh
    }

    /// Checks made after a refresh: a token the IdP issues cannot live as long as asked.
    /// A refresh may have brought a certificate-bound token where there was none: refused to a
    /// worker as the held one would have been. One still bound to another certificate than the
    /// one presented is served: the server bound it so, and another refresh would change nothing.
    public static func afterRefresh(_ s: Session, _ need: TokenRequirement, now: Date) -> TokenDecision {
        if let r = need.bound.refusal(s) { return .reject(r) }
        if lives(s, need, now) { return .serve }
        return .reject(.minTTLTooLong(maximum: maximum(s.accessLifetime ?? s.accessTTL(at: now) ?? 0)))
    }

    /// Whether the held token has at least `min_ttl`, and never less than one second, of real life.
    public static func lives(_ s: Session, _ need: TokenRequirement, _ now: Date) -> Bool {
        guard let ttl = s.accessTTL(at: now) else { return false }
        return ttl >= max(need.minTTL, 1)
    }

    /// The largest min_ttl a token living `lifetime` can satisfy (whole seconds, below the lifetime).
    static func maximum(_ lifetime: TimeInterval) -> Int { max(0, Int(lifetime.rounded(.up)) - 1) }

    private static func refusal(_ s: Session, _ need: TokenRequirement) -> BrokerError? {
        guard s.state == .active else { return .sessionNotActive(s.state) }
        if let r = need.bound.refusal(s) { return r }
        let missing = need.scopes.filter { !s.scopes.contains($0) }
        if !missing.isEmpty { return .insufficientScope(missing: missing) }
        // A token never lives longer than it was issued for: asking for that much would spend a
        // refresh on every call and still fail (422 before any IdP call).
        if let lifetime = s.accessLifetime, need.minTTL >= lifetime {
            return .minTTLTooLong(maximum: maximum(lifetime))
        }
        return nil
    }
}
