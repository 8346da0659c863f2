import BrokerCore
import Foundation

/// PostgresBrokerKeyStore keeps the broker's keys in `broker_keys`, the private half sealed with
/// the context `broker_keys/broker/<kid>/private_key`. Replicas racing to make the first key
/// meet at the one-current index: the loser's INSERT does nothing and it reads the winner's.
public final class PostgresBrokerKeyStore: BrokerKeyStore {
    let pool: PGPool
    let sealer: any Sealer

    public init(pool: PGPool, sealer: any Sealer) {
        self.pool = pool
        self.sealer = sealer
    }

    public func keys() throws -> [BrokerKey] {
        try pool.run { c in
            try c.execute("""
                SELECT kid, alg, private_key, extract(epoch from created_at) AS created_at FROM broker_keys
                ORDER BY retired_at IS NULL DESC, broker_keys.created_at DESC
                """).map { r in
                let kid: String = try r["kid"], algorithm: JWSAlgorithm = try r.known("alg", table: "broker_keys")
                guard let sealed = try r.bytes("private_key") else { throw BrokerError.internalError }
                let opened: String
                do { opened = try sealer.open(sealed, context: "broker_keys/broker/\(kid)/private_key") } catch let e as SealError {
                    throw e.brokerError   // sealed under a key this replica lacks: 503 sealing_key_unavailable
                }
                guard let der = Base64URL.decode(opened) else { throw BrokerError.internalError }
                return BrokerKey(kid: kid, algorithm: algorithm, der: der, createdAt: try r["created_at"])
            }
        }
    }

    public func addCurrent(_ key: BrokerKey) throws -> BrokerKey {
        let sealed = try sealer.seal(Base64URL.encode(key.der), context: "broker_keys/broker/\(key.kid)/private_key")
        try pool.run { c in
            try c.execute("""
                INSERT INTO broker_keys (kid, alg, private_key, created_at) VALUES (\(key.kid), \(key.algorithm.rawValue), \(sealed), \(key.createdAt))
                ON CONFLICT DO NOTHING
                """)
        }
        guard let current = try keys().first else { throw BrokerError.storeUnavailable }
        return current
    }
}
