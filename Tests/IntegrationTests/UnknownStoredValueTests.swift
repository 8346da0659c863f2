import Foundation
import Testing

/// A value a newer release stored (its migration having widened the CHECK constraint) is refused
/// by this one over HTTP: 500 stored_value_unknown naming the column and the value, never served
/// under a default.
@Suite("stored values this release does not know", .serialized)
struct UnknownStoredValueTests {
    /// Stores `value` in `table.column` of the rows `condition` picks, past the column's CHECK
    /// constraint (put back NOT VALID: the rows already there stay), and announces `change`.
    static func storeUnknown(_ table: String, _ column: String, _ value: String, where condition: String, change: String) throws {
        let constraint = "\(table)_\(column)_check"
        let def = try runPSQL("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = '\(constraint)'")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try runPSQL("""
            BEGIN;
            ALTER TABLE \(table) DROP CONSTRAINT IF EXISTS \(constraint);
            UPDATE \(table) SET \(column) = '\(value)' WHERE \(condition);
            \(def.isEmpty ? "" : "ALTER TABLE \(table) ADD CONSTRAINT \(constraint) \(def) NOT VALID;")
            COMMIT;
            SELECT pg_notify('tokenbroker_changes', '\(change)');
            """)
    }

    static func refused(_ r: HTTP.Reply, _ column: String, _ value: String) -> Bool {
        r.status == 500 && r["error"] as? String == "stored_value_unknown"
            && (r["message"] as? String)?.contains("\(column) holds unknown value '\(value)'") == true
    }

    @Test("a client whose stored profile is unknown is refused, to its operator and to a login: never served as standard")
    func unknownProfile() async throws {
        let w = try await World()
        defer { w.stop() }
        let row = "tenant_id = '\(w.tenant)' AND id = '\(w.client)'"
        try Self.storeUnknown("clients", "profile", "fapi3", where: row, change: "c|\(w.tenant)|\(w.client)")
        defer { _ = try? runPSQL("UPDATE clients SET profile = 'standard' WHERE \(row)") }
        let shown = try await HTTP.get(w.brokers[0].url + "/v1/tenants/\(w.tenant)/clients/\(w.client)", key: w.operatorKey)
        #expect(Self.refused(shown, "clients.profile", "fapi3"), "\(shown.status) \(shown.text)")
        let login = try await w.startLogin(subject: "fay")
        #expect(Self.refused(login, "clients.profile", "fapi3"), "\(login.status) \(login.text)")
    }

    @Test("a session whose stored state is unknown hands out no token: never read as revoked, nor as active")
    func unknownSessionState() async throws {
        let w = try await World()
        defer { w.stop() }
        let s = try await w.importSession(subject: "sam")
        let row = "tenant_id = '\(w.tenant)' AND id = '\(s)'"
        try Self.storeUnknown("sessions", "state", "suspended", where: row, change: "s|\(w.tenant)|\(s)")
        defer { _ = try? runPSQL("DELETE FROM sessions WHERE \(row)") }
        let r = try await w.token(s)
        #expect(Self.refused(r, "sessions.state", "suspended"), "\(r.status) \(r.text)")
    }
}
