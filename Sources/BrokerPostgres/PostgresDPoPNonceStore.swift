import BrokerCore
import Foundation

/// PostgresDPoPNonceStore keeps each client's current authorization-server DPoP nonce in
/// `dpop_nonces`, one row per tenant and client. A learned nonce equal to the stored one writes
/// nothing (the upsert's WHERE), so a server that keeps its nonce costs no write per request.
public final class PostgresDPoPNonceStore: DPoPNonceStore {
    let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    public func nonce(tenant: String, client: String) throws -> ServerNonce? {
        try pool.run { c in
            try c.execute("""
                SELECT issuer, nonce, learned_from, extract(epoch from learned_at) AS learned_at FROM dpop_nonces WHERE tenant_id = \(tenant) AND client_id = \(client)
                """).first { r in
                ServerNonce(tenant: tenant, client: client, issuer: try r["issuer"], value: try r["nonce"],
                            learnedFrom: try r.known("learned_from", table: "dpop_nonces"), learnedAt: try r["learned_at"])
            }
        }
    }

    public func learn(_ n: ServerNonce) throws -> Bool {
        try pool.run { c in
            try c.execute("""
                INSERT INTO dpop_nonces (tenant_id, client_id, issuer, nonce, learned_from, learned_at)
                VALUES (\(n.tenant), \(n.client), \(n.issuer), \(n.value), \(n.learnedFrom.rawValue), \(n.learnedAt))
                ON CONFLICT (tenant_id, client_id) DO UPDATE
                  SET issuer = excluded.issuer, nonce = excluded.nonce, learned_from = excluded.learned_from, learned_at = excluded.learned_at
                  WHERE dpop_nonces.nonce <> excluded.nonce OR dpop_nonces.issuer <> excluded.issuer
                """).affected == 1
        }
    }
}
