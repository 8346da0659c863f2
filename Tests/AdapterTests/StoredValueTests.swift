import BrokerCore
@testable import BrokerPostgres
import BrokerTesting
import Foundation
import Testing

/// Rows are read by column name, and a stored enum value this release does not know is refused,
/// naming the column and the value — never read as a default. The unknown values are written the
/// way a newer release would: its migration widens the CHECK constraint first.
@Suite("stored values read by name")
struct StoredValueTests {
    /// Writes `value` into `table.column` of the rows `condition` picks, past the column's CHECK
    /// constraint (dropped, then put back NOT VALID so that the rows already there stay).
    static func storeUnknown(_ table: String, _ column: String, _ value: String, where condition: String) throws {
        let c = try PGConnection(url: try TestDatabase.url())
        let constraint = "\(table)_\(column)_check"
        let def = try c.execute("""
            SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = \(constraint)
            """).first { try $0["def"] as String } ?? ""
        try c.executeScript("""
            BEGIN;
            ALTER TABLE \(table) DROP CONSTRAINT IF EXISTS \(constraint);
            UPDATE \(table) SET \(column) = '\(value)' WHERE \(condition);
            \(def.isEmpty ? "" : "ALTER TABLE \(table) ADD CONSTRAINT \(constraint) \(def) NOT VALID;")
            COMMIT;
            """)
    }

    /// A fresh tenant's sample session, stored.
    static func storedSession() throws -> (PGPool, PostgresSessionStore, Session) {
        let pool = try TestDatabase.migrated()
        let store = PostgresSessionStore(pool: pool, sealer: TestDatabase.sealer)
        let s = SessionStoreContract.sample(tenant: try TestDatabase.tenants(pool).0)
        try store.insert(s)
        return (pool, store, s)
    }

    @Test("an unknown clients.profile or auth_method refuses the client, naming the column and the value: never served as standard, nor as none",
          arguments: [("profile", "fapi3"), ("auth_method", "attest_jwt_client_auth")])
    func unknownClientValue(_ column: String, _ value: String) throws {
        let pool = try TestDatabase.migrated()
        let (t, _) = try TestDatabase.tenants(pool)
        let registry = PostgresRegistryStore(pool: pool, sealer: TestDatabase.sealer)
        try Self.storeUnknown("clients", column, value, where: "tenant_id = '\(t)' AND id = 'app'")
        defer { _ = try? pool.withConnection { c in try c.execute("DELETE FROM clients WHERE tenant_id = \(t)") } }
        let e = #expect(throws: BrokerError.self) { try registry.client(tenant: t, id: "app") }
        #expect(e == .storedValueUnknown(column: "clients.\(column)", value: value))
        #expect(e?.code == "stored_value_unknown")
        #expect(e?.message.contains("clients.\(column) holds unknown value '\(value)'") == true)
    }

    @Test("an unknown sessions.state refuses the session, whether read, listed or locked: never read as revoked")
    func unknownSessionState() throws {
        let (_, store, s) = try Self.storedSession()
        let t = s.tenant
        try Self.storeUnknown("sessions", "state", "suspended", where: "tenant_id = '\(t)' AND id = '\(s.id)'")
        defer { _ = try? store.pool.withConnection { c in try c.execute("DELETE FROM sessions WHERE tenant_id = \(t)") } }
        let unknown = BrokerError.storedValueUnknown(column: "sessions.state", value: "suspended")
        #expect(throws: unknown) { try store.session(tenant: t, id: s.id) }
        #expect(throws: unknown) { try store.sessions(tenant: t, matching: SessionQuery(limit: 10)) }
        #expect(throws: unknown) { try store.withRefreshLock(tenant: t, id: s.id, timeout: 1) { _ in (nil as Session?, ()) } }
    }

    @Test("a webhook event of a type this release does not know is left for a newer replica: never claimed, its attempts unspent; the delivery log names it")
    func unknownWebhookEventType() throws {
        let pool = try TestDatabase.migrated()
        let (t, _) = try TestDatabase.tenants(pool)
        let store = PostgresWebhookStore(pool: pool, sealer: TestDatabase.sealer)
        let endpoint = "whk_" + UUID().uuidString.prefix(8).lowercased()
        try store.createEndpoint(WebhookEndpoint(tenant: t, id: endpoint, url: "https://hooks.example/in", events: [.revoked],
                                                 createdAt: Date(), previousValidUntil: nil), secret: "whsec")
        let q = try #require(WebhookOutbox.enqueue(tenant: t, [WebhookEvent(type: .revoked, orderingKey: "ses_1", data: [:])],
                                                   now: Date().addingTimeInterval(-60)))
        try pool.withConnection { c in
            try c.execute(q)
            try c.execute("UPDATE webhook_events SET type = 'session.paused' WHERE tenant_id = \(t)")
        }
        defer { _ = try? pool.withConnection { c in try c.execute("DELETE FROM webhook_deliveries WHERE tenant_id = \(t)") } }
        let claimed = try store.claimDue(now: Date(), lease: 60, limit: 1_000)
        #expect(!claimed.contains { $0.tenant == t })
        let attempts = try pool.withConnection { c in
            try c.execute("SELECT attempts FROM webhook_deliveries WHERE tenant_id = \(t)").first { try $0["attempts"] as Int }
        }
        #expect(attempts == 0)
        #expect(throws: BrokerError.storedValueUnknown(column: "webhook_events.type", value: "session.paused")) {
            try store.deliveries(tenant: t, endpoint: endpoint, limit: 10)
        }
    }

    @Test("a decoder asking for a column the statement does not select fails, naming the column")
    func columnNotSelected() throws {
        let c = try PGConnection(url: try TestDatabase.url())
        let rows = try c.execute("SELECT 1 AS version, NULL::text AS reason")
        let row = rows.row(0)
        #expect(try row["version"] as Int == 1)
        let missing = #expect(throws: PGError.self) { try row["state"] as String }
        #expect(missing?.message == "the statement selects no column named state")
        let null = #expect(throws: PGError.self) { try row["reason"] as String }
        #expect(null?.message == "column reason of the result is NULL")
        #expect(try row["reason"] as String? == nil)
    }

    @Test("the session decoder reads every column by the name the session SELECT list gives it")
    func sessionColumnsAreNamed() throws {
        let (pool, store, s) = try Self.storedSession()
        let t = s.tenant
        // The same columns in reverse order decode to the same session: names, not positions.
        var items: [String] = [], depth = 0, item = ""
        for ch in PostgresSessionStore.columns {
            if ch == "(" { depth += 1 } else if ch == ")" { depth -= 1 }
            if ch == ",", depth == 0 { items.append(item); item = "" } else { item.append(ch) }
        }
        let reversed = (items + [item]).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.reversed().joined(separator: ", ")
        let read = try pool.withConnection { c in
            try c.execute("SELECT \(raw: reversed) FROM sessions WHERE tenant_id = \(t) AND id = \(s.id)").first { try store.decode($0, tenant: t) }
        }
        let stored = try store.session(tenant: t, id: s.id)
        #expect(read != nil && read == stored)
    }
}
