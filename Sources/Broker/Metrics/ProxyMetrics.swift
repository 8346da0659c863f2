import Synchronization

/// ProxyMetrics are the outbound proxy's counters, read by GET /metrics.
public final class ProxyMetrics: Sendable {
    /// A client, the upstream host it called, and what came of the call: the upstream's status
    /// class (`2xx`…`5xx`) or the broker's refusal code.
    public struct CallLabel: Hashable, Sendable {
        public let tenant: String
        public let client: String
        public let host: String
        public let outcome: String
    }

    /// Proxied calls by client, upstream host and outcome.
    public let calls = LabeledCounter<CallLabel>()
    /// Forced refreshes after an upstream refused a token, by outcome (`ok`, `failed`).
    public let refreshesAfter401 = LabeledCounter<String>()
    /// Calls answered 429 from a rate limit an upstream asked for, without calling it.
    public let rateLimitedLocally = Counter()
    /// Calls admitted and not yet finished (running or waiting for a thread).
    public let inFlight = Atomic<Int>(0)
    /// Response body bytes streamed back to callers.
    public let bytesOut = Counter()

    public init() {}

    /// The outcome label of an upstream status.
    static func statusClass(_ status: Int) -> String { "\(max(1, min(5, status / 100)))xx" }
}
