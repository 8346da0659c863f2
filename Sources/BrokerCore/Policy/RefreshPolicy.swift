import Foundation

/// RefreshPolicy says when a session's access token is refreshed ahead of expiry (spec §5).
///
/// The lead defaults to 20% of the token's lifetime, capped at 5 minutes. Whatever the lead and
/// jitter, a refresh is never scheduled before half the lifetime has passed, so a token that lives
/// two seconds cannot start a refresh loop, and never after expiry.
public struct RefreshPolicy: Sendable, Equatable, Codable {
    /// A fixed lead in seconds; when nil, `leadFraction` of the lifetime capped at `leadCap`.
    public var leadSeconds: TimeInterval?
    public var leadFraction: Double
    public var leadCap: TimeInterval
    /// Refreshes are spread by up to ± this many seconds.
    public var jitterSeconds: TimeInterval
    /// The min_ttl a token request gets when it names none.
    public var minTTL: TimeInterval

    public init(leadSeconds: TimeInterval? = nil, leadFraction: Double = 0.2, leadCap: TimeInterval = 300,
                jitterSeconds: TimeInterval = 0, minTTL: TimeInterval = 60) {
        self.leadSeconds = leadSeconds
        self.leadFraction = leadFraction
        self.leadCap = leadCap
        self.jitterSeconds = jitterSeconds
        self.minTTL = minTTL
    }

    /// A description of what is wrong with this policy, or nil when it is usable.
    public var problem: String? {
        if let l = leadSeconds, !(l >= 0) { return "lead_seconds must be ≥ 0" }
        if !(leadFraction >= 0 && leadFraction <= 0.5) { return "lead_fraction must be within 0...0.5" }
        if !(leadCap >= 0) { return "lead_cap_seconds must be ≥ 0" }
        if !(jitterSeconds >= 0) { return "jitter_seconds must be ≥ 0" }
        if !(minTTL >= 0) { return "min_ttl must be ≥ 0" }
        return nil
    }

    /// The instant a token issued at `issuedAt` and expiring at `expiresAt` should be refreshed.
    /// `jitter` is a uniform draw in -1...1 (an argument, so that tests choose it).
    public func nextRefresh(issuedAt: Date, expiresAt: Date, jitter: Double) -> Date {
        let lifetime = max(0, expiresAt.timeIntervalSince(issuedAt))
        let lead = leadSeconds ?? min(lifetime * leadFraction, leadCap)
        let wanted = expiresAt.addingTimeInterval(-lead + jitterSeconds * jitter)
        let earliest = issuedAt.addingTimeInterval(lifetime / 2)
        return min(max(wanted, earliest), expiresAt)
    }
}
