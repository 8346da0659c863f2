import BrokerCore
import Foundation

/// PostgresAppTokenStore keeps app tokens in `app_tokens`, the access token and the DPoP key
/// sealed with their tenant and row as additional data (`app_tokens/<tenant>/<id>/<column>`,
/// re-sealed by PostgresSealedValues like every other sealed column). The grant lock is a
/// transaction-level advisory lock on LockKey.appToken: it is released with the write's COMMIT
/// (or the rollback of a failed body), so a replica that dies mid-grant holds nothing.
public final class PostgresAppTokenStore: AppTokenStore {
    let pool: PGPool
    let sealer: any Sealer

    public init(pool: PGPool, sealer: any Sealer) {
        self.pool = pool
        self.sealer = sealer
    }

    static let columns = """
        client_id, array_to_string(scopes_asked, ' ') AS scopes_asked, audience, resource, access_token, token_type,
        array_to_string(scopes, ' ') AS scopes, extract(epoch from expires_at) AS expires_at, lifetime, \
        extract(epoch from renew_at) AS renew_at, dpop_key, version, extract(epoch from granted_at) AS granted_at, \
        extract(epoch from last_used_at) AS last_used_at, extract(epoch from created_at) AS created_at
        """

    public func appToken(tenant: String, client: String, ask: AppTokenAsk) throws -> AppToken? {
        let id = AppToken.id(client: client, ask: ask)
        return try pool.run { c in
            try c.execute("SELECT \(raw: Self.columns) FROM app_tokens WHERE tenant_id = \(tenant) AND id = \(id)", plan: .keyLookup)
                .first { try decode($0, tenant: tenant, id: id) }
        }
    }

    public func withGrantLock<T>(tenant: String, client: String, ask: AppTokenAsk, timeout: TimeInterval,
                                 _ body: (AppToken?) throws -> (write: AppToken?, result: T)) throws -> T {
        let id = AppToken.id(client: client, ask: ask)
        let key = LockKey.appToken(tenant: tenant, client: client, ask: ask.key)
        return try pool.transact { c in
            if timeout > 0 {
                try c.execute("SELECT pg_advisory_xact_lock(\(key))",
                              plan: PGConnection.Plan.keyLookup.with("lock_timeout", String(max(1, Int((timeout * 1000).rounded(.up))))))
            } else {
                let got: Bool = try c.execute("SELECT pg_try_advisory_xact_lock(\(key)) AS got", plan: .keyLookup).first { try $0["got"] } ?? false
                guard got else { throw BrokerError.refreshBusy }
            }
            let locked = try c.execute("SELECT \(raw: Self.columns) FROM app_tokens WHERE tenant_id = \(tenant) AND id = \(id)", plan: .keyLookup)
                .first { try decode($0, tenant: tenant, id: id) }
            let (write, result) = try body(locked)
            if let w = write { _ = try c.commit(with: [(try upsert(w), .keyLookup)]) }
            return result
        }
    }

    /// The row written whole, its version one past the stored one; last_used_at only moves forward.
    private func upsert(_ t: AppToken) throws -> SQL {
        """
        INSERT INTO app_tokens (tenant_id, id, client_id, scopes_asked, audience, resource, access_token, token_type, scopes, expires_at,
            lifetime, renew_at, dpop_key, version, granted_at, last_used_at, created_at)
        VALUES (\(t.tenant), \(t.id), \(t.client), \(t.ask.scopes), \(t.ask.audience), \(t.ask.resource), \(try seal(t.accessToken, t, "access_token")),
            \(t.tokenType.rawValue), \(t.scopes), \(t.expiresAt), \(t.lifetime), \(t.renewAt), \(try seal(t.dpopKey?.encoded, t, "dpop_key")),
            1, \(t.grantedAt), \(t.lastUsedAt), \(t.createdAt))
        ON CONFLICT (tenant_id, id) DO UPDATE SET access_token = excluded.access_token, token_type = excluded.token_type,
            scopes = excluded.scopes, expires_at = excluded.expires_at, lifetime = excluded.lifetime, renew_at = excluded.renew_at,
            dpop_key = excluded.dpop_key, version = app_tokens.version + 1, granted_at = excluded.granted_at,
            last_used_at = greatest(app_tokens.last_used_at, excluded.last_used_at)
        """
    }

    public func drop(tenant: String, client: String) throws -> Int {
        try pool.run { c in
            try c.execute("""
                UPDATE app_tokens SET access_token = NULL, expires_at = NULL, renew_at = NULL, version = version + 1
                WHERE tenant_id = \(tenant) AND client_id = \(client) AND access_token IS NOT NULL RETURNING 1
                """).count
        }
    }

    public func touch(_ uses: [AppTokenUse]) throws {
        guard !uses.isEmpty else { return }
        try pool.run { c in
            try c.execute("""
                WITH u AS (SELECT * FROM unnest(\(uses.map(\.tenant)), \(uses.map { AppToken.id(client: $0.client, ask: $0.ask) }),
                                                \(uses.map { $0.at.timeIntervalSince1970 })) AS u(tenant, id, at))
                UPDATE app_tokens a SET last_used_at = greatest(a.last_used_at, to_timestamp(u.at))
                FROM u WHERE a.tenant_id = u.tenant AND a.id = u.id
                """, plan: .generic)
        }
    }

    public func dueForRenewal(before: Date, limit: Int) throws -> [AppTokenUse] {
        try pool.run { c in
            try c.execute("""
                SELECT tenant_id, client_id, array_to_string(scopes_asked, ' ') AS scopes_asked, audience, resource,
                       extract(epoch from renew_at) AS renew_at FROM app_tokens
                WHERE access_token IS NOT NULL AND renew_at <= \(before) AND expires_at > \(before) AND last_used_at >= granted_at
                ORDER BY renew_at LIMIT \(limit)
                """, plan: .generic).map { r in
                AppTokenUse(tenant: try r["tenant_id"], client: try r["client_id"],
                            ask: AppTokenAsk(scopes: try r.words("scopes_asked"), audience: try r["audience"], resource: try r["resource"]),
                            at: try r["renew_at"])
            }
        }
    }

    private func seal(_ value: String?, _ t: AppToken, _ column: String) throws -> [UInt8]? {
        try value.map { try sealer.seal($0, context: "app_tokens/\(t.tenant)/\(t.id)/\(column)") }
    }

    private func open(_ sealed: [UInt8]?, tenant: String, id: String, _ column: String) throws -> String? {
        guard let sealed else { return nil }
        return try sealer.open(sealed, context: "app_tokens/\(tenant)/\(id)/\(column)")
    }

    private func decode(_ r: PGRow, tenant: String, id: String) throws -> AppToken {
        let dpopKey = try open(r.bytes("dpop_key"), tenant: tenant, id: id, "dpop_key").map { encoded throws in
            guard let key = DPoPKeyMaterial(encoded: encoded) else { throw BrokerError.internalError }
            return key
        }
        return try AppToken(
            tenant: tenant, client: r["client_id"], ask: AppTokenAsk(scopes: r.words("scopes_asked"), audience: r["audience"], resource: r["resource"]),
            accessToken: open(r.bytes("access_token"), tenant: tenant, id: id, "access_token"), tokenType: r.known("token_type", table: "app_tokens"),
            scopes: r.words("scopes"), expiresAt: r["expires_at"], lifetime: r["lifetime"], renewAt: r["renew_at"], dpopKey: dpopKey,
            version: r["version"], grantedAt: r["granted_at"], lastUsedAt: r["last_used_at"], createdAt: r["created_at"])
    }
}
