import BrokerCore
import Foundation

/// Revocation: the session row and the outbox `revocation_outbox` change in one
/// transaction, under the session's refresh lock, so a revocation is never half done and never
/// lost, and a refresh that was running is finished before — its tokens are the ones revoked.
extension PostgresSessionStore: RevocationStore {
    public func revoke(tenant: String, id: String, timeout: TimeInterval, now: Date) throws
        -> (before: Session, after: Session, queued: [PendingRevocation]) {
        try pool.transact { c in
            let rows = try lockAndRead(c, tenant: tenant, id: id, timeout: timeout)
            guard let before = try rows.first({ try decode($0, tenant: tenant) }) else { throw BrokerError.notFound("session") }
            return try revokeLocked(c, tenant: tenant, [before], now: now)[0]
        }
    }

    public func revokeMany(tenant: String, ids: [String], now: Date) throws
        -> (revoked: [(before: Session, after: Session, queued: [PendingRevocation])], left: [String]) {
        let ids = Array(Set(ids))
        guard !ids.isEmpty else { return ([], []) }
        return try pool.transact { c in
            // Each session's refresh lock, tried (a refresh in flight keeps its session for the
            // one-by-one path, which waits for it), then its row, in id order.
            let locked = try c.execute("""
                SELECT \(raw: Self.columns) FROM sessions s
                JOIN unnest(\(ids), \(ids.map { LockKey.session(tenant: tenant, id: $0) })) AS k(session, key)
                  ON s.tenant_id = \(tenant) AND s.id = k.session
                WHERE pg_try_advisory_xact_lock(k.key)
                ORDER BY s.id FOR UPDATE OF s SKIP LOCKED
                """, plan: .generic).map { try decode($0, tenant: tenant) }
            let revoked = try revokeLocked(c, tenant: tenant, locked, now: now)
            let done = Set(locked.map(\.id))
            return (revoked, ids.filter { !done.contains($0) })
        }
    }

    /// Inside a transaction, the sessions' rows and refresh locks held: ends those not revoked
    /// yet as Session.ended(.revoked, keepIDToken: false) does, queues their tokens (the
    /// revoking caller delivers them at once) and announces it to every replica — one statement
    /// each for all of them. Returns each session before and after, with what it queued.
    func revokeLocked(_ c: PGConnection, tenant: String, _ locked: [Session], now: Date) throws
        -> [(before: Session, after: Session, queued: [PendingRevocation])] {
        let ending = locked.filter { $0.state != .revoked }
        let entries = try queueRevocations(c, tenant: tenant, of: ending, now: now)
        if !ending.isEmpty {
            let written = try c.execute("""
                UPDATE sessions s SET state = 'revoked', reason = NULL, last_error = NULL, access_token = NULL, access_expires_at = NULL,
                    refresh_token = NULL, id_token = NULL, next_refresh_at = NULL, backoff_until = NULL, version = v.version + 1,
                    revoked_at = \(now), ended_at = coalesce(s.ended_at, \(now))
                FROM unnest(\(ending.map(\.id)), \(ending.map(\.version))) AS v(id, version)
                WHERE s.tenant_id = \(tenant) AND s.id = ANY(\(ending.map(\.id))) AND s.id = v.id AND s.version = v.version
                """, plan: .generic)   // id = ANY(…) as well: the key's index condition, whatever the planner guesses of unnest
            // The rows are locked FOR UPDATE, so this cannot miss; if it ever does, write nothing.
            guard written.affected == ending.count else { throw BrokerError.conflict(code: "conflict", message: "a session changed during its revocation") }
            // Every replica drops them from memory at COMMIT, their schedules cancelled.
            let notices = ending.flatMap { s in
                [PostgresChangeFeed.encode(.scheduled(tenant: tenant, id: s.id, client: s.client, at: nil, version: s.version + 1)),
                 PostgresChangeFeed.encode(.session(tenant: tenant, id: s.id))]
            }
            try c.execute("SELECT pg_notify(\(PostgresChangeFeed.channel), a) FROM unnest(\(notices)) a")
            // session.revoked for the tenant's webhooks, in the same transaction.
            let events = ending.map { WebhookEvent.session(.revoked, $0.ended(.revoked, reason: nil, lastError: nil, keepIDToken: false)) }
            if let q = WebhookOutbox.enqueue(tenant: tenant, events, now: now) { try c.execute(q) }
        }
        let queued = Dictionary(grouping: entries, by: \.session)
        return locked.map { before in
            before.state == .revoked ? (before, before, [])
                : (before, before.ended(.revoked, reason: nil, lastError: nil, keepIDToken: false), queued[before.id] ?? [])
        }
    }

    /// How long an entry whose first delivery the revoking caller makes at once stays with it:
    /// the outbox's deliverers leave it alone meanwhile (no second call, no unpaced call), and
    /// take it only if that caller died or failed to report.
    static let inlineLease: TimeInterval = 30

