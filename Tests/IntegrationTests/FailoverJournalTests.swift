import Foundation
import Testing

/// A failover that lost a rotation, with real processes: the broker over HTTP, PostgreSQL and
/// the development IdP, which counts every refresh token presented twice. The lost write is
/// made by SQL (the row rolled back to the version before the rotation, as a new primary that
/// never received it has it), and the new server by a `pg_walfile_name` that answers another
/// timeline ahead of pg_catalog on the broker's search_path, with the broker's connections
/// cut as a dying primary cuts them.
@Suite("Failover journal", .serialized)
struct FailoverJournalTests {
    static let sim = "tb_failover_sim"

    /// A counter's value in the broker's /metrics (0 when the series is absent).
    func metric(_ w: World, _ series: String) async throws -> Int {
        let text = try await HTTP.get(w.brokers[0].url + "/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// The rollback of `id` to the row saved before the rotation, and the new timeline, in one
    /// transaction; then every connection of the broker is cut.
    func failOver(_ id: String, tenant: String) throws {
        let sim = Self.sim
        _ = try runPSQL("""
            BEGIN;
            UPDATE sessions s SET access_token = o.access_token, access_expires_at = o.access_expires_at, refresh_token = o.refresh_token,
                id_token = o.id_token, version = o.version, next_refresh_at = o.next_refresh_at, last_refreshed_at = o.last_refreshed_at,
                attempt_id = NULL, attempt_started_at = NULL, failure_count = 0, backoff_until = NULL
            FROM \(sim).lost_row o WHERE s.tenant_id = o.tenant_id AND s.id = o.id AND s.tenant_id = '\(tenant)' AND s.id = '\(id)';
            CREATE FUNCTION \(sim).pg_walfile_name(pg_lsn) RETURNS text LANGUAGE sql
                AS $$ SELECT '00000063' || substr(pg_catalog.pg_walfile_name($1), 9) $$;
            COMMIT;
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE application_name = 'tokenbroker' AND datname = current_database();
            """)
    }

    @Test("a rotation the new primary lacks is re-applied before its session's refresh token is presented again: no token presented twice, the session lives on")
    func lostRotationReapplied() async throws {
        let sim = Self.sim
        _ = try runPSQL("DROP SCHEMA IF EXISTS \(sim) CASCADE")
        // The broker's search_path puts the simulation's schema ahead of pg_catalog.
        let url = try TestEnv.databaseURL() + "&options=-c%20search_path%3D\(sim)%2Cpublic%2Cpg_catalog"
        let w = try await World(extraEnv: ["DATABASE_URL": url, "TOKENBROKER_FAILOVER_HOLD_SECONDS": "1"])
        defer {
            w.stop()
            _ = try? runPSQL("DROP SCHEMA IF EXISTS \(sim) CASCADE")
        }
        let id = try await w.importSession(subject: "lost-rotation", expiresIn: 30)
        _ = try runPSQL("CREATE SCHEMA \(sim); CREATE TABLE \(sim).lost_row AS SELECT * FROM sessions WHERE tenant_id = '\(w.tenant)' AND id = '\(id)'")
        // The rotation, committed on the "old primary" and acknowledged.
        let rotated = try expectStatus(try await w.token(id, body: ["min_ttl": 60]), 200)
        #expect(try await w.idp.presentations(client: w.idpClientID).presented == 1)
        #expect(try await metric(w, "tokenbroker_database_server_changes_total") == 0)

        try failOver(id, tenant: w.tenant)
        // A caller forces a refresh at once: it is held until the rotation is back, then
        // presents the token the rotation gave, never the spent one.
        let deadline = Date().addingTimeInterval(20)
        var r = try await w.token(id, body: ["force_refresh": true])
        while r.status != 200, Date() < deadline {
            #expect(r.status == 503)   // the cut connections, or held by the fence
            try await Task.sleep(for: .milliseconds(200))
            r = try await w.token(id, body: ["force_refresh": true])
        }
        try expectStatus(r, 200)
        #expect(r["access_token"] as? String != rotated["access_token"] as? String)
        let p = try await w.idp.presentations(client: w.idpClientID)
        #expect(p.presented == 2 && p.reuse == 0)
        #expect(try await metric(w, "tokenbroker_database_server_changes_total") == 1)
        #expect(try await metric(w, "tokenbroker_failover_rotations_reapplied_total") == 1)
        let log = w.brokers[0].process.output
        #expect(log.contains("\"code\":\"database_server_changed\"") && log.contains("\"code\":\"failover_reapplied\""))
        // And the session goes on: refreshed again, still once per token.
        try expectStatus(try await w.token(id, body: ["force_refresh": true]), 200)
        let q = try await w.idp.presentations(client: w.idpClientID)
        #expect(q.presented == 3 && q.reuse == 0)
    }
}
