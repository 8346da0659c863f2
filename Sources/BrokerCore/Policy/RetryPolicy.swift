import Foundation

/// RetryPolicy says when a refresh that failed transiently (network, timeout, 5xx, 429) is tried
/// again: exponential backoff with full jitter (a uniform draw in 0...base·2^(n-1), capped),
/// never sooner than the IdP's Retry-After.
public struct RetryPolicy: Sendable, Equatable {
    public var base: TimeInterval
    public var cap: TimeInterval

    public init(base: TimeInterval = 1, cap: TimeInterval = 300) {
        self.base = base
        self.cap = cap
    }

    /// The next attempt after the `failures`-th consecutive failure (1-based). `draw` is uniform
    /// in 0...1 (an argument, so that tests choose it).
    public func nextAttempt(after failures: Int, retryAfter: Int?, now: Date, draw: Double) -> Date {
        let ceiling = min(cap, base * pow(2, Double(max(0, failures - 1))))
        let wait = max(ceiling * min(max(draw, 0), 1), Double(retryAfter ?? 0), 0.1)
        return now.addingTimeInterval(wait)
    }
}
