import BrokerPostgres
import Foundation
import Testing

/// The expand/contract rule (CONTRIBUTING.md) over every file of sql/, and the rule's own
/// reading of statements that break it. No database: the files are read as text.
@Suite("Migrations: expand, then contract")
struct MigrationRulesTests {
    static func files() throws -> [ExpandContractRules.File] {
        try Migrator(directory: TestDatabase.sqlDirectory).migrations.map { .init(version: $0.version, name: $0.name, sql: $0.sql) }
    }

    /// The shipped migrations, then one more file holding `sql`.
    static func violations(adding sql: String) throws -> [ExpandContractRules.Violation] {
        let shipped = try files()
        let next = shipped.map(\.version).max()! + 1
        return ExpandContractRules.check(shipped + [.init(version: next, name: "\(next)_new.sql", sql: sql)])
            .filter { $0.file == "\(next)_new.sql" }
    }

    @Test("every migration in sql/ keeps the previous release working and never blocks writers of a large table")
    func shippedMigrationsFollowTheRule() throws {
        let v = ExpandContractRules.check(try Self.files())
        #expect(v.isEmpty, "\(v.map(\.description).joined(separator: "\n"))")
    }

    @Test("a statement that would break the previous release is refused unless it names the expand it contracts",
          arguments: ["ALTER TABLE sessions DROP COLUMN email", "ALTER TABLE sessions RENAME COLUMN sid TO idp_sid",
                      "ALTER TABLE clients ALTER COLUMN issuer TYPE varchar(200)", "ALTER TABLE clients ALTER COLUMN provider SET NOT NULL",
                      "ALTER TABLE clients ADD COLUMN tier text NOT NULL", "DROP TABLE seen_token_ids", "DROP INDEX sessions_by_subject"])
    func contractSteps(statement: String) throws {
        #expect(try Self.violations(adding: statement + ";").contains { $0.rule.hasPrefix("contract step") })
        #expect(try !Self.violations(adding: "-- tokenbroker:contract 21\n\(statement);").contains { $0.rule.hasPrefix("contract step") })
        // A contract must name an earlier migration.
        #expect(try Self.violations(adding: "-- tokenbroker:contract 9999\n\(statement);").contains { $0.rule.hasPrefix("contract step") })
    }

    @Test("a statement that would block writers of sessions for a scan is refused",
          arguments: ["CREATE INDEX sessions_by_sid ON sessions (tenant_id, sid)",
                      "UPDATE sessions SET metadata = '{}' WHERE metadata IS NULL",
                      "DELETE FROM audit_events WHERE at < now() - interval '1 year'",
                      "ALTER TABLE sessions ADD CONSTRAINT sessions_sid_length CHECK (octet_length(sid) < 256)",
                      "ALTER TABLE sessions ADD COLUMN region text CHECK (region <> '')",
                      "ALTER TABLE sessions ADD COLUMN nonce uuid DEFAULT gen_random_uuid()",
                      "ALTER TABLE sessions ADD UNIQUE (tenant_id, sid)",
                      "VACUUM FULL sessions", "LOCK TABLE sessions IN EXCLUSIVE MODE"])
    func lockingStatements(statement: String) throws {
        let v = try Self.violations(adding: statement + ";")
        #expect(v.contains { $0.rule.hasPrefix("blocks writers") }, "\(v)")
    }

    @Test("the same changes written to keep writers going pass: concurrently, in batches, NOT VALID then VALIDATE")
    func nonBlockingForms() throws {
        let v = try Self.violations(adding: """
            -- tokenbroker:no-transaction
            ALTER TABLE sessions ADD COLUMN IF NOT EXISTS region text;
            ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_region_check,
                ADD CONSTRAINT sessions_region_check CHECK (region <> '') NOT VALID;
            ALTER TABLE sessions VALIDATE CONSTRAINT sessions_region_check;
            -- tokenbroker:batch
            WITH batch AS (SELECT tenant_id, id FROM sessions WHERE (tenant_id, id) > (coalesce(($1::text[])[1], ''), coalesce(($1::text[])[2], ''))
                           ORDER BY tenant_id, id LIMIT 5000),
            filled AS (UPDATE sessions s SET region = 'eu' FROM batch WHERE s.tenant_id = batch.tenant_id AND s.id = batch.id AND s.region IS NULL)
            SELECT ARRAY[tenant_id, id]::text AS cursor FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1;
            CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_by_region ON sessions (tenant_id, region);
            """)
        #expect(v.isEmpty, "\(v)")
    }

    @Test("CONCURRENTLY or a batch in a transaction, and statements that cannot run twice outside one, are refused")
    func kinds() throws {
        #expect(try Self.violations(adding: "CREATE INDEX CONCURRENTLY IF NOT EXISTS s_x ON sessions (sid);").contains { $0.rule.hasPrefix("CONCURRENTLY or a batch") })
        let twice = try Self.violations(adding: """
            -- tokenbroker:no-transaction
            CREATE TABLE things (id text PRIMARY KEY);
            ALTER TABLE sessions ADD COLUMN region text;
            ALTER TABLE clients ADD CONSTRAINT clients_region CHECK (true) NOT VALID;
            INSERT INTO things VALUES ('a');
            """)
        #expect(twice.filter { $0.rule.hasPrefix("not idempotent") }.count == 4, "\(twice)")
    }

    @Test("a migration in a transaction that alters sessions does no scanning work while it holds the lock")
    func noWorkUnderTheAlterLock() throws {
        let v = try Self.violations(adding: """
            ALTER TABLE sessions ADD COLUMN IF NOT EXISTS region text;
            CREATE INDEX IF NOT EXISTS logins_by_created ON logins (created_at);
            """)
        #expect(v.contains { $0.rule.hasPrefix("scans in the transaction") }, "\(v)")
    }

    @Test("a migration file is cut at semicolons outside strings, quoted names, dollar quotes and comments; directives are read")
    func scriptSplitting() {
        let s = MigrationScript("""
            -- tokenbroker:no-transaction
            -- a comment; with a semicolon
            SELECT 'a;b', "c;d", E'\\';';
            /* block; /* nested; */ still */ DO $x$ BEGIN PERFORM ';'; END $x$;
            -- tokenbroker:batch
            SELECT $1::text AS cursor;
            -- trailing comment only
            """)
        #expect(s.noTransaction)
        #expect(s.statements.count == 3)
        #expect(s.statements[0].text == "SELECT 'a;b', \"c;d\", E'\\';'")
        #expect(s.statements[1].text.hasSuffix("END $x$"))
        #expect(s.statements[2].isBatch && !s.statements[0].isBatch)
        #expect(!MigrationScript("SELECT 1;\n-- tokenbroker:no-transaction\n").noTransaction)
    }
}
