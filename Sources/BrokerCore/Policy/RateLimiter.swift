import Foundation

/// RateLimiter is a token bucket (`rate` per second, bursts of `burst`), pure: time is an
/// argument. `delay` says how long to wait before the next call may go; a rate of 0 means
/// unlimited.
public struct RateLimiter: Sendable, Equatable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var last: Date?

    public init(rate: Double, burst: Double? = nil) {
        self.rate = rate
        self.burst = burst ?? max(1, rate)
        tokens = self.burst
    }

    /// Takes one token at `now`; returns 0 when the call may go at once, else the wait (the token
    /// is taken all the same: the caller sleeps, then goes).
    public mutating func delay(now: Date) -> TimeInterval {
        guard rate > 0 else { return 0 }
        if let last { tokens = min(burst, tokens + now.timeIntervalSince(last) * rate) }
        last = now
        tokens -= 1
        return tokens >= 0 ? 0 : -tokens / rate
    }
}
