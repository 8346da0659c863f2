import BrokerCore
import Foundation
import Synchronization

/// InMemoryLoginStore is the LoginStore for unit tests; it honours LoginStoreContract.
public final class InMemoryLoginStore: LoginStore {
    private let logins = Mutex<[[UInt8]: PendingLogin]>([:])
    public init() {}

    public func insert(_ l: PendingLogin) throws {
        try logins.withLock { m in
            guard m[l.stateHash] == nil else { throw BrokerError.conflict(code: "conflict", message: "already exists") }
            m[l.stateHash] = l
        }
    }

    public func consume(stateHash: [UInt8]) throws -> PendingLogin? { logins.withLock { $0.removeValue(forKey: stateHash) } }

    public func purge(expiredBefore before: Date) throws -> Int {
        logins.withLock { m in
            let old = m.filter { $0.value.expiresAt < before }.map(\.key)
            for k in old { m[k] = nil }
            return old.count
        }
    }
}
