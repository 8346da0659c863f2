import BrokerCore
import Foundation

/// RetentionStoreContract: a purge deletes exactly its tenant's rows of its kind older than the
/// cut, at most `limit` at a time, and nothing still open (an active session, a running job, an
/// audit tally still counting after the cut) or whose revocation the IdP has not confirmed.
/// The fixture writes rows at chosen instants, which no port does (time comes from the store's
/// writes), so this contract runs against PostgreSQL only.
public enum RetentionStoreContract {
    /// A row to write, relative to the cut.
    public enum Row: Sendable {
        /// Ended (audit: last counted) a minute before the cut.
        case old
        /// Ended a minute after the cut.
        case recent
        /// Began a day before the cut and is still going: an active session, a running job, an
        /// audit tally whose last event is after the cut.
        case stillOpen
        /// A session that ended a minute before the cut whose revocation waits in the outbox.
        case revocationPending
    }

    public struct Fixture {
        /// Writes a row of `kind` for the tenant (nil: audit events of no tenant), `row` relative
        /// to `cut`; answers its id.
        public var seed: (RetentionKind, String?, Row, Date) throws -> String
        /// True while the row is stored.
        public var exists: (RetentionKind, String?, String) throws -> Bool

        public init(seed: @escaping (RetentionKind, String?, Row, Date) throws -> String,
                    exists: @escaping (RetentionKind, String?, String) throws -> Bool) {
            self.seed = seed
            self.exists = exists
        }
    }

    public static func run(_ store: any RetentionStore, fixture f: Fixture, tenants: (String, String)) throws {
        // Long before anything else a shared database holds: the audit events of no tenant are
        // everyone's, and only this contract's may be older.
        let cut = Date(timeIntervalSince1970: 1_000_000_000)
        for kind in RetentionKind.allCases {
            let owners: [String?] = kind == .auditEvents ? [tenants.0, tenants.1, nil] : [tenants.0, tenants.1]
            var old: [String?: [String]] = [:], kept: [String?: [String]] = [:]
            for t in owners {
                old[t] = try (0..<3).map { _ in try f.seed(kind, t, .old, cut) }
                kept[t] = [try f.seed(kind, t, .recent, cut), try f.seed(kind, t, .stillOpen, cut)]
                if kind == .endedSessions { kept[t]!.append(try f.seed(kind, t, .revocationPending, cut)) }
            }
            func stored(_ t: String?, _ ids: [String]) throws -> Int { try ids.filter { try f.exists(kind, t, $0) }.count }
            // At most `limit` a call, and only the first tenant's.
            try Contract.expect(try store.purge(kind, tenant: tenants.0, before: cut, limit: 2) == 2, "\(kind): a purge did not take its limit")
            try Contract.expect(try store.purge(kind, tenant: tenants.0, before: cut, limit: 2) == 1, "\(kind): the second batch is not the rest")
            try Contract.expect(try store.purge(kind, tenant: tenants.0, before: cut, limit: 2) == 0, "\(kind): a purge deleted what it must keep")
            try Contract.expect(try stored(tenants.0, old[tenants.0]!) == 0, "\(kind): an old row of the tenant is still stored")
            try Contract.expect(try stored(tenants.0, kept[tenants.0]!) == kept[tenants.0]!.count, "\(kind): a row within its age, or still open, was deleted")
            for t in owners.dropFirst() {
                try Contract.expect(try stored(t, old[t]!) == 3, "\(kind): a purge crossed tenants")
                try Contract.expect(try store.purge(kind, tenant: t, before: cut, limit: 100) == 3, "\(kind): the other tenant's old rows were not purged")
                try Contract.expect(try stored(t, kept[t]!) == kept[t]!.count, "\(kind): a row within its age, or still open, was deleted")
            }
        }
    }
}
