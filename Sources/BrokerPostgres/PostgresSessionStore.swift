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

    /// The columns `decode` reads, by these names: the one SELECT list of a session.
    static let columns = """
        id, client_id, subject, issuer, array_to_string(scopes, ' ') AS scopes, sid, email, \
        extract(epoch from auth_time) AS auth_time, access_token, extract(epoch from access_expires_at) AS access_expires_at, \
        access_lifetime, refresh_token, id_token, state, extract(epoch from next_refresh_at) AS next_refresh_at, version, \
        failure_count, last_error, extract(epoch from granted_at) AS granted_at, extract(epoch from created_at) AS created_at, \
        extract(epoch from last_used_at) AS last_used_at, extract(epoch from last_refreshed_at) AS last_refreshed_at, \
        attempt_id, extract(epoch from attempt_started_at) AS attempt_started_at, \
        extract(epoch from backoff_until) AS backoff_until, reason, extract(epoch from grant_expires_at) AS grant_expires_at, \
        access_token_type, dpop_key, metadata, end_user, access_token_x5t
        """

    public func session(tenant: String, id: String) throws -> Session? {
        try pool.run { c in
            try c.execute("SELECT \(raw: Self.columns) FROM sessions WHERE tenant_id = \(tenant) AND id = \(id)", plan: .keyLookup)
                .first { try decode($0, tenant: tenant) }
        }
    }

    public func sessions(tenant: String, ids: [String]) throws -> [Session] {
        try pool.run { c in
            try c.execute("SELECT \(raw: Self.columns) FROM sessions WHERE tenant_id = \(tenant) AND id = ANY(\(ids))", plan: .generic)
                .map { try decode($0, tenant: tenant) }
        }
    }

    public func latestSession(tenant: String, client: String, subject: String) throws -> Session? {
        try latest(tenant: tenant, "client_id = \(client) AND subject = \(subject)")
    }

    /// Through sessions_by_end_user (the equalities, then the few rows of that user at that client).
    public func latestSession(tenant: String, client: String, endUser: String) throws -> Session? {
        try latest(tenant: tenant, "end_user = \(endUser) AND client_id = \(client)")
    }

    /// The one choice of both lookups: the newest active session among those `matching`, else the newest.
    private func latest(tenant: String, _ matching: SQL) throws -> Session? {
        try pool.run { c in
            try c.execute("""
                SELECT \(raw: Self.columns) FROM sessions
                WHERE tenant_id = \(tenant) AND \(matching)
                ORDER BY state = 'active' DESC, sessions.created_at DESC LIMIT 1
                """, plan: .generic).first { try decode($0, tenant: tenant) }
        }
    }

    public func insert(_ s: Session) throws {
        try pool.run { c in
            try c.execute("""
                INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, sid, email, auth_time,
                    access_token, access_expires_at, access_lifetime, refresh_token, id_token, state, next_refresh_at,
                    version, failure_count, last_error, granted_at, created_at, last_used_at, last_refreshed_at,
                    attempt_id, attempt_started_at, backoff_until, reason, grant_expires_at, access_token_type, dpop_key, metadata, end_user,
                    access_token_x5t)
                VALUES (\(s.tenant), \(s.id), \(s.client), \(s.subject), \(s.issuer), \(s.scopes), \(s.claims.sid),
                    \(s.claims.email), \(s.claims.authTime), \(seal(s.accessToken, s, "access_token")), \(s.accessExpiresAt),
                    \(s.accessLifetime), \(seal(s.refreshToken, s, "refresh_token")), \(seal(s.idToken, s, "id_token")),
                    \(s.state.rawValue), \(s.nextRefreshAt), \(s.version), \(s.failureCount), \(s.lastError),
                    \(s.grantedAt), \(s.createdAt), \(s.lastUsedAt), \(s.lastRefreshedAt),
                    \(s.attempt?.id), \(s.attempt?.startedAt), \(s.backoffUntil), \(s.reason), \(s.grantExpiresAt),
                    \(s.accessTokenType.rawValue), \(seal(s.dpopKey?.encoded, s, "dpop_key")), \(s.metadata), \(s.endUser),
                    \(s.certificateBinding))
                """)
        }
    }

    public func withRefreshLockQueuing<T>(tenant: String, id: String, timeout: TimeInterval, reapplying: Bool,
                                          _ body: (Session) throws -> (write: Session?, revoke: [String], result: T)) throws -> T {
        try pool.transact { c in
            let key = LockKey.session(tenant: tenant, id: id)
            // Try the lock and re-read in one round trip: usually nobody holds it. No row
            // means another holder (or, rarely, no such session: checked only then); a
            // caller that may wait then waits for it.
            var rows = try c.execute("""
                SELECT \(raw: Self.columns) FROM sessions
                WHERE tenant_id = \(tenant) AND id = \(id) AND pg_try_advisory_xact_lock(\(key))
                FOR UPDATE SKIP LOCKED
                """, plan: .keyLookup)
            if rows.count == 0 {
                let exists = try c.execute("SELECT 1 FROM sessions WHERE tenant_id = \(tenant) AND id = \(id)").count == 1
                guard exists else { throw BrokerError.notFound("session") }
                guard timeout > 0 else { throw BrokerError.refreshBusy }
                rows = try lockAndRead(c, tenant: tenant, id: id, timeout: timeout)
            }
            guard let locked = try rows.first({ try decode($0, tenant: tenant) }) else { throw BrokerError.notFound("session") }
            let (write, revoke, result) = try body(locked)
            // The write and the revocations travel with COMMIT: one round trip.
            let now = Date()
            var last = try write.map { [try update($0, over: locked, now: now, reapplying: reapplying)] } ?? []
            if let q = try revocationQueue(tenant: tenant, revoke.map { (id, locked.client, $0, "refresh_token") }, now: now) {
                last.append((q.statement, .custom))
            }
            // A state change is an event for the tenant's webhooks, written with it.
            if let w = write, let type = WebhookEventType.of(from: locked.state, to: w.state),
               let q = WebhookOutbox.enqueue(tenant: tenant, [.session(type, w)], now: now) {
                last.append((q, .custom))
            }
            let written = try c.commit(with: last)
            // The row is locked FOR UPDATE, so the write cannot miss; if it ever did, the session
            // is as it was and the caller is told (the revocations stand: those tokens are not kept).
            guard write == nil || written[0].count == 1 else {
                throw BrokerError.conflict(code: "conflict", message: "the session changed during its refresh")
            }
            return result
        }
    }

    /// One statement, committed on its own: the version-checked UPDATE that a write under the
    /// lock makes (with its announcement), over the row as the caller saw it. A row locked FOR
    /// UPDATE by a holder of the refresh lock makes the UPDATE wait, then see that holder's
    /// version. A state change is left to the lock: it brings a webhook event in the same
    /// transaction.
    public func writeIfUnchanged(_ write: Session, over seen: Session) throws -> Bool {
        guard write.state == seen.state else { return false }
        let u = try update(write, over: seen, now: Date())
        return try pool.run { c in try c.execute(u.sql, plan: u.plan).count == 1 }
    }

    /// Inside a transaction: waits at most `timeout` for the session's refresh lock, then reads
    /// the row FOR UPDATE.
    func lockAndRead(_ c: PGConnection, tenant: String, id: String, timeout: TimeInterval) throws -> PGRows {
        try c.execute("SELECT pg_advisory_xact_lock(\(LockKey.session(tenant: tenant, id: id)))",
                      plan: PGConnection.Plan.keyLookup.with("lock_timeout", String(max(1, Int((timeout * 1000).rounded(.up))))))
        return try c.execute("SELECT \(raw: Self.columns) FROM sessions WHERE tenant_id = \(tenant) AND id = \(id) FOR UPDATE",
                             plan: .keyLookup)
    }

    /// The marks of one flush, in one statement. Every replica locks the rows it marks in the
    /// same order (the sorted `locked` CTE locks each row as it yields it, before the UPDATE
    /// touches it), so two replicas marking the same sessions wait for each other instead of
    /// deadlocking.
    public func touch(_ uses: [SessionUse]) throws {
        guard !uses.isEmpty else { return }
        try pool.run { c in
            try c.execute("""
                WITH u AS (SELECT * FROM unnest(\(uses.map(\.tenant)), \(uses.map(\.id)),
                                                \(uses.map { $0.at.timeIntervalSince1970 })) AS u(tenant, id, at)),
                locked AS (SELECT s.tenant_id, s.id, u.at FROM u JOIN sessions s ON s.tenant_id = u.tenant AND s.id = u.id
                           ORDER BY s.tenant_id, s.id FOR NO KEY UPDATE OF s)
                UPDATE sessions s SET last_used_at = greatest(s.last_used_at, to_timestamp(l.at))
                FROM locked l WHERE s.tenant_id = l.tenant_id AND s.id = l.id
                """, plan: .generic)
        }
    }

    public func dueSessions(before: Date, limit: Int) throws -> [DueSession] {
        try pool.run { c in
            let r = try c.execute("""
                SELECT tenant_id, id, client_id, extract(epoch from next_refresh_at) AS next_refresh_at FROM sessions
                WHERE state = 'active' AND next_refresh_at < \(before)
                ORDER BY sessions.next_refresh_at LIMIT \(limit)
                """, plan: .generic)
            return try r.map { try DueSession(tenant: $0["tenant_id"], id: $0["id"], client: $0["client_id"], at: $0["next_refresh_at"]) }
        }
    }

    public func countGrantsExpiring(before: Date) throws -> Int {
        try pool.run { c in
            try c.execute("SELECT count(*) AS n FROM sessions WHERE state = 'active' AND grant_expires_at < \(before)", plan: .generic)
                .first { try $0["n"] } ?? 0
        }
    }

    /// The statement that writes the columns a write changes, bumps the version and announces
    /// the schedule, answering one row when it wrote; `locked` is the row as read under the lock
    /// (or as this caller last wrote it), and the version must be its version plus one. The
    /// version check makes the row equal to `locked` in every column a write bumps the version
    /// for, so a column unchanged from `locked` is left alone: a refresh's attempt sets five
    /// columns, not twenty-two, and a token equal to the locked row's is not sealed and sent
    /// again. `last_used_at`, which marks move without a version, only ever moves forward.
    /// A write that does not bump the version by exactly one is a caller's bug: it is refused
    /// (internal error, logged by the caller's request), never written and never a crash — but
    /// for a re-application after a change of database server (`reapplying`, FailoverReapply),
    /// which restores the version it committed, above the row's.
    func update(_ s: Session, over locked: Session, now: Date, reapplying: Bool = false) throws -> (sql: SQL, plan: PGConnection.Plan) {
        let expectedVersion = locked.version
        guard reapplying ? s.version > expectedVersion : s.version == expectedVersion + 1 else { throw BrokerError.internalError }
        var q = SQL.Interpolation(literalCapacity: 1_024, interpolationCount: 24)
        q.appendLiteral("WITH updated AS (UPDATE sessions SET ")
        func set(_ column: String, _ changed: Bool, _ value: (inout SQL.Interpolation) throws -> Void) rethrows {
            guard changed else { return }
            q.appendLiteral(column + " = ")
            try value(&q)
            q.appendLiteral(", ")
        }
        try set("access_token", s.accessToken != locked.accessToken) { $0.appendInterpolation(try seal(s.accessToken, s, "access_token")) }
        try set("refresh_token", s.refreshToken != locked.refreshToken) { $0.appendInterpolation(try seal(s.refreshToken, s, "refresh_token")) }
        try set("id_token", s.idToken != locked.idToken) { $0.appendInterpolation(try seal(s.idToken, s, "id_token")) }
        set("scopes", s.scopes != locked.scopes) { $0.appendInterpolation(s.scopes) }
        set("sid", s.claims.sid != locked.claims.sid) { $0.appendInterpolation(s.claims.sid) }
        set("email", s.claims.email != locked.claims.email) { $0.appendInterpolation(s.claims.email) }
        set("auth_time", s.claims.authTime != locked.claims.authTime) { $0.appendInterpolation(s.claims.authTime) }
        set("access_expires_at", s.accessExpiresAt != locked.accessExpiresAt) { $0.appendInterpolation(s.accessExpiresAt) }
        set("access_lifetime", s.accessLifetime != locked.accessLifetime) { $0.appendInterpolation(s.accessLifetime) }
        set("access_token_type", s.accessTokenType != locked.accessTokenType) { $0.appendInterpolation(s.accessTokenType.rawValue) }
        set("state", s.state != locked.state) { $0.appendInterpolation(s.state.rawValue) }
        set("next_refresh_at", s.nextRefreshAt != locked.nextRefreshAt) { $0.appendInterpolation(s.nextRefreshAt) }
        set("failure_count", s.failureCount != locked.failureCount) { $0.appendInterpolation(s.failureCount) }
        set("last_error", s.lastError != locked.lastError) { $0.appendInterpolation(s.lastError) }
        set("last_refreshed_at", s.lastRefreshedAt != locked.lastRefreshedAt) { $0.appendInterpolation(s.lastRefreshedAt) }
        set("last_used_at", s.lastUsedAt != locked.lastUsedAt) { q in
            q.appendLiteral("greatest(last_used_at, "); q.appendInterpolation(s.lastUsedAt); q.appendLiteral(")")
        }
        set("attempt_id", s.attempt?.id != locked.attempt?.id) { $0.appendInterpolation(s.attempt?.id) }
        set("attempt_started_at", s.attempt?.startedAt != locked.attempt?.startedAt) { $0.appendInterpolation(s.attempt?.startedAt) }
        set("backoff_until", s.backoffUntil != locked.backoffUntil) { $0.appendInterpolation(s.backoffUntil) }
        set("reason", s.reason != locked.reason) { $0.appendInterpolation(s.reason) }
        set("grant_expires_at", s.grantExpiresAt != locked.grantExpiresAt) { $0.appendInterpolation(s.grantExpiresAt) }
        set("metadata", s.metadata != locked.metadata) { $0.appendInterpolation(s.metadata) }
        set("access_token_x5t", s.certificateBinding != locked.certificateBinding) { $0.appendInterpolation(s.certificateBinding) }
        // A new grant lifetime is a new warning to give.
        set("grant_expiry_notified_at", s.grantExpiresAt != locked.grantExpiresAt) { $0.appendLiteral("NULL") }
        // When the session ended (revoked or needs_reauth): retention counts from there.
        // coalesce: a session ended by a replica of a release before migration 010 has none yet.
        set("ended_at", s.state != locked.state || s.state != .active) { q in
            if s.state == .active { q.appendLiteral("NULL") } else {
                q.appendLiteral("coalesce(ended_at, "); q.appendInterpolation(now); q.appendLiteral(")")
            }
        }
        // The schedule is announced in the same statement: NOTIFY is delivered at COMMIT, so
        // other replicas hear of exactly the writes that happened.
        let announcement = PostgresChangeFeed.encode(.scheduled(tenant: s.tenant, id: s.id, client: s.client,
                                                                 at: s.state == .active ? s.nextRefreshAt : nil, version: s.version))
        q.appendLiteral("version = "); q.appendInterpolation(s.version)
        q.appendLiteral(" WHERE tenant_id = "); q.appendInterpolation(s.tenant)
        q.appendLiteral(" AND id = "); q.appendInterpolation(s.id)
        q.appendLiteral(" AND version = "); q.appendInterpolation(expectedVersion)
        q.appendLiteral(" RETURNING 1) SELECT pg_notify(")
        q.appendInterpolation(PostgresChangeFeed.channel); q.appendLiteral(", "); q.appendInterpolation(announcement)
        q.appendLiteral(") FROM updated")
        return (SQL(stringInterpolation: q), .keyLookup)
    }

    func seal(_ value: String?, _ s: Session, _ column: String) throws -> [UInt8]? {
        try value.map { try sealer.seal($0, context: "sessions/\(s.tenant)/\(s.id)/\(column)") }
    }

    private func open(_ sealed: [UInt8]?, tenant: String, id: String, _ column: String) throws -> String? {
        guard let sealed else { return nil }
        do { return try sealer.open(sealed, context: "sessions/\(tenant)/\(id)/\(column)") } catch let e as SealError {
            throw e.brokerError
        } catch {
            throw BrokerError.internalError
        }
    }

    /// Reads the columns of `columns`, by name.
    func decode(_ r: PGRow, tenant: String) throws -> Session {
        let id: String = try r["id"]
        let claims = try IdentityClaims(sid: r["sid"], email: r["email"], authTime: r["auth_time"])
        let attemptID: String? = try r["attempt_id"], attemptStartedAt: Date? = try r["attempt_started_at"]
        let dpopKey = try open(r.bytes("dpop_key"), tenant: tenant, id: id, "dpop_key").map { encoded throws in
            guard let key = DPoPKeyMaterial(encoded: encoded) else { throw BrokerError.internalError }
            return key
        }
        return try Session(
            tenant: tenant, id: id, client: r["client_id"], subject: r["subject"], issuer: r["issuer"], scopes: r.words("scopes"),
            claims: claims, accessToken: open(r.bytes("access_token"), tenant: tenant, id: id, "access_token"),
            accessExpiresAt: r["access_expires_at"], accessLifetime: r["access_lifetime"],
            refreshToken: open(r.bytes("refresh_token"), tenant: tenant, id: id, "refresh_token"),
            idToken: open(r.bytes("id_token"), tenant: tenant, id: id, "id_token"), state: r.known("state", table: "sessions"),
            nextRefreshAt: r["next_refresh_at"], version: r["version"], failureCount: r["failure_count"],
            lastError: r["last_error"], grantedAt: r["granted_at"], createdAt: r["created_at"], lastUsedAt: r["last_used_at"],
            lastRefreshedAt: r["last_refreshed_at"],
            attempt: attemptID.map { RefreshAttempt(id: $0, startedAt: attemptStartedAt ?? Date(timeIntervalSince1970: 0)) },
            backoffUntil: r["backoff_until"], reason: r["reason"], grantExpiresAt: r["grant_expires_at"],
            accessTokenType: tokenType(r), dpopKey: dpopKey, metadata: r["metadata"], endUser: r["end_user"],
            certificateBinding: r["access_token_x5t"])
    }

    /// The stored `access_token_type`, by its name in the token response (TokenType(named:)).
    private func tokenType(_ r: PGRow) throws -> TokenType {
        let name: String = try r["access_token_type"]
        guard let type = TokenType(named: name) else { throw BrokerError.storedValueUnknown(column: "sessions.access_token_type", value: name) }
        return type
    }
}
