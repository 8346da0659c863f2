import BrokerCore
import Foundation

extension PGConnection {
    /// The server lineage this connection is on (ServerIdentity): the cluster's system
    /// identifier and the timeline.
    ///
    /// The timeline is the one WAL is inserted on, the first eight hex digits of
    /// `pg_walfile_name(pg_current_wal_lsn())`: it is the new timeline from the moment a
    /// promoted standby accepts writes. `pg_control_checkpoint().timeline_id` is not: it changes
    /// with the end-of-recovery checkpoint, which a promotion only requests (measured on
    /// PostgreSQL 15: still 1 more than 12 s after a promotion to timeline 2 that had 120 MB to
    /// flush). A server in recovery (a standby) reports no identity (nil,
    /// ServerIdentity.reported): its only timeline is the last restartpoint's, which lags.
    /// Both functions are open to any role.
    ///
    /// A role that may not read the control functions (insufficient privilege, on some managed
    /// services) still reads the timeline, and the system identifier is not compared.
    public func serverIdentity() throws(PGError) -> ServerIdentity? {
        let rows: PGRows
        let timeline = "CASE WHEN pg_is_in_recovery() THEN 0 ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END"
        do {
            rows = try execute("""
                SELECT s.system_identifier::text AS system, \(raw: timeline) AS timeline, pg_is_in_recovery() AS recovery
                FROM pg_control_system() s
                """)
        } catch where error.sqlstate == "42501" {
            rows = try execute("SELECT NULL::text AS system, \(raw: timeline) AS timeline, pg_is_in_recovery() AS recovery")
        }
        guard rows.count == 1, let timeline = rows.string(0, rows.column("timeline") ?? 1).flatMap({ Int($0) }),
              let recovery = rows.string(0, rows.column("recovery") ?? 2) else {
            throw PGError(sqlstate: "XX000", message: "the server's identity could not be read")
        }
        return ServerIdentity.reported(systemID: rows.string(0, rows.column("system") ?? 0), timeline: timeline, inRecovery: recovery == "t")
    }
}
