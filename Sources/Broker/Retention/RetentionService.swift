import BrokerCore
import Foundation

/// RetentionService deletes what is older than its configured age: tenant by tenant, a small
/// batch per statement, so that a pass never holds many rows locked and any number of replicas
/// may run it at once (each skips the rows another holds). A kind without an age is kept.
public final class RetentionService: Sendable {
    let store: any RetentionStore
    let registry: any RegistryStore
    let clock: any Clock
    /// How old each kind may get, in seconds; a kind not here is never deleted.
    public let ages: [RetentionKind: TimeInterval]
    let batch: Int
    /// Rows deleted, by kind (`tokenbroker_retention_deleted_total`).
    public let deleted = LabeledCounter<String>()

    public init(store: any RetentionStore, registry: any RegistryStore, clock: any Clock, ages: [RetentionKind: TimeInterval], batch: Int = 500) {
        self.store = store
        self.registry = registry
        self.clock = clock
        self.ages = ages
        self.batch = batch
    }

    /// One pass over every kind with an age and every tenant (audit rows of no tenant too);
    /// answers how many rows of each kind it deleted.
    @discardableResult
    public func run() throws -> [RetentionKind: Int] {
        let now = clock.now()
        let tenants = try registry.tenants().map(\.id)
        var total: [RetentionKind: Int] = [:]
        for kind in RetentionKind.allCases {
            guard let age = ages[kind] else { continue }
            // A finished job deletes its items with it: fewer jobs a statement.
            let limit = kind == .finishedSignouts ? max(1, batch / 50) : batch
            let owners: [String?] = kind == .auditEvents ? [nil] + tenants : tenants
            var n = 0
            for tenant in owners {
                while true {
                    let deleted = try store.purge(kind, tenant: tenant, before: now.addingTimeInterval(-age), limit: limit)
                    n += deleted
                    if deleted < limit { break }
                }
            }
            total[kind] = n
            if n > 0 { deleted.add(kind.rawValue, n) }
        }
        return total
    }
}
