import BrokerCore
import Synchronization

/// LocalChangeFeed delivers changes within the process, synchronously: every subscriber has a
/// change before `publish` returns (one replica, so its own subscriber is everyone's).
public final class LocalChangeFeed: ChangeFeed {
    private let handlers = Mutex<[@Sendable (Change) -> Void]>([])
    public let published = Mutex<[Change]>([])
    public init() {}
    public func publish(_ change: Change) {
        published.withLock { $0.append(change) }
        for h in handlers.withLock({ $0 }) { h(change) }
    }
    public func subscribe(_ handler: @escaping @Sendable (Change) -> Void) { handlers.withLock { $0.append(handler) } }
}
