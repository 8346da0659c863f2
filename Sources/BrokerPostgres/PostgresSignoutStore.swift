import BrokerCore
import Foundation

/// PostgresSignoutStore keeps sign-out jobs in `signout_jobs` and their snapshotted sessions in
/// `signout_items`; a job's counts are recomputed from its items after every batch, so they are
/// exact whatever crashed in between, and the sessions still awaiting the IdP's confirmation
/// are counted from the revocation outbox when the job is read.
public final class PostgresSignoutStore: SignoutStore {
    let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    static func encode(_ f: SignoutJob.Filter) -> String {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .secondsSince1970
        e.outputFormatting = .sortedKeys
        return String(decoding: try! e.encode(f), as: UTF8.self)
    }

    static func decode(_ s: String) -> SignoutJob.Filter? {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .secondsSince1970
        return try? d.decode(SignoutJob.Filter.self, from: Data(s.utf8))
    }

    public func createJob(_ j: SignoutJob, idempotencyKey: String?) throws -> (SignoutJob, created: Bool) {
        let r = try insertJob(j, idempotencyKey: idempotencyKey)
        guard r.created || (r.0.filter == j.filter && r.0.dryRun == j.dryRun) else {
            throw BrokerError.conflict(code: "idempotency_key_reused", message: "this Idempotency-Key was used for another sign-out")
        }
        return r
    }

    /// The new job, or the one the idempotency key already names.
    private func insertJob(_ j: SignoutJob, idempotencyKey: String?) throws -> (SignoutJob, created: Bool) {
        try pool.run { c in
            try c.execute("BEGIN")
            do {
                if let key = idempotencyKey, let existing = try jobRow(c, "j.tenant_id = \(j.tenant) AND j.idempotency_key = \(key)") {
                    try c.execute("COMMIT")
                    return (existing, false)
                }
                let f = j.filter
                let matching: SQL = """
                    FROM sessions WHERE tenant_id = \(j.tenant) AND state <> 'revoked'
                      AND (\(f.subject)::text IS NULL OR subject = \(f.subject))
                      AND (\(f.client)::text IS NULL OR client_id = \(f.client))
                      AND (\(f.createdBefore)::timestamptz IS NULL OR created_at < \(f.createdBefore))
                      AND (\(f.idleSince)::timestamptz IS NULL OR coalesce(last_used_at, created_at) < \(f.idleSince))
                    """
                let total = try c.execute("SELECT count(*) \(matching)").int(0, 0) ?? 0
                let done = j.dryRun || total == 0
                try c.execute("""
                    INSERT INTO signout_jobs (id, tenant_id, filter, dry_run, state, total, created_by, idempotency_key, created_at,
                        updated_at, finished_at)
                    VALUES (\(j.id), \(j.tenant), \(Self.encode(f))::jsonb, \(j.dryRun), \(done ? "done" : "running"), \(total),
                        \(j.createdBy), \(idempotencyKey), \(j.createdAt), \(j.createdAt), \(done ? j.createdAt : nil))
                    """)
                if !j.dryRun {
                    try c.execute("INSERT INTO signout_items (job_id, tenant_id, session_id, client_id, state) SELECT \(j.id), tenant_id, id, client_id, 'pending' \(matching)")
                }
                try c.execute("COMMIT")
                var created = j
                created.total = total
                created.state = done ? .done : .running
                created.finishedAt = done ? j.createdAt : nil
                return (created, true)
            } catch {
                _ = try? c.execute("ROLLBACK")
                throw error
            }
        }
    }

    public func job(id: String) throws -> SignoutJob? {
        try pool.run { c in try jobRow(c, "j.id = \(id)") }
    }

    private func jobRow(_ c: PGConnection, _ condition: SQL) throws -> SignoutJob? {
        let r = try c.execute("""
            SELECT j.id, j.tenant_id, j.filter::text, j.dry_run, j.state, j.total, j.revoked,
                   (SELECT count(DISTINCT o.session_id) FROM signout_items i
                    JOIN revocation_outbox o ON o.tenant_id = i.tenant_id AND o.session_id = i.session_id WHERE i.job_id = j.id),
                   j.failed, j.created_by, extract(epoch from j.created_at), extract(epoch from j.finished_at)
            FROM signout_jobs j WHERE \(condition)
            """)
        guard r.count == 1, let filter = Self.decode(r.string(0, 2)!) else { return nil }
        return SignoutJob(id: r.string(0, 0)!, tenant: r.string(0, 1)!, filter: filter, dryRun: r.bool(0, 3)!,
                          state: SignoutJob.State(rawValue: r.string(0, 4)!) ?? .running, total: r.int(0, 5)!, revoked: r.int(0, 6)!,
                          idpPending: r.int(0, 7)!, failed: r.int(0, 8)!, createdBy: r.string(0, 9)!, createdAt: r.date(0, 10)!,
                          finishedAt: r.date(0, 11))
    }

    public func processPendingItems(limit: Int, _ body: ([SignoutItem]) -> [SignoutItem.Outcome]) throws -> Int {
        try pool.run { c in
            try c.execute("BEGIN")
            do {
                let r = try c.execute("""
                    SELECT job_id, tenant_id, session_id, client_id FROM signout_items
                    WHERE state = 'pending' ORDER BY job_id LIMIT \(limit) FOR UPDATE SKIP LOCKED
                    """)
                let items = (0..<r.count).map { SignoutItem(job: r.string($0, 0)!, tenant: r.string($0, 1)!, session: r.string($0, 2)!, client: r.string($0, 3)!) }
                guard !items.isEmpty else {
                    try c.execute("COMMIT")
                    return 0
                }
                let outcomes = body(items)
                try c.execute("""
                    UPDATE signout_items i SET state = o.state
                    FROM unnest(\(items.map(\.job)), \(items.map(\.session)), \(outcomes.map(\.rawValue))) AS o(job, session, state)
                    WHERE i.job_id = o.job AND i.session_id = o.session
                    """)
                let jobs = Array(Set(items.map(\.job)))
                try c.execute("""
                    UPDATE signout_jobs j SET revoked = n.revoked, failed = n.failed, updated_at = now(),
                        state = CASE WHEN n.pending = 0 THEN 'done' ELSE 'running' END,
                        finished_at = CASE WHEN n.pending = 0 THEN now() ELSE NULL END
                    FROM (SELECT job_id, count(*) FILTER (WHERE state = 'revoked') AS revoked,
                                 count(*) FILTER (WHERE state = 'failed') AS failed,
                                 count(*) FILTER (WHERE state = 'pending') AS pending
                          FROM signout_items WHERE job_id = ANY(\(jobs)) GROUP BY job_id) n
                    WHERE j.id = n.job_id
                    """)
                try c.execute("COMMIT")
                return items.count
            } catch {
                _ = try? c.execute("ROLLBACK")
                throw error
            }
        }
    }
}
