import BrokerCore
import Foundation

/// PostgresLoginStore keeps pending logins in `logins`, verifier and nonce sealed with the
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
        let verifier = sealer.seal(l.verifier, context: "logins/\(l.tenant)/\(l.id)/verifier")
        let nonce = sealer.seal(l.nonce, context: "logins/\(l.tenant)/\(l.id)/nonce")
        try pool.run { c in
            try c.execute("""
                INSERT INTO logins (state_hash, id, tenant_id, client_id, issuer, verifier, nonce, scopes, redirect_after,
                    created_at, expires_at)
                VALUES (\(l.stateHash), \(l.id), \(l.tenant), \(l.client), \(l.issuer), \(verifier), \(nonce), \(l.scopes),
                    \(l.redirectAfter), \(l.createdAt), \(l.expiresAt))
                """)
        }
    }

    public func consume(stateHash: [UInt8]) throws -> PendingLogin? {
        try pool.run { c in
            let r = try c.execute("""
                DELETE FROM logins WHERE state_hash = \(stateHash)
                RETURNING id, tenant_id, client_id, issuer, verifier, nonce, array_to_string(scopes, ' '), redirect_after,
                    extract(epoch from created_at), extract(epoch from expires_at)
                """)
            guard r.count == 1 else { return nil }
            let id = r.string(0, 0)!, tenant = r.string(0, 1)!
            func open(_ col: Int, _ name: String) throws -> String {
                guard let sealed = r.bytes(0, col) else { throw BrokerError.internalError }
                do { return try sealer.open(sealed, context: "logins/\(tenant)/\(id)/\(name)") } catch { throw BrokerError.internalError }
            }
            return PendingLogin(id: id, tenant: tenant, client: r.string(0, 2)!, issuer: r.string(0, 3)!, stateHash: stateHash,
                                verifier: try open(4, "verifier"), nonce: try open(5, "nonce"), scopes: r.words(0, 6),
                                redirectAfter: r.string(0, 7), createdAt: r.date(0, 8)!, expiresAt: r.date(0, 9)!)
        }
    }

    public func purge(expiredBefore before: Date) throws -> Int {
        try pool.run { c in try c.execute("DELETE FROM logins WHERE expires_at < \(before)").affected }
    }
}
