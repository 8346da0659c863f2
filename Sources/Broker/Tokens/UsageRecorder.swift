import Foundation
import BrokerCore
import Synchronization

/// UsageRecorder coalesces "used at" marks (of sessions, of app tokens) in memory so that
/// last_used_at costs one bulk write a flush instead of one write per hand-out. Marks are kept
/// per thread (PerThread), so hand-outs on different HTTP threads never wait for each other.
public final class UsageRecorder<Key: Hashable & Sendable>: Sendable {
    /// Each thread's marks; the key marked last is found again without a hash.
    private let pending = PerThread { RecentDictionary<Key, Date>() }

    public init() {}

    public func record(_ key: Key, at: Date) {
        pending.withLock { p in Self.mark(key, at, in: &p) }
    }

    /// Several keys used at once (a batch): one lock.
    public func record(_ keys: [Key], at: Date) {
        pending.withLock { p in
            for key in keys { Self.mark(key, at, in: &p) }
        }
    }

    /// One hash per mark at most (none for the key marked last): a mark already held is
    /// moved on in place.
    private static func mark(_ key: Key, _ at: Date, in p: inout RecentDictionary<Key, Date>) {
        if let i = p.index(forKey: key) {
            if p[at: i] < at { p[at: i] = at }
        } else {
            p.set(key, at)
        }
    }

    /// Everything recorded since the last drain: the latest mark of each key.
    public func drainLatest() -> [Key: Date] {
        var latest: [Key: Date] = [:]
        pending.forEach { p in
            for (k, at) in p.storage where latest[k].map({ $0 < at }) ?? true { latest[k] = at }
            p.removeAll(keepingCapacity: true)
        }
        return latest
    }
}

extension UsageRecorder where Key == SessionKey {
    /// The sessions used since the last drain, each at its latest mark.
    public func drain() -> [SessionUse] {
        drainLatest().map { SessionUse(tenant: $0.key.tenant, id: $0.key.id, at: $0.value) }
    }
}
