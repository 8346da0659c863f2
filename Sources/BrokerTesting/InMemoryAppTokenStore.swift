import BrokerCore
import Foundation
import Synchronization

/// InMemoryAppTokenStore is the AppTokenStore for unit tests; it honours AppTokenStoreContract.
/// The grant lock is one NSLock per row, waited for up to the timeout.
public final class InMemoryAppTokenStore: AppTokenStore {
    private struct Key: Hashable { let tenant: String, id: String }
    private let rows = Mutex<[Key: AppToken]>([:])
    private let locks = Mutex<[Key: NSLock]>([:])

    public init() {}

    public func appToken(tenant: String, client: String, ask: AppTokenAsk) throws -> AppToken? {
        rows.withLock { $0[Key(tenant: tenant, id: AppToken.id(client: client, ask: ask))] }
    }

    public func withGrantLock<T>(tenant: String, client: String, ask: AppTokenAsk, timeout: TimeInterval,
                                 _ body: (AppToken?) throws -> (write: AppToken?, result: T)) throws -> T {
        let key = Key(tenant: tenant, id: AppToken.id(client: client, ask: ask))
        let lock = locks.withLock { l in
            if let held = l[key] { return held }
            let new = NSLock()
            l[key] = new
            return new
        }
        guard timeout > 0 ? lock.lock(before: Date().addingTimeInterval(timeout)) : lock.try() else { throw BrokerError.refreshBusy }
        defer { lock.unlock() }
        let (write, result) = try body(rows.withLock { $0[key] })
        if var w = write {
            rows.withLock { m in
                w.version = (m[key]?.version ?? 0) + 1
                if let used = m[key]?.lastUsedAt { w.lastUsedAt = max(used, w.lastUsedAt ?? used) }
                m[key] = w
            }
        }
        return result
    }

    public func drop(tenant: String, client: String) throws -> Int {
        rows.withLock { m in
            let hit = m.filter { $0.key.tenant == tenant && $0.value.client == client && $0.value.accessToken != nil }
            for (k, t) in hit {
                var d = t.dropped
                d.version += 1
                m[k] = d
            }
            return hit.count
        }
    }

    public func touch(_ uses: [AppTokenUse]) throws {
        rows.withLock { m in
            for u in uses {
                let k = Key(tenant: u.tenant, id: AppToken.id(client: u.client, ask: u.ask))
                guard var t = m[k] else { continue }
                t.lastUsedAt = max(t.lastUsedAt ?? u.at, u.at)
                m[k] = t
            }
        }
    }

    public func dueForRenewal(before: Date, limit: Int) throws -> [AppTokenUse] {
        rows.withLock { m in
            m.values.filter { AppTokenDecision.renewalDue($0, now: before) }.sorted { $0.renewAt! < $1.renewAt! }.prefix(limit)
                .map { AppTokenUse(tenant: $0.tenant, client: $0.client, ask: $0.ask, at: $0.renewAt!) }
        }
    }

}
