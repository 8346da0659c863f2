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
        // Optional strings, dates and a flag: encoding cannot fail; the try! marks a programming error.
        return String(decoding: try! e.encode(f), as: UTF8.self)
    }

    static func decode(_ s: String) -> SignoutJob.Filter? {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .secondsSince1970
        // nil is the answer, not a lost error: the caller refuses the job, naming the column.
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
        try pool.transact { c in
            if let key = idempotencyKey, let existing = try jobRow(c, "j.tenant_id = \(j.tenant) AND j.idempotency_key = \(key)") {
                return (existing, false)
            }
            let f = j.filter
            let matching: SQL = """
                FROM sessions WHERE tenant_id = \(j.tenant) AND state <> 'revoked'
                  AND (\(f.subject)::text IS NULL OR subject = \(f.subject))
                  AND (\(f.client)::text IS NULL OR client_id = \(f.client))
                  AND (\(f.endUser)::text IS NULL OR end_user = \(f.endUser))
                  AND (\(f.createdBefore)::timestamptz IS NULL OR created_at < \(f.createdBefore))
                  AND (\(f.idleSince)::timestamptz IS NULL OR coalesce(last_used_at, created_at) < \(f.idleSince))
                """
            let total: Int = try c.execute("SELECT count(*) AS n \(matching)").first { try $0["n"] } ?? 0
            let done = j.dryRun || total == 0
            try c.execute("""
                INSERT INTO signout_jobs (id, tenant_id, filter, dry_run, state, total, created_by, idempotency_key, created_at,
                    updated_at, finished_at)
                VALUES (\(j.id), \(j.tenant), \(Self.encode(f))::jsonb, \(j.dryRun), \(done ? "done" : "running"), \(total),
                    \(j.createdBy), \(idempotencyKey), \(j.createdAt), \(j.createdAt), \(done ? j.createdAt : nil))
                """)
            // A dry run, or a job with nothing to do, finishes as it is created.
            if done, let q = WebhookOutbox.enqueue(tenant: j.tenant, [Self.finished(tenant: j.tenant, job: j.id, total: total, revoked: 0,
                                                                                       failed: 0, dryRun: j.dryRun)], now: j.createdAt) {
                try c.execute(q)
            }
            if !j.dryRun {
                try c.execute("""
                    INSERT INTO signout_items (job_id, tenant_id, session_id, client_id, state)
                    SELECT \(j.id), tenant_id, id, client_id, 'pending' \(matching)
                    """)
            }
            var created = j
            created.total = total
            created.state = done ? .done : .running
            created.finishedAt = done ? j.createdAt : nil
            return (created, true)
        }
    }

    public func job(tenant: String, id: String) throws -> SignoutJob? {
        try pool.run { c in try jobRow(c, "j.tenant_id = \(tenant) AND j.id = \(id)") }
    }

    private func jobRow(_ c: PGConnection, _ condition: SQL) throws -> SignoutJob? {
        try c.execute("""
            SELECT j.id, j.tenant_id, j.filter::text AS filter, j.dry_run, j.state, j.total, j.revoked,
                   (SELECT count(DISTINCT o.session_id) FROM signout_items i
                    JOIN revocation_outbox o ON o.tenant_id = i.tenant_id AND o.session_id = i.session_id WHERE i.job_id = j.id)
                     AS idp_pending,
                   j.failed, j.created_by, extract(epoch from j.created_at) AS created_at,
                   extract(epoch from j.finished_at) AS finished_at
            FROM signout_jobs j WHERE \(condition)
            """).first { r in
            let filterText: String = try r["filter"]
            guard let filter = Self.decode(filterText) else {
                throw BrokerError.storedValueUnknown(column: "signout_jobs.filter", value: String(filterText.prefix(200)))
            }
            return try SignoutJob(id: r["id"], tenant: r["tenant_id"], filter: filter, dryRun: r["dry_run"],
                                  state: r.known("state", table: "signout_jobs"), total: r["total"], revoked: r["revoked"],
                                  idpPending: r["idp_pending"], failed: r["failed"], createdBy: r["created_by"],
                                  createdAt: r["created_at"], finishedAt: r["finished_at"])
        }
    }

    public func claimPendingItems(now: Date, lease: TimeInterval, limit: Int) throws -> [SignoutItem] {
        var rng = SystemRandomNumberGenerator()
        let claim = "cl_" + Identifiers.token(bytes: 12, using: &rng)
        return try pool.run { c in
            try c.execute("""
                UPDATE signout_items i SET lease_until = \(now.addingTimeInterval(lease)), lease_id = \(claim)
                FROM (SELECT job_id, session_id FROM signout_items
                      WHERE state = 'pending' AND (lease_until IS NULL OR lease_until <= \(now))
                      ORDER BY job_id, session_id LIMIT \(limit) FOR UPDATE SKIP LOCKED) claim
                WHERE i.job_id = claim.job_id AND i.session_id = claim.session_id
                RETURNING i.job_id, i.tenant_id, i.session_id, i.client_id, i.lease_id
                """, plan: .generic).map { try SignoutItem(job: $0["job_id"], tenant: $0["tenant_id"], session: $0["session_id"], client: $0["client_id"],
                                           lease: $0["lease_id"]) }
        }
    }

    /// The signout.finished event of a job.
    static func finished(tenant: String, job: String, total: Int, revoked: Int, failed: Int, dryRun: Bool) -> WebhookEvent {
        WebhookEvent(type: .signoutFinished, orderingKey: job, data: [
            "tenant": tenant, "job_id": job, "total": String(total), "revoked": String(revoked), "failed": String(failed), "dry_run": String(dryRun)])
    }

    public func record(_ results: [SignoutItem.Result], now: Date) throws {
        guard !results.isEmpty else { return }
        try pool.transact { c in
            try c.execute("""
                UPDATE signout_items i SET state = o.state, lease_until = NULL, lease_id = NULL
                FROM (SELECT i.job_id, i.session_id, o.state
                      FROM unnest(\(results.map(\.item.job)), \(results.map(\.item.session)), \(results.map(\.outcome.rawValue)),
                                  \(results.map(\.item.lease))) AS o(job, session, state, lease)
                      JOIN signout_items i ON i.job_id = o.job AND i.session_id = o.session
                      WHERE i.state = 'pending' AND i.lease_id = o.lease ORDER BY i.job_id, i.session_id FOR UPDATE OF i) o
                WHERE i.job_id = o.job_id AND i.session_id = o.session_id
                """, plan: .generic)
            // The jobs' rows in id order: two replicas recording for the same jobs wait, never deadlock.
            let jobs = Array(Set(results.map { [$0.item.tenant, $0.item.job] })).sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }
            try c.execute("""
                SELECT 1 FROM signout_jobs WHERE tenant_id = ANY(\(jobs.map { $0[0] })) AND id = ANY(\(jobs.map { $0[1] }))
                ORDER BY tenant_id, id FOR NO KEY UPDATE
                """, plan: .generic)
            let finished = try c.execute("""
                UPDATE signout_jobs j SET revoked = n.revoked, failed = n.failed, updated_at = \(now),
                    state = CASE WHEN n.pending = 0 THEN 'done' ELSE 'running' END,
                    finished_at = CASE WHEN n.pending = 0 THEN coalesce(j.finished_at, \(now)) ELSE NULL END
                FROM (SELECT tenant_id, job_id, count(*) FILTER (WHERE state = 'revoked') AS revoked,
                             count(*) FILTER (WHERE state = 'failed') AS failed,
                             count(*) FILTER (WHERE state = 'pending') AS pending
                      FROM signout_items WHERE job_id = ANY(\(jobs.map { $0[1] })) GROUP BY tenant_id, job_id) n
                WHERE j.tenant_id = n.tenant_id AND j.id = n.job_id
                RETURNING j.tenant_id, j.id, j.total, j.revoked, j.failed, j.dry_run,
                          j.state = 'done' AND j.finished_at = \(now) AS just_finished
                """, plan: .generic).map { r -> (tenant: String, event: WebhookEvent)? in
                guard try r["just_finished"] as Bool else { return nil }
                let tenant: String = try r["tenant_id"]
                return try (tenant, Self.finished(tenant: tenant, job: r["id"], total: r["total"], revoked: r["revoked"],
                                                  failed: r["failed"], dryRun: r["dry_run"]))
            }.compactMap { $0 }
            // signout.finished for the tenant's webhooks, in the same transaction.
            for (tenant, done) in Dictionary(grouping: finished, by: \.tenant) {
                if let q = WebhookOutbox.enqueue(tenant: tenant, done.map(\.event), now: now) { try c.execute(q) }
            }
        }
    }
}
