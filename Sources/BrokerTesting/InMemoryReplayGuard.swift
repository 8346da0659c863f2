import BrokerCore
import Foundation
import Synchronization

/// InMemoryReplayGuard is the ReplayGuard for unit tests; it honours ReplayGuardContract.
public final class InMemoryReplayGuard: ReplayGuard {
    private let ids = Mutex<[String: Date]>([:])
    public init() {}

    private func key(_ issuer: String, _ jti: String) -> String { issuer + "\u{0}" + jti }

    public func firstUse(issuer: String, jti: String, until: Date) throws -> Bool {
        ids.withLock { s in
            let k = key(issuer, jti)
            guard s[k] == nil else { return false }
            s[k] = until
            return true
        }
    }

    public func seen(issuer: String, jti: String) throws -> Bool { ids.withLock { $0[key(issuer, jti)] != nil } }

    public func purge(before: Date) throws { ids.withLock { s in s = s.filter { $0.value >= before } } }
}
