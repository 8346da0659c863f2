/// TokenMetrics are the token path's counters, read by GET /metrics (spec §4.4).
public final class TokenMetrics: Sendable {
    /// Token requests by outcome: cached, refreshed, or the error code.
    public let tokenRequests = LabeledCounter()
    /// Refresh attempts by outcome: ok, skipped (another replica won), failed, needs_reauth.
    public let refreshes = LabeledCounter()
    public let refreshLatency = Histogram()
    public let cacheHits = Counter()
    /// Refreshes that gave up waiting for another holder of the session's lock.
    public let lockContention = Counter()
    public init() {}
}
