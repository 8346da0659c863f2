import BrokerCore
import Foundation

/// The admin listing: keyset pagination on (created_at, id), newest first, token columns never
/// selected (so never unsealed). Planned with sorting made prohibitive: the plan walks an index
/// in the page's order and stops at the page's end, whatever the statistics say about the
/// tenant (otherwise a tenant the statistics think tiny is gathered whole and sorted).
extension PostgresSessionStore: SessionCatalog {
    static let metadataColumns = columns
        .replacingOccurrences(of: " access_token,", with: " NULL::bytea AS access_token,")
        .replacingOccurrences(of: " refresh_token,", with: " NULL::bytea AS refresh_token,")
        .replacingOccurrences(of: " id_token,", with: " NULL::bytea AS id_token,")

    public func sessions(tenant: String, matching q: SessionQuery) throws -> (sessions: [Session], next: SessionQuery.Cursor?) {
        try pool.run { c in
            let r = try c.execute("""
                SELECT \(raw: Self.metadataColumns), (extract(epoch from created_at) * 1000000)::bigint AS created_micros
                FROM sessions
                WHERE tenant_id = \(tenant)
                  AND (\(q.subject)::text IS NULL OR subject = \(q.subject))
                  AND (\(q.client)::text IS NULL OR client_id = \(q.client))
                  AND (\(q.endUser)::text IS NULL OR end_user = \(q.endUser))
                  AND (\(q.sid)::text IS NULL OR sid = \(q.sid))
                  AND (\(q.state?.rawValue)::text IS NULL OR state = \(q.state?.rawValue))
                  AND (\(q.createdBefore)::timestamptz IS NULL OR created_at < \(q.createdBefore))
                  AND (\(q.createdAfter)::timestamptz IS NULL OR created_at >= \(q.createdAfter))
                  AND (\(q.idleSince)::timestamptz IS NULL OR coalesce(last_used_at, created_at) < \(q.idleSince))
                  AND (\(q.after?.id)::text IS NULL OR (created_at, id) <
                       ('epoch'::timestamptz + \(q.after?.createdMicros ?? 0)::bigint * interval '1 microsecond', \(q.after?.id)))
                ORDER BY sessions.created_at DESC, id DESC
                LIMIT \(q.limit + 1)
                """, plan: .indexOrder)
            let rows = try r.map { row in (try decode(row, tenant: tenant), try row["created_micros"] as Int64) }
            let page = rows.prefix(q.limit)
            guard rows.count > q.limit, let last = page.last else { return (page.map(\.0), nil) }
            return (page.map(\.0), SessionQuery.Cursor(createdMicros: last.1, id: last.0.id))
        }
    }
}
