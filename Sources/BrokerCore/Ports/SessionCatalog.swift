/// SessionCatalog lists a tenant's sessions for administrators: metadata only — the sessions
/// it returns carry no token material, which is never even unsealed for a listing.
public protocol SessionCatalog: Sendable {
    /// One page, newest first, at most `query.limit` sessions, and the cursor of the next page
    /// (nil on the last).
    func sessions(tenant: String, matching query: SessionQuery) throws -> (sessions: [Session], next: SessionQuery.Cursor?)
}
