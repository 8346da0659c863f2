import BrokerCore
import Foundation

/// PostgresReplicationProbe reads the replication of the server the pool writes to, in one
/// statement through the pool (so after a failover it reads the new primary): the settings as
/// they apply to the broker's own transactions, and `pg_stat_replication`, whose rows every role
/// sees but whose `application_name` and `sync_state` only a role with `pg_read_all_stats` (or
/// a superuser) does.
public final class PostgresReplicationProbe: ReplicationProbe {
    let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    public func replication() throws -> ReplicationReading {
        try pool.run { c in
            // One row with a NULL pid when no walsender runs (the LEFT JOIN). A walsender the
            // role may not see in full still shows its pid: counted, without a state.
            let rows = try c.execute("""
                SELECT current_setting('synchronous_commit') AS synchronous_commit,
                       current_setting('synchronous_standby_names') AS synchronous_standby_names,
                       pg_is_in_recovery() AS in_recovery, r.pid, r.application_name, r.sync_state
                FROM (SELECT 1) AS one LEFT JOIN pg_stat_replication AS r ON true
                ORDER BY r.application_name
                """)
            guard rows.count > 0 else { throw PGError(sqlstate: "XX000", message: "no replication reading") }
            let first = rows.row(0)
            let standbys = try rows.map { r -> ReplicationReading.Standby? in
                guard (try r["pid"] as Int?) != nil else { return nil }
                return ReplicationReading.Standby(name: try r["application_name"], syncState: try r["sync_state"])
            }.compactMap { $0 }
            return ReplicationReading(synchronousCommit: try first["synchronous_commit"], synchronousStandbyNames: try first["synchronous_standby_names"],
                                      standbys: standbys, inRecovery: try first["in_recovery"])
        }
    }
}
