import BrokerCore
import Synchronization

/// InMemoryBrokerKeyStore is BrokerKeyStore in memory, for unit tests.
public final class InMemoryBrokerKeyStore: BrokerKeyStore {
    private let held = Mutex<[BrokerKey]>([])

    public init() {}

    public func keys() throws -> [BrokerKey] { held.withLock { $0 } }

    public func addCurrent(_ key: BrokerKey) throws -> BrokerKey {
        held.withLock { k in
            if let current = k.first { return current }
            k.append(key)
            return key
        }
    }
}
