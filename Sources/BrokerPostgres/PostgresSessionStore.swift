import BrokerCore
import Foundation

/// PostgresSessionStore keeps sessions in the `sessions` table, token material sealed with the
/// context `sessions/<tenant>/<id>/<column>` so that a value copied to another row or tenant
/// does not open. The refresh lock is `pg_advisory_xact_lock` on LockKey.session, held by the
/// transaction that re-reads and writes the row, so it is released by COMMIT, ROLLBACK, or the
/// connection dying — it cannot outlive its holder the way an expiring Redis lock can.
public final class PostgresSessionStore: SessionStore {
    let pool: PGPool
    let sealer: any Sealer

    public init(pool: PGPool, sealer: any Sealer) {
        self.pool = pool
        self.sealer = sealer
    }

    /// How many columns `columns` selects (`decode` reads them by position).
    static let columnCount = 26
    static let columns = """
        id, client_id, subject, issuer, array_to_string(scopes, ' '), sid, email, extract(epoch from auth_time), \
        access_token, extract(epoch from access_expires_at), access_lifetime, refresh_token, id_token, state, \
        extract(epoch from next_refresh_at), version, failure_count, last_error, extract(epoch from granted_at), \
        extract(epoch from created_at), extract(epoch from last_used_at), extract(epoch from last_refreshed_at), \
        attempt_id, extract(epoch from attempt_started_at), extract(epoch from backoff_until), reason
        """

    public func session(tenant: String, id: String) throws -> Session? {
        try pool.run { c in
            let rows = try c.execute("SELECT \(raw: Self.columns) FROM sessions WHERE tenant_id = \(tenant) AND id = \(id)")
            return try rows.count == 0 ? nil : decode(rows, 0, tenant: tenant)
        }
    }

    public func sessions(tenant: String, ids: [String]) throws -> [Session] {
        try pool.run { c in
            let rows = try c.execute("SELECT \(raw: Self.columns) FROM sessions WHERE tenant_id = \(tenant) AND id = ANY(\(ids))")
            return try (0..<rows.count).map { try decode(rows, $0, tenant: tenant) }
        }
    }

    public func latestSession(tenant: String, client: String, subject: String) throws -> Session? {
        try pool.run { c in
            let rows = try c.execute("""
                SELECT \(raw: Self.columns) FROM sessions
                WHERE tenant_id = \(tenant) AND client_id = \(client) AND subject = \(subject)
                ORDER BY state = 'active' DESC, created_at DESC LIMIT 1
                """)
            return try rows.count == 0 ? nil : decode(rows, 0, tenant: tenant)
        }
    }

    public func insert(_ s: Session) throws {
        try pool.run { c in
            try c.execute("""
                INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, sid, email, auth_time,
                    access_token, access_expires_at, access_lifetime, refresh_token, id_token, state, next_refresh_at,
                    version, failure_count, last_error, granted_at, created_at, last_used_at, last_refreshed_at,
                    attempt_id, attempt_started_at, backoff_until, reason)
                VALUES (\(s.tenant), \(s.id), \(s.client), \(s.subject), \(s.issuer), \(s.scopes), \(s.claims.sid),
                    \(s.claims.email), \(s.claims.authTime), \(seal(s.accessToken, s, "access_token")), \(s.accessExpiresAt),
                    \(s.accessLifetime), \(seal(s.refreshToken, s, "refresh_token")), \(seal(s.idToken, s, "id_token")),
                    \(s.state.rawValue), \(s.nextRefreshAt), \(s.version), \(s.failureCount), \(s.lastError),
                    \(s.grantedAt), \(s.createdAt), \(s.lastUsedAt), \(s.lastRefreshedAt),
                    \(s.attempt?.id), \(s.attempt?.startedAt), \(s.backoffUntil), \(s.reason))
                """)
        }
    }

