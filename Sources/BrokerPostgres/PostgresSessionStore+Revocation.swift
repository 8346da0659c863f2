import BrokerCore
import Foundation

/// Revocation (spec §4.3): the session row and the outbox `revocation_outbox` change in one
/// transaction, under the session's refresh lock, so a revocation is never half done and never
/// lost, and a refresh that was running is finished before — its tokens are the ones revoked.
extension PostgresSessionStore: RevocationStore {
    public func revoke(tenant: String, id: String, timeout: TimeInterval, now: Date) throws
        -> (before: Session, after: Session, queued: [PendingRevocation]) {
        try pool.transact { c in
            let rows = try lockAndRead(c, tenant: tenant, id: id, timeout: timeout)
            guard let before = try rows.first({ try decode(&$0, tenant: tenant) }) else { throw BrokerError.notFound("session") }
            guard before.state != .revoked else { return (before, before, []) }
            var tokens: [(String, String)] = []
            if let rt = before.refreshToken { tokens.append((rt, "refresh_token")) }
            if let at = before.accessToken, (before.accessExpiresAt ?? now) > now { tokens.append((at, "access_token")) }
            let queued = try tokens.map { token, hint in
                try queueRevocation(c, tenant: tenant, session: id, client: before.client, token: token, hint: hint, now: now)
            }
            let after = before.ended(.revoked, reason: nil, lastError: nil, keepIDToken: false)
            try update(c, after, expectedVersion: before.version)
            try c.execute("UPDATE sessions SET revoked_at = \(now) WHERE tenant_id = \(tenant) AND id = \(id)", plan: .generic)
            // Every replica drops the session from memory at COMMIT (the schedule's
            // cancellation went out with the update).
            try c.execute("SELECT pg_notify(\(PostgresChangeFeed.channel), \(PostgresChangeFeed.encode(.session(tenant: tenant, id: id))))")
            return (before, after, queued)
        }
    }

    /// Inside a transaction: queues `token` for RFC 7009 revocation at the session's IdP, sealed.
    @discardableResult
    func queueRevocation(_ c: PGConnection, tenant: String, session: String, client: String, token: String, hint: String,
                         now: Date) throws -> PendingRevocation {
        var rng = SystemRandomNumberGenerator()
        let p = PendingRevocation(id: "rvk_" + Identifiers.token(bytes: 16, using: &rng), tenant: tenant, session: session,
                                  client: client, token: token, hint: hint, attempts: 0)
        try c.execute("""
            INSERT INTO revocation_outbox (id, tenant_id, session_id, client_id, token, hint, next_attempt_at, created_at)
            VALUES (\(p.id), \(tenant), \(session), \(client), \(sealer.seal(token, context: "revocations/\(tenant)/\(p.id)/token")),
                \(hint), \(now), \(now))
            """)
        return p
    }

    public func pendingRevocations(tenant: String, session: String) throws -> Int {
        try pool.run { c in
            try c.execute("SELECT count(*) FROM revocation_outbox WHERE tenant_id = \(tenant) AND session_id = \(session)", plan: .generic)
                .first { try $0.next() } ?? 0
        }
    }

    /// The one outbox query not scoped to a tenant: every replica delivers for all of them.
    public func claimDueRevocations(now: Date, lease: TimeInterval, limit: Int) throws -> [PendingRevocation] {
        try pool.run { c in
            let r = try c.execute("""
                UPDATE revocation_outbox o SET next_attempt_at = \(now.addingTimeInterval(lease)), attempts = o.attempts + 1
                WHERE o.id IN (SELECT id FROM revocation_outbox WHERE next_attempt_at <= \(now)
                               ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING o.id, o.tenant_id, o.session_id, o.client_id, o.token, o.hint, o.attempts
                """)
            var claimed: [PendingRevocation] = [], unopened: [String] = []
            for i in 0..<r.count {
                var row = r.row(i)
                let id: String = try row.next(), tenant: String = try row.next()
                let session: String = try row.next(), client: String = try row.next()
                guard let sealed = try row.bytes(), let token = try? sealer.open(sealed, context: "revocations/\(tenant)/\(id)/token") else {
                    unopened.append(id)
                    continue
                }
                claimed.append(PendingRevocation(id: id, tenant: tenant, session: session, client: client, token: token,
                                                 hint: try row.next(), attempts: try row.next()))
            }
            // Sealed under a key this replica lacks (a keyring being rolled out): give them back
            // for a replica that has it, rather than holding them for the lease.
            if !unopened.isEmpty {
                try c.execute("""
                    UPDATE revocation_outbox SET next_attempt_at = \(now.addingTimeInterval(5)), attempts = attempts - 1,
                        last_error = 'sealed under a key this replica does not hold'
                    WHERE id = ANY(\(unopened))
                    """, plan: .generic)
            }
            return claimed
        }
    }

    public func revocationDelivered(tenant: String, id: String) throws {
        try pool.run { c in try c.execute("DELETE FROM revocation_outbox WHERE tenant_id = \(tenant) AND id = \(id)", plan: .generic) }
    }

    public func revocationFailed(tenant: String, id: String, next: Date, reason: String) throws {
        try pool.run { c in
            try c.execute("""
                UPDATE revocation_outbox SET next_attempt_at = \(next), last_error = \(reason) WHERE tenant_id = \(tenant) AND id = \(id)
                """, plan: .generic)
        }
    }
}
