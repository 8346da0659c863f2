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

/// InMemoryReplayGuard is the ReplayGuard for unit tests; it honours ReplayGuardContract.
public final class InMemoryReplayGuard: ReplayGuard {
    private let seen = Mutex<[String: Date]>([:])
    public init() {}

    public func firstUse(issuer: String, jti: String, until: Date) throws -> Bool {
        seen.withLock { s in
            let k = issuer + "\u{0}" + jti
            guard s[k] == nil else { return false }
            s[k] = until
            return true
        }
    }

    public func purge(before: Date) throws { seen.withLock { s in s = s.filter { $0.value >= before } } }
}
