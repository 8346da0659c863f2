import Foundation

/// UpstreamBackoffs remembers, on this replica, which (tenant, client, upstream host) asked to be
/// left alone and until when (a 429 or 503 with `Retry-After`). While one lasts, callers are
/// answered 429 with the time left and no call is made. Bounded: past `limit` keys the expired
/// ones are dropped, then the soonest to end.
///
/// Thread-safety: every method may be called from any thread.
public final class UpstreamBackoffs: Sendable {
    public struct Key: Hashable, Sendable {
        public let tenant: String
        public let client: String
        public let host: String
        public init(tenant: String, client: String, host: String) {
            self.tenant = tenant
            self.client = client
            self.host = host
        }
    }

    private let until = PlainMutex<[Key: Date]>([:])
    private let limit: Int

    public init(limit: Int = 10_000) { self.limit = limit }

    /// The upstream asked to wait until `end`; a longer wait already known is kept.
    public func record(_ key: Key, until end: Date, now: Date) {
        until.withLock { m in
            if let held = m[key], held >= end { return }
            if m.count >= limit, m[key] == nil {
                m = m.filter { $0.value > now }
                if m.count >= limit, let soonest = m.min(by: { $0.value < $1.value })?.key { m[soonest] = nil }
            }
            m[key] = end
        }
    }

    /// Whole seconds left to wait (at least 1), or nil when the upstream may be called.
    public func remaining(_ key: Key, now: Date) -> Int? {
        until.withLock { m in
            guard let end = m[key] else { return nil }
            guard end > now else {
                m[key] = nil
                return nil
            }
            return max(1, Int(end.timeIntervalSince(now).rounded(.up)))
        }
    }
}
