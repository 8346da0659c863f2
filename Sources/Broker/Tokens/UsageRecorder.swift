import Foundation
import BrokerCore
import Synchronization

/// UsageRecorder coalesces "session used at" marks in memory so that last_used_at costs one bulk
/// write a second instead of one write per token hand-out.
public final class UsageRecorder: Sendable {
    private let pending = Mutex<[SessionKey: Date]>([:])

    public init() {}

    public func record(_ key: SessionKey, at: Date) {
        pending.withLock { $0[key] = at }
    }

    /// Everything recorded since the last drain.
    public func drain() -> [SessionUse] {
        let taken = pending.withLock { p in
            defer { p.removeAll(keepingCapacity: true) }
            return p
        }
        return taken.map { SessionUse(tenant: $0.key.tenant, id: $0.key.id, at: $0.value) }
    }
}
