/// TokenMetrics are the token path's counters, read by GET /metrics (spec §4.4).
public final class TokenMetrics: Sendable {
    /// Token requests by outcome: refreshed, or the error code (cached ones: `cachedHandOuts`).
    public let tokenRequests = LabeledCounter()
    /// Tokens handed out from memory: the hot path, counted without a lock.
    public let cachedHandOuts = Counter()

    /// Token requests by outcome, cached ones included.
    public var tokenRequestsByOutcome: [String: Int] {
        var all = tokenRequests.counts
        all["cached"] = cachedHandOuts.count
        return all
    }
    /// Refresh attempts by outcome: ok, skipped (another replica won), failed, needs_reauth.
    public let refreshes = LabeledCounter()
    public let refreshLatency = Histogram()
    public let cacheHits = Counter()
    /// Refreshes that gave up waiting for another holder of the session's lock.
    public let lockContention = Counter()
    /// Refreshes on which the IdP rejected the client's own authentication, by `tenant/client`.
    public let clientRejected = LabeledCounter()
    public init() {}
}