    /// Inside a transaction: queues the revoked sessions' tokens (Session.revocableTokens), due
    /// after the revoking caller's own first delivery (`inlineLease`).
    func queueRevocations(_ c: PGConnection, tenant: String, of sessions: [Session], now: Date) throws -> [PendingRevocation] {
        try queueRevocations(c, tenant: tenant, sessions.flatMap { s in s.revocableTokens(at: now).map { (s.id, s.client, $0.token, $0.hint) } },
                             now: now, inline: true)
    }

    /// Inside a transaction: queues these tokens, each of its session, sealed, in one statement —
    /// due at once, or, `inline`, after the caller's own first delivery.
    @discardableResult
    func queueRevocations(_ c: PGConnection, tenant: String, _ tokens: [(session: String, client: String, token: String, hint: String)],
                          now: Date, inline: Bool = false) throws -> [PendingRevocation] {
        guard let q = try revocationQueue(tenant: tenant, tokens, now: now, inline: inline) else { return [] }
        try c.execute(q.statement)
        return q.queued
    }

    /// The statement that queues these tokens, and the entries it queues (nil for no tokens).
    func revocationQueue(tenant: String, _ tokens: [(session: String, client: String, token: String, hint: String)],
                         now: Date, inline: Bool = false) throws -> (statement: SQL, queued: [PendingRevocation])? {
        guard !tokens.isEmpty else { return nil }
        var rng = SystemRandomNumberGenerator()
        let queued = tokens.map { t in
            PendingRevocation(id: "rvk_" + Identifiers.token(bytes: 16, using: &rng), tenant: tenant, session: t.session, client: t.client,
                              token: t.token, hint: t.hint, attempts: 0)
        }
        let sealed = try queued.map { "\\x" + PGText.hex(try sealer.seal($0.token, context: "revocations/\(tenant)/\($0.id)/token")) }
        return ("""
            INSERT INTO revocation_outbox (id, tenant_id, session_id, client_id, token, hint, next_attempt_at, created_at)
            SELECT q.id, \(tenant), q.session, q.client, q.token::bytea, q.hint, \(inline ? now.addingTimeInterval(Self.inlineLease) : now), \(now)
            FROM unnest(\(queued.map(\.id)), \(queued.map(\.session)), \(queued.map(\.client)),
                        \(sealed),
                        \(queued.map(\.hint))) AS q(id, session, client, token, hint)
            """, queued)
    }

    public func pendingRevocations(tenant: String, session: String) throws -> Int {
        try pool.run { c in
            try c.execute("SELECT count(*) AS n FROM revocation_outbox WHERE session_id = \(session) AND tenant_id = \(tenant)",
                          plan: .keyed).first { try $0["n"] } ?? 0
        }
    }

    /// The one outbox query not scoped to a tenant: every replica delivers for all of them.
    public func claimDueRevocations(now: Date, lease: TimeInterval, limit: Int) throws -> [PendingRevocation] {
        try pool.run { c in
            let r = try c.execute("""
                UPDATE revocation_outbox o SET next_attempt_at = \(now.addingTimeInterval(lease)), attempts = o.attempts + 1
                WHERE (o.tenant_id, o.id) IN (SELECT tenant_id, id FROM revocation_outbox WHERE next_attempt_at <= \(now)
                                              ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING o.id, o.tenant_id, o.session_id, o.client_id, o.token, o.hint, o.attempts
                """)
            var claimed: [PendingRevocation] = [], unopened: [(tenant: String, id: String)] = []
            for i in 0..<r.count {
                let row = r.row(i)
                let id: String = try row["id"], tenant: String = try row["tenant_id"]
                // A token that does not open is not a lost error: it is given back below, with
                // its last_error saying why, for a replica whose keyring opens it.
                guard let sealed = try row.bytes("token"), let token = try? sealer.open(sealed, context: "revocations/\(tenant)/\(id)/token") else {
                    unopened.append((tenant, id))
                    continue
                }
                claimed.append(try PendingRevocation(id: id, tenant: tenant, session: row["session_id"], client: row["client_id"],
                                                     token: token, hint: row["hint"], attempts: row["attempts"]))
            }
            // Sealed under a key this replica lacks (a keyring being rolled out): give them back
            // for a replica that has it, rather than holding them for the lease.
            if !unopened.isEmpty {
                try c.execute("""
                    UPDATE revocation_outbox SET next_attempt_at = \(now.addingTimeInterval(5)), attempts = attempts - 1,
                        last_error = 'sealed under a key this replica does not hold'
                    WHERE (tenant_id, id) IN (SELECT * FROM unnest(\(unopened.map(\.tenant)), \(unopened.map(\.id))))
                    """, plan: .generic)
            }
            return claimed
        }
    }

    public func revocationsDelivered(tenant: String, ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try pool.run { c in
            try c.execute("DELETE FROM revocation_outbox WHERE id = ANY(\(ids)) AND tenant_id = \(tenant)", plan: .keyed)
        }
    }

    public func revocationFailed(tenant: String, id: String, next: Date, reason: String) throws {
        try pool.run { c in
            try c.execute("""
                UPDATE revocation_outbox SET next_attempt_at = \(next), last_error = \(reason) WHERE id = \(id) AND tenant_id = \(tenant)
                """, plan: .keyed)
        }
    }
}
