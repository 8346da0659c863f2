import BrokerCore
import Foundation

/// PostgresLoginStore keeps pending logins in `logins`, verifier, nonce and DPoP key sealed with the
/// context `logins/<tenant>/<id>/<column>`. Consumption is one `DELETE … RETURNING`: of two
/// callbacks with the same state, the second finds no row.
public final class PostgresLoginStore: LoginStore {
    let pool: PGPool
    let sealer: any Sealer

    public init(pool: PGPool, sealer: any Sealer) {
        self.pool = pool
        self.sealer = sealer
    }

    public func insert(_ l: PendingLogin) throws {
        let verifier = try sealer.seal(l.verifier, context: "logins/\(l.tenant)/\(l.id)/verifier")
        let nonce = try sealer.seal(l.nonce, context: "logins/\(l.tenant)/\(l.id)/nonce")
        let dpopKey = try l.dpopKey.map { try sealer.seal($0.encoded, context: "logins/\(l.tenant)/\(l.id)/dpop_key") }
        try pool.run { c in
            try c.execute("""
                INSERT INTO logins (state_hash, id, tenant_id, client_id, issuer, verifier, nonce, scopes, redirect_after,
                    created_at, expires_at, dpop_key, end_user)
                VALUES (\(l.stateHash), \(l.id), \(l.tenant), \(l.client), \(l.issuer), \(verifier), \(nonce), \(l.scopes),
                    \(l.redirectAfter), \(l.createdAt), \(l.expiresAt), \(dpopKey), \(l.endUser))
                """)
        }
    }

    public func consume(stateHash: [UInt8]) throws -> PendingLogin? {
        try pool.run { c in
            let r = try c.execute("""
                DELETE FROM logins WHERE state_hash = \(stateHash)
                RETURNING id, tenant_id, client_id, issuer, verifier, nonce, array_to_string(scopes, ' ') AS scopes, redirect_after,
                    extract(epoch from created_at) AS created_at, extract(epoch from expires_at) AS expires_at, dpop_key, end_user
                """, plan: .generic)
            return try r.first { row in
                let id: String = try row["id"], tenant: String = try row["tenant_id"]
                func open(_ sealed: [UInt8]?, _ name: String) throws -> String {
                    guard let sealed else { throw BrokerError.internalError }
                    do { return try sealer.open(sealed, context: "logins/\(tenant)/\(id)/\(name)") } catch { throw BrokerError.internalError }
                }
                let dpopKey = try row.bytes("dpop_key").map { sealed throws in
                    guard let key = DPoPKeyMaterial(encoded: try open(sealed, "dpop_key")) else { throw BrokerError.internalError }
                    return key
                }
                return try PendingLogin(id: id, tenant: tenant, client: row["client_id"], issuer: row["issuer"], stateHash: stateHash,
                                        verifier: open(row.bytes("verifier"), "verifier"), nonce: open(row.bytes("nonce"), "nonce"),
                                        scopes: row.words("scopes"), redirectAfter: row["redirect_after"], createdAt: row["created_at"],
                                        expiresAt: row["expires_at"], dpopKey: dpopKey, endUser: row["end_user"])
            }
        }
    }

    public func purge(expiredBefore before: Date) throws -> Int {
        try pool.run { c in try c.execute("DELETE FROM logins WHERE expires_at < \(before)").affected }
    }
}
