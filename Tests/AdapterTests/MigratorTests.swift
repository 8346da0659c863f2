import BrokerPostgres
import Foundation
import Testing

/// Migrations run outside a transaction, against a database of their own: interrupted midway
/// and run again, and taking turns through the lease.
@Suite("Migrations outside a transaction", .serialized)
struct MigratorTests {
    /// A fresh database migrated with the files of sql/, dropped after `body`.
    func withDatabase(_ body: (String, Migrator) throws -> Void) throws {
        let url = try TestDatabase.url()
        let db = "migr_" + UUID().uuidString.prefix(8).lowercased()
        let admin = try PGConnection(url: url)
        try admin.execute("CREATE DATABASE \(raw: db)")
        defer { _ = try? admin.execute("DROP DATABASE \(raw: db) WITH (FORCE)") }
        try body(PostgresStoreTests.replacingDatabase(url, with: db), try Migrator(directory: TestDatabase.sqlDirectory))
    }

    /// The indexes and constraints of the tables the migrations make, as PostgreSQL defines them.
    static func shape(_ c: PGConnection) throws -> [String] {
        try c.execute("""
            SELECT indexrelid::regclass::text || ' ' || pg_get_indexdef(indexrelid) || ' valid=' || indisvalid AS d FROM pg_index
            WHERE indrelid::regclass::text NOT LIKE 'pg_%' AND indrelid::regclass::text NOT LIKE 'information_schema%'
            UNION ALL
            SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) || ' validated=' || convalidated FROM pg_constraint
            WHERE connamespace = 'public'::regnamespace
            UNION ALL
            SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
            FROM information_schema.columns WHERE table_schema = 'public'
            ORDER BY 1
            """).map { try $0["d"] as String }
    }

    @Test("a migration interrupted midway is run again from its start: an index left INVALID by a failed concurrent build is built again, the schema ends the same")
    func interruptedMigrationRunsAgain() throws {
        try withDatabase { url, migrator in
            let c = try PGConnection(url: url)
            _ = try migrator.migrate(c)
            let expected = try Self.shape(c)
            // Migration 020 interrupted after its concurrent build failed: the index is there,
            // INVALID (a unique build over duplicate rows fails that way), and 020 unrecorded.
            try c.executeScript("""
                DROP INDEX sessions_by_end_user;
                INSERT INTO tenants (id, name) VALUES ('t', 't');
                INSERT INTO clients (tenant_id, id, issuer, client_id, auth_method, redirect_uri, scopes)
                    VALUES ('t', 'app', 'https://idp', 'app', 'none', 'https://b/cb', '{openid}');
                INSERT INTO sessions (tenant_id, id, client_id, subject, issuer, scopes, state, version, granted_at, created_at)
                    SELECT 't', 's' || i, 'app', 'u', 'https://idp', '{openid}', 'revoked', 1, now(), now() FROM generate_series(1, 3) AS i;
                """)
            #expect(throws: PGError.self) { try c.executeScript("CREATE UNIQUE INDEX CONCURRENTLY sessions_by_end_user ON sessions (client_id)") }
            #expect(try c.execute("SELECT NOT indisvalid AS invalid FROM pg_index WHERE indexrelid = 'sessions_by_end_user'::regclass").first { try $0["invalid"] as Bool } == true)
            // 010's backfill and the other files outside a transaction, unrecorded too: all run again.
            try c.execute("UPDATE sessions SET ended_at = NULL")
            let again = try c.execute("SELECT version FROM schema_migrations WHERE version IN (3, 7, 10, 13, 14, 20) ORDER BY version").map { try $0["version"] as Int }
            #expect(again == [3, 7, 10, 13, 14, 20])
            try c.execute("DELETE FROM schema_migrations WHERE version IN (3, 7, 10, 13, 14, 20)")
            #expect(try migrator.migrate(c) == [3, 7, 10, 13, 14, 20])
            #expect(try Self.shape(c) == expected)
            // 010's backfill filled what it had not.
            #expect(try c.execute("SELECT count(*) AS n FROM sessions WHERE ended_at IS NULL").first { try $0["n"] as Int } == 0)
        }
    }

    @Test("a migrator waits for another's lease, and takes one its holder stopped renewing once it has expired")
    func leaseTakesTurns() throws {
        try withDatabase { url, migrator in
            let c = try PGConnection(url: url)
            _ = try migrator.migrate(c, through: 2)
            // A migrator that died holding the lease a moment ago: it expires in 1.5 s.
            try c.execute("INSERT INTO schema_migration_lease (holder, expires_at) VALUES ('gone:1', now() + interval '1.5 seconds')")
            let started = Date()
            #expect(try migrator.migrate(c, through: 3) == [3])
            let waited = Date().timeIntervalSince(started)
            #expect(waited >= 1.3 && waited < 10, "waited \(waited) s")
            // Given back at the end: the next migrator does not wait.
            #expect(try c.execute("SELECT count(*) AS n FROM schema_migration_lease").first { try $0["n"] as Int } == 0)
            let next = Date()
            _ = try migrator.migrate(c, connect: { () throws(PGError) in try PGConnection(url: url) })
            #expect(Date().timeIntervalSince(next) < 30)
            #expect(try migrator.pending(c).isEmpty)
        }
    }
}