    public func withRefreshLockQueuing<T>(tenant: String, id: String, timeout: TimeInterval,
                                          _ body: (Session) throws -> (write: Session?, revoke: [String], result: T)) throws -> T {
        try pool.run { c in
            try c.execute("BEGIN")
            do {
                let key = LockKey.session(tenant: tenant, id: id)
                // Try the lock and re-read in one round trip: usually nobody holds it. No row
                // means another holder (or, rarely, no such session: checked only then); a
                // caller that may wait then waits for it.
                var rows = try c.execute("""
                    SELECT \(raw: Self.columns) FROM sessions
                    WHERE tenant_id = \(tenant) AND id = \(id) AND pg_try_advisory_xact_lock(\(key))
                    FOR UPDATE SKIP LOCKED
                    """)
                if rows.count == 0 {
                    let exists = try c.execute("SELECT 1 FROM sessions WHERE tenant_id = \(tenant) AND id = \(id)").count == 1
                    guard exists else { throw BrokerError.notFound("session") }
                    guard timeout > 0 else { throw BrokerError.refreshBusy }
                    rows = try lockAndRead(c, tenant: tenant, id: id, timeout: timeout)
                }
                guard rows.count == 1 else { throw BrokerError.notFound("session") }
                let locked = try decode(rows, 0, tenant: tenant)
                let (write, revoke, result) = try body(locked)
                if let s = write { try update(c, s, expectedVersion: locked.version) }
                for token in revoke {
                    try queueRevocation(c, tenant: tenant, session: id, client: locked.client, token: token, hint: "refresh_token", now: Date())
                }
                try c.execute("COMMIT")
                return result
            } catch {
                _ = try? c.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Inside a transaction: waits at most `timeout` for the session's refresh lock, then reads
    /// the row FOR UPDATE.
    func lockAndRead(_ c: PGConnection, tenant: String, id: String, timeout: TimeInterval) throws -> PGRows {
        try c.execute("SELECT set_config('lock_timeout', \(String(Int(timeout * 1000))), true)")
        try c.execute("SELECT pg_advisory_xact_lock(\(LockKey.session(tenant: tenant, id: id)))")
        return try c.execute("SELECT \(raw: Self.columns) FROM sessions WHERE tenant_id = \(tenant) AND id = \(id) FOR UPDATE")
    }

    public func touch(_ uses: [SessionUse]) throws {
        guard !uses.isEmpty else { return }
        try pool.run { c in
            try c.execute("""
                UPDATE sessions s SET last_used_at = greatest(s.last_used_at, to_timestamp(u.at))
                FROM unnest(\(uses.map(\.tenant)), \(uses.map(\.id)), \(uses.map { $0.at.timeIntervalSince1970 })) AS u(tenant, id, at)
                WHERE s.tenant_id = u.tenant AND s.id = u.id
                """)
        }
    }

    public func dueSessions(before: Date, limit: Int) throws -> [DueSession] {
        try pool.run { c in
            let r = try c.execute("""
                SELECT tenant_id, id, client_id, extract(epoch from next_refresh_at) FROM sessions
                WHERE state = 'active' AND next_refresh_at < \(before)
                ORDER BY next_refresh_at LIMIT \(limit)
                """)
            return (0..<r.count).map { DueSession(tenant: r.string($0, 0)!, id: r.string($0, 1)!, client: r.string($0, 2)!, at: r.date($0, 3)!) }
        }
    }

    public func countGrantedBefore(_ grantedBefore: Date) throws -> Int {
        try pool.run { c in
            try c.execute("SELECT count(*) FROM sessions WHERE state = 'active' AND granted_at < \(grantedBefore)").int(0, 0) ?? 0
        }
    }

    /// Writes every mutable column; the version must be the locked one plus one.
    func update(_ c: PGConnection, _ s: Session, expectedVersion: Int64) throws {
        precondition(s.version == expectedVersion + 1, "a session write must bump the version by one")
        // The schedule is announced in the same statement: NOTIFY is delivered at COMMIT, so
        // other replicas hear of exactly the writes that happened.
        let announcement = PostgresChangeFeed.encode(.scheduled(tenant: s.tenant, id: s.id, client: s.client,
                                                                 at: s.state == .active ? s.nextRefreshAt : nil, version: s.version))
        let updated = try c.execute("""
            WITH updated AS (
            UPDATE sessions SET scopes = \(s.scopes), sid = \(s.claims.sid), email = \(s.claims.email),
                auth_time = \(s.claims.authTime), access_token = \(seal(s.accessToken, s, "access_token")),
                access_expires_at = \(s.accessExpiresAt), access_lifetime = \(s.accessLifetime),
                refresh_token = \(seal(s.refreshToken, s, "refresh_token")), id_token = \(seal(s.idToken, s, "id_token")),
                state = \(s.state.rawValue), next_refresh_at = \(s.nextRefreshAt), version = \(s.version),
                failure_count = \(s.failureCount), last_error = \(s.lastError), last_refreshed_at = \(s.lastRefreshedAt),
                attempt_id = \(s.attempt?.id), attempt_started_at = \(s.attempt?.startedAt), backoff_until = \(s.backoffUntil),
                reason = \(s.reason)
            WHERE tenant_id = \(s.tenant) AND id = \(s.id) AND version = \(expectedVersion)
            RETURNING 1)
            SELECT pg_notify(\(PostgresChangeFeed.channel), \(announcement)) FROM updated
            """)
        // The row is locked FOR UPDATE, so this cannot miss; if it ever does, write nothing.
        guard updated.count == 1 else { throw BrokerError.conflict(code: "conflict", message: "the session changed during its refresh") }
    }

    func seal(_ value: String?, _ s: Session, _ column: String) -> [UInt8]? {
        value.map { sealer.seal($0, context: "sessions/\(s.tenant)/\(s.id)/\(column)") }
    }

    private func open(_ rows: PGRows, _ r: Int, _ col: Int, tenant: String, id: String, _ column: String) throws -> String? {
        guard let sealed = rows.bytes(r, col) else { return nil }
        do { return try sealer.open(sealed, context: "sessions/\(tenant)/\(id)/\(column)") } catch {
            throw BrokerError.internalError
        }
    }

    func decode(_ rows: PGRows, _ r: Int, tenant: String) throws -> Session {
        let id = rows.string(r, 0)!
        return Session(
            tenant: tenant, id: id, client: rows.string(r, 1)!, subject: rows.string(r, 2)!, issuer: rows.string(r, 3)!,
            scopes: rows.words(r, 4),
            claims: IdentityClaims(sid: rows.string(r, 5), email: rows.string(r, 6), authTime: rows.date(r, 7)),
            accessToken: try open(rows, r, 8, tenant: tenant, id: id, "access_token"), accessExpiresAt: rows.date(r, 9),
            accessLifetime: rows.double(r, 10), refreshToken: try open(rows, r, 11, tenant: tenant, id: id, "refresh_token"),
            idToken: try open(rows, r, 12, tenant: tenant, id: id, "id_token"),
            state: SessionState(rawValue: rows.string(r, 13)!) ?? .revoked, nextRefreshAt: rows.date(r, 14),
            version: rows.int64(r, 15)!, failureCount: rows.int(r, 16)!, lastError: rows.string(r, 17),
            grantedAt: rows.date(r, 18)!, createdAt: rows.date(r, 19)!, lastUsedAt: rows.date(r, 20),
            lastRefreshedAt: rows.date(r, 21),
            attempt: rows.string(r, 22).map { RefreshAttempt(id: $0, startedAt: rows.date(r, 23) ?? Date(timeIntervalSince1970: 0)) },
            backoffUntil: rows.date(r, 24), reason: rows.string(r, 25))
    }

}
