import Foundation

/// RetentionStore deletes rows past their age, a small batch at a time, within one tenant, so
/// that purging never holds many locks or one long transaction, and any replica may do it.
public protocol RetentionStore: Sendable {
    /// Deletes at most `limit` of the tenant's `kind` rows older than `before` (for audit rows,
    /// a nil tenant means the events no tenant owns); answers how many it deleted.
    func purge(_ kind: RetentionKind, tenant: String?, before: Date, limit: Int) throws -> Int
}
