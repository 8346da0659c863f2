/// TokenMetrics are the token path's counters, read by GET /metrics.
public final class TokenMetrics: Sendable {
    /// A registered client: the bounded label of per-client series.
    public struct ClientLabel: Hashable, Sendable {
        public let tenant: String
        public let client: String
    }
    /// A client and what one refresh attempt came to.
    public struct RefreshLabel: Hashable, Sendable {
        public let client: ClientLabel
        public let outcome: String
    }

    /// Token requests by outcome: refreshed, or the error code (cached ones: `cachedHandOuts`).
    public let tokenRequests = LabeledCounter<String>()
    /// Tokens handed out from memory: the hot path, counted without a lock.
    public let cachedHandOuts = Counter()

    /// Token requests by outcome, cached ones included.
    public var tokenRequestsByOutcome: [String: Int] {
        var all = tokenRequests.counts
        all["cached"] = cachedHandOuts.count
        return all
    }
    /// Refresh attempts by client and outcome: ok, skipped (another replica won), idle, failed,
    /// needs_reauth, client_rejected, unresolved.
    public let refreshes = LabeledCounter<RefreshLabel>()
    /// The IdP's refresh latency, by client.
    public let refreshLatency = LabeledHistograms<ClientLabel>()
    public let cacheHits = Counter()
    /// Callers whose wait for another holder of the session (its lock, or an attempt in flight
    /// elsewhere) ran out — not the timer's try-lock that finds a session taken and moves on.
    public let lockContention = Counter()
    /// Refreshes on which the IdP rejected the client's own authentication, by `tenant/client`.
    public let clientRejected = LabeledCounter<String>()
    public init() {}

    func refreshed(_ tenant: String, _ client: String, _ outcome: String) {
        refreshes.add(RefreshLabel(client: ClientLabel(tenant: tenant, client: client), outcome: outcome))
    }
}
