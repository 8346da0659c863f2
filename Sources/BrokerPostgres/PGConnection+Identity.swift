import BrokerCore
import Foundation

extension PGConnection {
    /// The server lineage this connection is on (ServerIdentity): the cluster's system
    /// identifier and the timeline.
    ///
    /// On a primary the timeline is the one WAL is inserted on, the first eight hex digits of
    /// `pg_walfile_name(pg_current_wal_lsn())`: it is the new timeline from the moment a
    /// promoted standby accepts writes. `pg_control_checkpoint().timeline_id` is not: it changes
    /// with the end-of-recovery checkpoint, which a promotion only requests (measured on
    /// PostgreSQL 15: still 1 more than 12 s after a promotion to timeline 2 that had 120 MB to
    /// flush). A standby cannot call `pg_current_wal_lsn()` ("recovery is in progress"): there it
    /// is the last restartpoint's timeline, which is as good as it gets and never used for a
    /// write. Both functions are open to any role.
    public func serverIdentity() throws(PGError) -> ServerIdentity {
        let rows = try execute("""
            SELECT s.system_identifier::text AS system,
                   CASE WHEN pg_is_in_recovery() THEN (SELECT timeline_id FROM pg_control_checkpoint())
                        ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END AS timeline
            FROM pg_control_system() s
            """)
        guard rows.count == 1, let timeline = rows.string(0, rows.column("timeline") ?? 1).flatMap({ Int($0) }) else {
            throw PGError(sqlstate: "XX000", message: "the server's identity could not be read")
        }
        return ServerIdentity(systemID: rows.string(0, rows.column("system") ?? 0), timeline: timeline)
    }
}
