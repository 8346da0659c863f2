import BrokerCore
import Synchronization

/// BacklogGauge keeps the last backlog counted (the outbox, sign-outs) for GET /metrics, so a
/// scrape never runs SQL. A failed count forgets the last one: a stale gauge would hide it.
public final class BacklogGauge: Sendable {
    let store: any BacklogStore
    private let value = Mutex<Backlog?>(nil)

    public init(store: any BacklogStore) { self.store = store }

    /// The last count, nil before the first or after a failed one.
    public var last: Backlog? { value.withLock { $0 } }

    public func count() throws {
        do {
            let b = try store.backlog()
            value.withLock { $0 = b }
        } catch {
            value.withLock { $0 = nil }
            throw error
        }
    }
}
