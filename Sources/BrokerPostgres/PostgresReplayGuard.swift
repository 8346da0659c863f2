import BrokerCore
import Foundation

/// PostgresReplayGuard records token ids in `seen_token_ids`: the primary key makes the first
/// INSERT win, on whichever replica.
public final class PostgresReplayGuard: ReplayGuard {
    let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    public func firstUse(issuer: String, jti: String, until: Date) throws -> Bool {
        try pool.run { c in
            try c.execute("""
                INSERT INTO seen_token_ids (issuer, jti, expires_at) VALUES (\(issuer), \(jti), \(until))
                ON CONFLICT DO NOTHING
                """).affected == 1
        }
    }

    public func seen(issuer: String, jti: String) throws -> Bool {
        try pool.run { c in try c.execute("SELECT 1 FROM seen_token_ids WHERE issuer = \(issuer) AND jti = \(jti)").count == 1 }
    }

    public func purge(before: Date) throws {
        try pool.run { c in try c.execute("DELETE FROM seen_token_ids WHERE expires_at < \(before)") }
    }
}
