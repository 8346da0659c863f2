import BrokerCore
import Foundation

/// PostgresBacklogStore reads the backlog in one statement: the outbox is small (a row lives
/// until the IdP confirms, usually within a second), pending sign-out items are read through
/// their partial index.
public final class PostgresBacklogStore: BacklogStore {
    let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    public func backlog() throws -> Backlog {
        try pool.run { c in
            try c.execute("""
                SELECT (SELECT count(*) FROM revocation_outbox) AS outbox_depth,
                       (SELECT extract(epoch FROM min(created_at)) FROM revocation_outbox) AS outbox_oldest,
                       (SELECT count(*) FROM signout_jobs WHERE state = 'running') AS signout_jobs_running,
                       (SELECT count(*) FROM signout_items WHERE state = 'pending') AS signout_items_pending
                """).first { r in
                try Backlog(outboxDepth: r["outbox_depth"], outboxOldest: r["outbox_oldest"], signoutJobsRunning: r["signout_jobs_running"],
                            signoutItemsPending: r["signout_items_pending"])
            } ?? Backlog(outboxDepth: 0, outboxOldest: nil, signoutJobsRunning: 0, signoutItemsPending: 0)
        }
    }
}
