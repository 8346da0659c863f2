import Foundation

/// ProxyLimits bound the outbound proxy (TOKENBROKER_PROXY_* variables): its threads, the calls
/// that may wait for one, the upstream's time, and the bodies.
public struct ProxyLimits: Sendable, Equatable {
    /// Calls forwarded at once (each holds a thread while its upstream answers and streams).
    public var workers: Int = 64
    /// Calls admitted beyond `workers`, waiting for a thread; more are answered 503 proxy_busy.
    public var queue: Int = 256
    /// Seconds to connect to an upstream (TCP and TLS).
    public var connectTimeout: Double = 5
    /// Seconds for a whole exchange, the body streamed back included.
    public var totalTimeout: Double = 300
    /// A request body longer than this is refused 413.
    public var maxRequestBytes: Int = 100 << 20
    /// An upstream's body longer than this is cut off (announced longer: refused 502).
    public var maxResponseBytes: Int = 4 << 30
    /// A request body of known length up to this is held in memory, so that it can be sent
    /// again (after a refresh, a nonce or a rate limit); a longer one streams, sent once.
    public var replayBytes: Int = 64 << 10

    public init() {}
}
