import BrokerCore
import Foundation

/// PostgresBacklogStore reads the backlog in one statement: the outbox is small (a row lives
/// until the IdP confirms, usually within a second), pending sign-out items are read through
/// their partial index. The client certificates' expiry is a second statement over the (few)
/// clients that have one.
public final class PostgresBacklogStore: BacklogStore {
    let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    public func backlog() throws -> Backlog {
        try pool.run { c in
            var b = try c.execute("""
                SELECT (SELECT count(*) FROM revocation_outbox) AS outbox_depth,
                       (SELECT extract(epoch FROM min(created_at)) FROM revocation_outbox) AS outbox_oldest,
                       (SELECT count(*) FROM signout_jobs WHERE state = 'running') AS signout_jobs_running,
                       (SELECT count(*) FROM signout_items WHERE state = 'pending') AS signout_items_pending
                """).first { r in
                try Backlog(outboxDepth: r["outbox_depth"], outboxOldest: r["outbox_oldest"], signoutJobsRunning: r["signout_jobs_running"],
                            signoutItemsPending: r["signout_items_pending"])
            } ?? Backlog(outboxDepth: 0, outboxOldest: nil, signoutJobsRunning: 0, signoutItemsPending: 0)
            b.clientCertificates = try c.execute("""
                SELECT tenant_id, id, extract(epoch FROM tls_client_certificate_not_after) AS not_after FROM clients
                WHERE tls_client_certificate_not_after IS NOT NULL ORDER BY tenant_id, id
                """).map { r in try ClientCertificateExpiry(tenant: r["tenant_id"], client: r["id"], notAfter: r["not_after"]) }
            return b
        }
    }
}
