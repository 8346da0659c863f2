import Foundation
import BrokerCore
import Synchronization

/// UsageRecorder coalesces "session used at" marks in memory so that last_used_at costs one bulk
/// write a second instead of one write per token hand-out. Marks are kept per thread
/// (PerThread), so hand-outs on different HTTP threads never wait for each other.
public final class UsageRecorder: Sendable {
    /// Each thread's marks; the session marked last is found again without a hash.
    private let pending = PerThread { RecentDictionary<SessionKey, Date>() }

    public init() {}

    public func record(_ key: SessionKey, at: Date) {
        pending.withLock { p in Self.mark(key, at, in: &p) }
    }

    /// Several sessions used at once (a batch): one lock.
    public func record(_ keys: [SessionKey], at: Date) {
        pending.withLock { p in
            for key in keys { Self.mark(key, at, in: &p) }
        }
    }

    /// One hash per mark at most (none for the session marked last): a mark already held is
    /// moved on in place.
    private static func mark(_ key: SessionKey, _ at: Date, in p: inout RecentDictionary<SessionKey, Date>) {
        if let i = p.index(forKey: key) {
            if p[at: i] < at { p[at: i] = at }
        } else {
            p.set(key, at)
        }
    }

    /// Everything recorded since the last drain: the latest mark of each session.
    public func drain() -> [SessionUse] {
        var latest: [SessionKey: Date] = [:]
        pending.forEach { p in
            for (k, at) in p.storage where latest[k].map({ $0 < at }) ?? true { latest[k] = at }
            p.removeAll(keepingCapacity: true)
        }
        return latest.map { SessionUse(tenant: $0.key.tenant, id: $0.key.id, at: $0.value) }
    }
}
