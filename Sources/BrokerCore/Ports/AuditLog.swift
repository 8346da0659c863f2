/// AuditLog reads the stored audit trail of a tenant.
public protocol AuditLog: Sendable {
    /// One page, newest first, and the cursor of the next (nil on the last).
    func events(tenant: String, matching query: AuditQuery) throws -> (records: [AuditRecord], next: Int64?)
}
